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
