import Foundation

/// A JSON value decoded in full: the members of `POST /payment`'s body, whose `source` may be an Apple Pay
/// token object that is kept as JSON text.
indirect enum JSONValue: Decodable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
    /// A number that no Swift number type holds (such as `1e999`).
    case unrepresentable

    /// Any member name.
    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            var members: [String: JSONValue] = [:]
            for key in object.allKeys { members[key.stringValue] = try object.decode(JSONValue.self, forKey: key) }
            self = .object(members)
        } else if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
        } else {
            // `true` is never a number, `5900` never a string.
            let value = try decoder.singleValueContainer()
            if value.decodeNil() {
                self = .null
            } else if let flag = try? value.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? value.decode(Int64.self) {
                self = .integer(number)
            } else if let number = try? value.decode(UInt64.self) {
                self = .unsigned(number)
            } else if let number = try? value.decode(Double.self) {
                self = .double(number)
            } else if let text = try? value.decode(String.self) {
                self = .string(text)
            } else {
                self = .unrepresentable
            }
        }
    }

    /// Whether an unrepresentable number is in it, at any depth.
    var holdsUnrepresentable: Bool {
        switch self {
        case .unrepresentable: true
        case .array(let elements): elements.contains { $0.holdsUnrepresentable }
        case .object(let members): members.values.contains { $0.holdsUnrepresentable }
        default: false
        }
    }

    /// An object or array as JSON text in the form `POST /payment` has always kept an Apple Pay token
    /// object in, and hashed for the idempotency check (``PaymentRequest/Source/applePayToken(json:)``):
    /// JSONSerialization's writing of it, keys sorted (and slashes escaped). The same token sent again
    /// with its members in another order or other whitespace is the same request. Nil for a scalar.
    ///
    /// Written from the decoded value, not from a second parse of the bytes, it is the text the earlier
    /// parse-and-rewrite gave for any token whose numbers (tokens have none) are 64-bit integers or
    /// doubles of at most 17 digits other than `-0.0`, and whose members are not repeated (the first of
    /// a repeated member now counts, as everywhere else in the body).
    var canonicalText: String? {
        guard let object = foundationObject, object is [String: Any] || object is [Any],
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The value as JSONSerialization's objects; nil when an unrepresentable number is in it.
    var foundationObject: Any? {
        switch self {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .integer(let number): return number
        case .unsigned(let number): return number
        case .double(let number): return number
        case .string(let text): return text
        case .unrepresentable: return nil
        case .array(let elements):
            var objects: [Any] = []
            for element in elements {
                guard let object = element.foundationObject else { return nil }
                objects.append(object)
            }
            return objects
        case .object(let members):
            var objects: [String: Any] = [:]
            for (key, value) in members {
                guard let object = value.foundationObject else { return nil }
                objects[key] = object
            }
            return objects
        }
    }
}
