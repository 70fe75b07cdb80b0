import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

/// The API's JSON form: LedgerCore's one JSON form (``LedgerJSON``: keys sorted, slashes unescaped, the
/// form the read models store, so typed replies and stored rows read alike). Every typed reply is encoded here, and the CLI and the tests
/// decode the same ``Codable`` types from `LedgerHTTP/API`.
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

/// A JSON reply from spliced text (``RawJSON``: stored rows, rendered events, the members around them).
func jsonResponse(_ json: RawJSON, status: HTTPResponse.Status = .ok) -> Response {
    var headers = HTTPFields()
    headers[.contentType] = "application/json; charset=utf-8"
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json.text)))
}

/// A JSON reply from a typed wire value, encoded by ``WireJSON``.
func jsonResponse(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
    jsonResponse(RawJSON(stored: try WireJSON.encode(value)), status: status)
}

/// Text is never a reply by itself: a `String` would otherwise be taken for a value to encode (a JSON
/// string literal). Stored JSON goes through ``RawJSON``.
@available(*, unavailable, message: "wrap stored JSON text in RawJSON(stored:), or pass a typed wire value")
func jsonResponse(_ text: String, status: HTTPResponse.Status = .ok) -> Response { fatalError("unavailable") }
