import Foundation
import Hummingbird
import LedgerCore

/// A route's JSON request body as a `Decodable` type: the one way a route reads its body (`POST /payment` and every
/// back-office body).
///
/// ``StrictJSON/decode(_:of:limit:)`` reads the bytes with ``StrictJSON/body(of:limit:)`` (media type, size, strict
/// JSON), then decodes them as the type with these rules, the same for every route:
/// - an empty body (no bytes) is `{}`; white space alone, or a body that is not a JSON object, is 400 `invalid_json`;
/// - a member the type does not name in ``Member`` is 400 `unknown_field` naming it (the first in name order): a
///   misspelled optional member must not be ignored;
/// - each member is read in the type's `init(from:)` with the getters below, so that a missing member is 422
///   `missing_field` and one of the wrong type or out of range 422 `invalid_field` (or the route's own code), each
///   naming the member, before anything is decided or appended.
///
/// `POST /payment` keeps its own media type, size and empty-body answers (``PaymentRequest/parse(body:contentType:)``),
/// then decodes the same way; its `source` may be a whole Apple Pay token, read with ``KeyedDecodingContainer/value(_:)``.
public protocol JSONRequestBody: Decodable {
    /// The members the body takes.
    associatedtype Member: CodingKey
    /// What the body is, for the unknown member's message: "a refund" does not take `x`.
    static var subject: String { get }
}

extension StrictJSON {
    /// Reads `request`'s body strictly and decodes it as `T` (see ``JSONRequestBody``).
    public static func decode<T: JSONRequestBody>(_ type: T.Type, of request: Request, limit: Int = 16 * 1_024) async throws -> T {
        try decode(type, from: try await body(of: request, limit: limit))
    }

    /// Decodes body bytes as `T` (see ``JSONRequestBody``); no bytes is `{}`.
    public static func decode<T: JSONRequestBody>(_ type: T.Type, from body: ByteBuffer) throws(APIError) -> T {
        let blank = body.readableBytes == 0
        do {
            if blank { return try LedgerJSON.decode(Members<T>.self, from: "{}").body }
            return try body.withUnsafeReadableBytes { try LedgerJSON.decode(Members<T>.self, bytes: $0) }.body
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.badRequest("invalid_json", "the body must be a JSON object")
        }
    }

    /// `T` decoded once its members are known to be `T`'s.
    struct Members<T: JSONRequestBody>: Decodable {
        let body: T

        init(from decoder: any Decoder) throws {
            let names = try decoder.container(keyedBy: JSONValue.Key.self).allKeys.map(\.stringValue)
            // A member is known when its name makes a coding key (no set of names built per request).
            try RequestFields.refuseUnknown(names, known: { T.Member(stringValue: $0) != nil }, subject: T.subject)
            body = try T(from: decoder)
        }
    }
}

/// The rules for a request body's members, in one place.
public enum RequestFields {
    /// 400 `unknown_field` for the first of `names` in name order that is not `known`.
    public static func refuseUnknown(_ names: some Sequence<String>, known: (String) -> Bool, subject: String) throws(APIError) {
        if let name = names.filter({ !known($0) }).min() {
            throw APIError.badRequest("unknown_field", "\(subject) does not take \(name)", field: name)
        }
    }

    /// 422 `missing_field`.
    public static func missing(_ field: String) -> APIError {
        APIError(status: .unprocessableContent, code: "missing_field", message: "\(field) is required", field: field)
    }

    /// 422 `invalid_field` with `message`.
    public static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(status: .unprocessableContent, code: "invalid_field", message: message, field: field)
    }

    /// A text member as it is kept: trimmed, not empty, no control character (NUL, which PostgreSQL's text and jsonb
    /// cannot hold, and every other), at most `maximumLength` characters.
    public static func text(_ raw: String, field: String, maximumLength: Int) throws(APIError) -> String {
        // Printable ASCII and spaces (almost every member): the same rules without Unicode tables — only spaces can
        // be trimmed, nothing is a control character, and a byte is a character.
        if let printable = printableASCII(raw) {
            guard !printable.isEmpty else { throw invalid(field, "\(field) must not be empty") }
            guard printable.utf8.count <= maximumLength else {
                throw invalid(field, "\(field) is longer than \(maximumLength) characters")
            }
            return printable
        }
        return try anyText(raw, field: field, maximumLength: maximumLength)
    }

    /// ``text(_:field:maximumLength:)`` for any text, by the Unicode tables.
    static func anyText(_ raw: String, field: String, maximumLength: Int) throws(APIError) -> String {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw invalid(field, "\(field) must not be empty") }
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw invalid(field, "\(field) must not contain control characters")
        }
        guard trimmed.count <= maximumLength else { throw invalid(field, "\(field) is longer than \(maximumLength) characters") }
        return trimmed
    }
}

