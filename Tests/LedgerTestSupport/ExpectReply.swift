import HTTPTypes
import Testing

/// Expects `reply` (a driver's status and text) to have `status`, 200 unless told, and returns its
/// text: for a call made to set a test up, whose reply the test does not read otherwise. A failed
/// setup then fails the test where it happened instead of surfacing later as a puzzling figure.
@discardableResult
public func expectReply(
    _ reply: (HTTPResponse.Status, String),
    _ status: HTTPResponse.Status = .ok,
    sourceLocation: SourceLocation = #_sourceLocation
) -> String {
    #expect(reply.0 == status, "expected \(status.code), got \(reply.0.code): \(reply.1)", sourceLocation: sourceLocation)
    return reply.1
}

/// Whether `text` is the API's error body, `{"error": {"code", "message", "field"?}}`, with a
/// non-empty code and message.
public func isErrorBody(_ text: String) -> Bool {
    guard case .object(let error)? = JSONValue.parse(text)?["error"], case .string(let code)? = error["code"],
        case .string(let message)? = error["message"]
    else { return false }
    return !code.isEmpty && !message.isEmpty
}
