import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.Decimal
import struct Foundation.URL

/// ``LedgerJSON``'s decoding without Foundation's `JSONDecoder` where it can answer for certain: the bytes parsed
/// once into a small tree, then decoded without coding paths or error contexts (Foundation's decoder was 8 % of the
/// daemon's CPU per payment: the request body and the acquirer's replies, issue 28).
///
/// It must decode exactly as Foundation does. It answers itself only what is unambiguous — objects, arrays, `null`,
/// booleans, strings (every escape, surrogate pairs), integers written as plain digits within the asked type's range —
/// and marks anything else **uncertain**: a number with a fraction or exponent, or out of range, asked for as an
/// integer; a number asked for as `Float`, or as a `Double` (or a `Date`, Foundation's default: the `Double` of its
/// `timeIntervalSinceReferenceDate`) that is not finite; `Data`, `URL`, `Decimal`; a member name twice; `superDecoder`. An uncertain
/// decode is done again by Foundation, whole, whatever this one answered — also when the value's own `init(from:)`
/// caught the error (`try?`), which is why it is a flag and not only an error. A type mismatch that is certain (a string
/// asked for as an integer) is an error here as it is there. Bytes that are not JSON make it uncertain too, so every
/// syntax error is Foundation's. `DirectJSONDecoderTests` compares both on every catalogue sample and request bodies.
package enum DirectJSONDecoder {
    /// The decoded value, or nil when Foundation must decode `bytes` (uncertain, see above), or the value's own error.
    package static func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T? {
        var parser = Parser(bytes: bytes)
        guard let root = parser.document() else { return nil }
        let state = State()
        do {
            let value = try T(from: NodeDecoder(node: root, state: state))
            return state.uncertain ? nil : value
        } catch {
            if state.uncertain { return nil }
            throw error
        }
    }

    /// A parsed JSON value.
    indirect enum Node {
        case null
        case bool(Bool)
        /// A number written as plain digits (an optional minus) that fits Int64.
        case integer(Int64)
        /// Any other number (fraction, exponent, beyond Int64, `-0`), with its nearest `Double` (correctly rounded, as
        /// Foundation reads it): only Foundation decodes it as an integer.
        case otherNumber(Double)
        case string(String)
        case array([Node])
        case object([(key: String, value: Node)])
    }

    /// Whether the decode met something only Foundation answers for certain.
    final class State {
        var uncertain = false
    }

    struct Uncertain: Error {}

    /// A mismatch this decoder is sure of (the value is of another JSON type).
    struct Mismatch: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: Parsing (RFC 8259; anything else is nil: Foundation reports it)

    struct Parser {
        let bytes: UnsafeRawBufferPointer
        var index = 0
        var depth = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func document() -> Node? {
            skipSpace()
            guard let node = value() else { return nil }
            skipSpace()
            return index == bytes.count ? node : nil
        }

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            index += count
            return true
        }

        mutating func value() -> Node? {
            guard index < bytes.count, depth < 512 else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object()
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return string().map(Node.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return number()
            }
        }

        mutating func object() -> Node? {
            index += 1
            depth += 1
            defer { depth -= 1 }
            var members: [(key: String, value: Node)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipSpace()
                guard let member = value() else { return nil }
                members.append((key, member))
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                return .object(members)
            }
        }

        mutating func array() -> Node? {
            index += 1
            depth += 1
            defer { depth -= 1 }
            var elements: [Node] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                guard let element = value() else { return nil }
                elements.append(element)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { return nil }
                index += 1
                return .array(elements)
            }
        }

        /// A string literal at `index` (its opening quote), unescaped; nil for anything RFC 8259 refuses (a raw
        /// control character, a bad escape, a lone surrogate, bytes that are not UTF-8).
        mutating func string() -> String? {
            index += 1
            let start = index
            // The common case: no escape — the bytes as they are, checked as UTF-8.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            var out: [UInt8] = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(validating: out, as: UTF8.self)
                case ..<0x20:
                    return nil
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return nil }
                        var scalar: Unicode.Scalar?
                        if (0xD800...0xDBFF).contains(unit) {
                            guard literal("\\u"), let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                            scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
                        } else {
                            scalar = Unicode.Scalar(UInt32(unit))  // nil for a lone low surrogate
                        }
                        guard let scalar else { return nil }
                        out.append(contentsOf: String(scalar).utf8)
                    default:
                        return nil
                    }
                default:
                    out.append(byte)
                    index += 1
                }
            }
            return nil
        }

        mutating func hex4() -> UInt16? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
                index += 1
            }
            return value
        }

        /// A number that is not a plain Int64 (its text already checked against the grammar), with its nearest `Double`.
        func other(_ range: Range<Int>) -> Node {
            .otherNumber(Double(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)) ?? .nan)
        }

        /// A number (RFC 8259's grammar); plain digits that fit Int64 are kept as the integer.
        mutating func number() -> Node? {
            let start = index
            var negative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
            let digitsStart = index
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            let digitsEnd = index
            var plain = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                plain = false
                index += 1
                let fraction = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                guard index > fraction else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                plain = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                let exponent = index
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
                guard index > exponent else { return nil }
            }
            let negativeZero = negative && digitsEnd - digitsStart == 1 && bytes[digitsStart] == UInt8(ascii: "0")
            guard plain, digitsEnd - digitsStart <= 19, !negativeZero else { return index > start ? other(start..<index) : nil }
            var value: Int64 = 0
            for position in digitsStart..<digitsEnd {
                let digit = Int64(bytes[position] - UInt8(ascii: "0"))
                let (times, overflow) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
                guard !overflow, !overflow2 else { return other(start..<index) }
                value = sum
            }
            return .integer(value)
        }
    }

    // MARK: Decoding

    struct NodeDecoder: Decoder {
        let node: Node
        let state: State
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let members) = node else { throw Mismatch(description: "not an object") }
            // Which of two equal names Foundation takes is its business. Small objects are searched; large ones indexed.
            var index: [String: Int]?
            if members.count <= 16 {
                for i in members.indices {
                    for j in members.indices where j > i && members[j].key == members[i].key {
                        state.uncertain = true
                        throw Uncertain()
                    }
                }
            } else {
                var built = [String: Int](minimumCapacity: members.count)
                for (i, member) in members.enumerated() where built.updateValue(i, forKey: member.key) != nil {
                    state.uncertain = true
                    throw Uncertain()
                }
                index = built
            }
            return KeyedDecodingContainer(KeyedContainer<Key>(members: members, index: index, state: state))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let elements) = node else { throw Mismatch(description: "not an array") }
            return UnkeyedContainer(elements: elements, state: state)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            SingleContainer(node: node, state: state)
        }
    }

    /// Decodes `node` as `T`: the scalars here, anything else through its `init(from:)`.
    static func decode<T: Decodable>(_ type: T.Type, _ node: Node, state: State) throws -> T {
        if T.self == String.self { return unsafeBitCast(try string(node), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try integer(Int.self, node, state: state), to: T.self) }
        if T.self == Int64.self { return unsafeBitCast(try integer(Int64.self, node, state: state), to: T.self) }
        if T.self == Int32.self { return unsafeBitCast(try integer(Int32.self, node, state: state), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try bool(node), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try double(node, state: state), to: T.self) }
        if T.self == Date.self { return unsafeBitCast(Date(timeIntervalSinceReferenceDate: try double(node, state: state)), to: T.self) }
        if T.self == Float.self { throw floating(node, state: state) }
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self {
            state.uncertain = true
            throw Uncertain()
        }
        return try T(from: NodeDecoder(node: node, state: state))
    }

    /// A `Double`: a number's nearest one (Foundation's reading: an integer converted, any other number's text correctly
    /// rounded), except a number beyond `Double`'s range, which Foundation refuses in its own words.
    static func double(_ node: Node, state: State) throws -> Double {
        switch node {
        case .integer(let value): return Double(value)
        case .otherNumber(let value) where value.isFinite: return value
        case .otherNumber:
            state.uncertain = true
            throw Uncertain()
        default:
            throw Mismatch(description: "not a number")
        }
    }

    /// `Float`: Foundation's number conversion decides a number; anything else is not one (a certain
    /// mismatch, as in Foundation — the payment body's `source` is tried as a number before it is read as text).
    static func floating(_ node: Node, state: State) -> any Error {
        switch node {
        case .integer, .otherNumber:
            state.uncertain = true
            return Uncertain()
        default:
            return Mismatch(description: "not a number")
        }
    }

    static func string(_ node: Node) throws -> String {
        guard case .string(let text) = node else { throw Mismatch(description: "not a string") }
        return text
    }

    static func bool(_ node: Node) throws -> Bool {
        guard case .bool(let flag) = node else { throw Mismatch(description: "not a boolean") }
        return flag
    }

    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ node: Node, state: State) throws -> I {
        switch node {
        case .integer(let value):
            if let exact = I(exactly: value) { return exact }
            state.uncertain = true  // out of the type's range: Foundation's error
            throw Uncertain()
        case .otherNumber:
            state.uncertain = true  // `1.0`, `1e2`, beyond Int64: Foundation's rules
            throw Uncertain()
        default:
            throw Mismatch(description: "not a number")
        }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [(key: String, value: Node)]
        /// Positions by name, for a large object.
        let index: [String: Int]?
        let state: State
        var codingPath: [any CodingKey] { [] }

        var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

        func contains(_ key: Key) -> Bool { node(key) != nil }

        func node(_ key: Key) -> Node? {
            let name = key.stringValue
            if let index { return index[name].map { members[$0].value } }
            for member in members where member.key == name { return member.value }
            return nil
        }

        func required(_ key: Key) throws -> Node {
            guard let node = node(key) else { throw Mismatch(description: "no member \(key.stringValue)") }
            return node
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = try required(key) { return true }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try DirectJSONDecoder.decode(type, try required(key), state: state)
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try DirectJSONDecoder.bool(try required(key)) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try DirectJSONDecoder.string(try required(key)) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try DirectJSONDecoder.double(try required(key), state: state) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw DirectJSONDecoder.floating(try required(key), state: state) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

        func integer<I: FixedWidthInteger>(_ type: I.Type, _ key: Key) throws -> I {
            try DirectJSONDecoder.integer(type, try required(key), state: state)
        }

        func uncertain() -> Uncertain {
            state.uncertain = true
            return Uncertain()
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try NodeDecoder(node: try required(key), state: state).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try NodeDecoder(node: try required(key), state: state).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { throw uncertain() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw uncertain() }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [Node]
        let state: State
        var currentIndex = 0
        var codingPath: [any CodingKey] { [] }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        mutating func next() throws -> Node {
            guard !isAtEnd else { throw Mismatch(description: "past the array's end") }
            return elements[currentIndex]
        }

        mutating func decodeNil() throws -> Bool {
            guard case .null = try next() else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let value = try DirectJSONDecoder.decode(type, try next(), state: state)
            currentIndex += 1
            return value
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try scalar { try DirectJSONDecoder.bool($0) } }
        mutating func decode(_ type: String.Type) throws -> String { try scalar { try DirectJSONDecoder.string($0) } }
        mutating func decode(_ type: Double.Type) throws -> Double { try DirectJSONDecoder.double(try next(), state: state) }
        mutating func decode(_ type: Float.Type) throws -> Float { throw DirectJSONDecoder.floating(try next(), state: state) }
        mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

        mutating func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            let state = state
            return try scalar { try DirectJSONDecoder.integer(type, $0, state: state) }
        }

        mutating func scalar<V>(_ read: (Node) throws -> V) throws -> V {
            let value = try read(try next())
            currentIndex += 1
            return value
        }

        func uncertain() -> Uncertain {
            state.uncertain = true
            return Uncertain()
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let container = try NodeDecoder(node: try next(), state: state).container(keyedBy: type)
            currentIndex += 1
            return container
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let container = try NodeDecoder(node: try next(), state: state).unkeyedContainer()
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Decoder { throw uncertain() }
    }

    struct SingleContainer: SingleValueDecodingContainer {
        let node: Node
        let state: State
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool {
            if case .null = node { return true }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try DirectJSONDecoder.decode(type, node, state: state) }
        func decode(_ type: Bool.Type) throws -> Bool { try DirectJSONDecoder.bool(node) }
        func decode(_ type: String.Type) throws -> String { try DirectJSONDecoder.string(node) }
        func decode(_ type: Double.Type) throws -> Double { try DirectJSONDecoder.double(node, state: state) }
        func decode(_ type: Float.Type) throws -> Float { throw DirectJSONDecoder.floating(node, state: state) }
        func decode(_ type: Int.Type) throws -> Int { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: Int8.Type) throws -> Int8 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: Int16.Type) throws -> Int16 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: Int32.Type) throws -> Int32 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: Int64.Type) throws -> Int64 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: UInt.Type) throws -> UInt { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try DirectJSONDecoder.integer(type, node, state: state) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try DirectJSONDecoder.integer(type, node, state: state) }
    }
}