extension RequestFields {
    /// `raw` without leading and trailing spaces when it is printable ASCII and spaces only (U+0020…U+007E); nil
    /// otherwise.
    static func printableASCII(_ raw: String) -> String? {
        var utf8 = raw
        let kept = utf8.withUTF8 { bytes -> Range<Int>?? in
            guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return .none }
            guard let first = bytes.firstIndex(where: { $0 != 0x20 }), let last = bytes.lastIndex(where: { $0 != 0x20 }) else {
                return .some(nil)
            }
            return .some(first..<(last + 1))
        }
        guard let kept else { return nil }
        guard let kept else { return "" }
        if kept.count == raw.utf8.count { return raw }
        let start = raw.utf8.index(raw.utf8.startIndex, offsetBy: kept.lowerBound)
        let end = raw.utf8.index(start, offsetBy: kept.count)
        return String(decoding: raw.utf8[start..<end], as: UTF8.self)
    }
}

/// The getters a ``JSONRequestBody`` reads its members with: absent and `null` are the same (nil, or `missing_field`
/// when required); a value of another JSON type is `invalid_field` ("x must be a string"). JSONDecoder is strict, so
/// `true` is never an integer, `59.5` and numbers beyond Int64 are not integers, and `"5900"` is a string.
extension KeyedDecodingContainer {
    /// Whether `key` holds a value other than `null`.
    func holds(_ key: Key) -> Bool {
        contains(key) && (try? decodeNil(forKey: key)) == false
    }

    /// A required text member under ``RequestFields/text(_:field:maximumLength:)``.
    func text(_ key: Key, maximumLength: Int = 500) throws(APIError) -> String {
        try RequestFields.text(try anyString(key), field: key.stringValue, maximumLength: maximumLength)
    }

    /// An optional text member (see ``text(_:maximumLength:)``).
    func optionalText(_ key: Key, maximumLength: Int = 500) throws(APIError) -> String? {
        holds(key) ? try text(key, maximumLength: maximumLength) : nil
    }

    /// A required string as sent (not trimmed: URLs, names and secrets are compared as they are), but never with
    /// U+0000: PostgreSQL stores that character neither in `text` nor in `jsonb`, and a webhook URL holding it reached
    /// the database as a 500 (schemathesis, issue 31).
    func string(_ key: Key) throws(APIError) -> String {
        let text = try anyString(key)
        guard !text.unicodeScalars.contains("\u{0}") else {
            throw RequestFields.invalid(key.stringValue, "\(key.stringValue) must not contain the character U+0000")
        }
        return text
    }

    /// A string member, whatever it holds (``text(_:maximumLength:)`` refuses every control character itself).
    private func anyString(_ key: Key) throws(APIError) -> String {
        guard holds(key) else { throw RequestFields.missing(key.stringValue) }
        guard let text = try? decode(String.self, forKey: key) else {
            throw RequestFields.invalid(key.stringValue, "\(key.stringValue) must be a string")
        }
        return text
    }

    /// A JSON boolean, or nil.
    func optionalFlag(_ key: Key) throws(APIError) -> Bool? {
        guard holds(key) else { return nil }
        guard let flag = try? decode(Bool.self, forKey: key) else {
            throw RequestFields.invalid(key.stringValue, "\(key.stringValue) must be true or false")
        }
        return flag
    }

    /// A required JSON integer within Int64 (not a boolean, a fraction or a string of digits).
    func integer(_ key: Key) throws(APIError) -> Int64 {
        guard holds(key) else { throw RequestFields.missing(key.stringValue) }
        guard let integer = try? decode(Int64.self, forKey: key) else {
            throw RequestFields.invalid(key.stringValue, "\(key.stringValue) must be an integer that fits in 64 bits")
        }
        return integer
    }

    /// An optional JSON integer (see ``integer(_:)``).
    func optionalInteger(_ key: Key) throws(APIError) -> Int64? {
        holds(key) ? try integer(key) : nil
    }

    /// An optional array of non-empty strings of at most `maximumLength` bytes each (absent or null: empty).
    func strings(_ key: Key, maximumLength: Int = 200) throws(APIError) -> [String] {
        guard holds(key) else { return [] }
        let field = key.stringValue
        guard let elements = try? decode([JSONValue].self, forKey: key) else {
            throw RequestFields.invalid(field, "\(field) must be an array of strings")
        }
        // Event types and stream prefixes are compared with stored text: a control character matches nothing, and
        // U+0000 failed in PostgreSQL as a 500 (`stream_prefixes: ["a\u0000"]`, schemathesis, issue 31).
        return try elements.map { (element) throws(APIError) -> String in
            guard case .string(let text) = element, !text.isEmpty, text.utf8.count <= maximumLength else {
                throw RequestFields.invalid(field, "\(field) must be an array of non-empty strings")
            }
            guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw RequestFields.invalid(field, "\(field) must not contain control characters")
            }
            return text
        }
    }

    /// The member as whatever JSON it is, or nil (for a member of more than one type, such as `"now"` or a position).
    func value(_ key: Key) throws(APIError) -> JSONValue? {
        guard holds(key) else { return nil }
        guard let value = try? decode(JSONValue.self, forKey: key) else {
            throw RequestFields.invalid(key.stringValue, "\(key.stringValue) is not a JSON value this route takes")
        }
        return value
    }
}

/// A body that takes no member (an empty body, or `{}`).
public struct EmptyBody: JSONRequestBody {
    public enum Member: CodingKey, CaseIterable {}
    public static let subject = "this request"

    public init(from decoder: any Decoder) throws {}
}
