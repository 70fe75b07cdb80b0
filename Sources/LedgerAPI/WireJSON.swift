import Foundation
import LedgerCore
import LedgerServices

/// The API's JSON form: LedgerCore's one JSON form (``LedgerJSON``: keys sorted, slashes unescaped, the
/// form the read models store, so typed replies and stored rows read alike). Every typed reply is encoded here, and the CLI and the tests
/// decode the same ``Codable`` types from `LedgerAPI`.
public enum WireJSON {
    /// Encodes `value` in the API's form.
    public static func encode(_ value: some Encodable) throws -> String {
        try LedgerJSON.string(value)
    }

    /// Decodes a reply of the API (for the CLI and the tests).
    public static func decode<T: Decodable>(_ type: T.Type, from text: some StringProtocol) throws -> T {
        try decode(type, from: Data(text.utf8))
    }

    /// Decodes a reply of the API from its bytes.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try LedgerJSON.decode(type, from: data)
    }
}

/// JSON text spliced into a reply as it is, and the objects around it.
///
/// Stored read-model rows and recorded events are served as their stored text (jsonb as PostgreSQL
/// prints it, events as ``EventJSON`` renders them): those bytes are what was hashed and stored, and
/// decoding and re-encoding them would cost time per row and could change them. This is the one place
/// where such text meets the JSON around it, instead of hand-built `"{\"…\":" + json + "}"` strings.
///
/// An object's members are written in the order given, not sorted: several replies put their members
/// in a fixed order (`{"stream", "events"}`, `{"order", "as_of", "links"}`) that their clients have
/// always read. Typed replies do not come through here; they are ``Codable`` types in `API/`, encoded
/// by ``WireJSON``.
public struct RawJSON: Sendable, Hashable, CustomStringConvertible {
    /// The JSON text.
    public let text: String

    /// Text that already is JSON in the API's form (a stored row, rendered events); it is not checked.
    public init(stored text: String) {
        self.text = text
    }

    /// A typed value encoded by ``WireJSON`` (keys sorted), to be placed among spliced members.
    public init(encoding value: some Encodable) throws {
        text = try WireJSON.encode(value)
    }

    public var description: String { text }

    /// `null`.
    public static let null = RawJSON(stored: "null")

    /// A JSON string literal (escaped as the event renderer escapes, ``EventJSON/quote(_:)``).
    public static func string(_ value: String) -> RawJSON { RawJSON(stored: EventJSON.quote(value)) }

    /// A JSON number, or `null` for nil.
    public static func integer(_ value: Int64?) -> RawJSON { value.map { RawJSON(stored: String($0)) } ?? .null }

    /// A JSON string, or `null` for nil.
    public static func optionalString(_ value: String?) -> RawJSON { value.map(string) ?? .null }

    /// A JSON array of the elements, in order.
    public static func array(_ elements: [RawJSON]) -> RawJSON {
        RawJSON(stored: "[" + elements.map(\.text).joined(separator: ",") + "]")
    }

    /// A JSON object with the members in the order given; nil members are left out.
    public static func object(_ members: KeyValuePairs<String, RawJSON?>) -> RawJSON {
        var text = "{"
        var first = true
        for (key, value) in members {
            guard let value else { continue }
            if !first { text += "," }
            first = false
            text += EventJSON.quote(key) + ":" + value.text
        }
        return RawJSON(stored: text + "}")
    }
}
