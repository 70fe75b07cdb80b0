import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

/// The API's JSON form: keys sorted, slashes unescaped (the form the read models store, so typed
/// replies and stored rows read alike). Every typed reply is encoded here, and the CLI and the tests
/// decode the same ``Codable`` types from `LedgerHTTP/API`.
public enum WireJSON {
    /// Encodes `value` in the API's form.
    public static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes a reply of the API (for the CLI and the tests).
    public static func decode<T: Decodable>(_ type: T.Type, from text: some StringProtocol) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}

/// A JSON reply from text that already is the API's JSON (a stored read-model row, a spliced page).
func jsonResponse(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
    var headers = HTTPFields()
    headers[.contentType] = "application/json; charset=utf-8"
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
}

/// A JSON reply from a typed wire value.
func jsonResponse(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
    jsonResponse(try WireJSON.encode(value), status: status)
}
