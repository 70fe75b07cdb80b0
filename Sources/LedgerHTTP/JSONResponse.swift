import Hummingbird
import LedgerAPI

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
