import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerHTTPServer
import LedgerServices

// Every HTTP reply's form, in one place: JSON replies (typed values encoded by `WireJSON`, stored text spliced
// by `RawJSON`), the error every endpoint answers with (`APIError`, written by `ErrorMiddleware`), and the services'
// errors and answers mapped to statuses.

// MARK: JSON replies

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

// MARK: Streamed replies

/// A 200 reply written in parts as they are made (a report, an NDJSON run, a console page, an export): `write` hands each
/// part to the client as it comes, and the body ends when it returns. `headers` adds to the content type (a download's
/// `Content-Disposition`).
func streamedResponse(
    contentType: String,
    headers extra: HTTPFields = [:],
    _ write: @escaping @Sendable (_ part: (String) async throws -> Void) async throws -> Void
) -> Response {
    var headers = extra
    headers[.contentType] = contentType
    return Response(
        status: .ok,
        headers: headers,
        body: ResponseBody { writer in
            try await write { part in try await writer.write(ByteBuffer(string: part)) }
            try await writer.finish(nil)
        }
    )
}

/// Text is never a reply by itself: a `String` would otherwise be taken for a value to encode (a JSON
/// string literal). Stored JSON goes through ``RawJSON``.
@available(*, unavailable, message: "wrap stored JSON text in RawJSON(stored:), or pass a typed wire value")
func jsonResponse(_ text: String, status: HTTPResponse.Status = .ok) -> Response { fatalError("unavailable") }

// MARK: Errors

/// The error every endpoint answers with: `{"error": {"code", "message", "field"?}}`.
///
/// `code` is stable and machine-readable; `message` is for people and never carries a database
/// error's text or anything secret; `field` names the offending input when there is one.
public struct APIError: HTTPResponseError, Sendable, Equatable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    public let field: String?
    /// Sent as `Retry-After` (a 429 or 503 the caller should retry).
    public var retryAfterSeconds: Int?

    public init(status: HTTPResponse.Status, code: String, message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    public static func badRequest(_ code: String, _ message: String, field: String? = nil) -> APIError {
        APIError(status: .badRequest, code: code, message: message, field: field)
    }

    public static func notFound(_ message: String = "no such resource") -> APIError {
        APIError(status: .notFound, code: "not_found", message: message)
    }

    public static func conflict(_ code: String, _ message: String) -> APIError {
        APIError(status: .conflict, code: code, message: message)
    }

    public static let internalFailure = APIError(
        status: .internalServerError,
        code: "internal_error",
        message: "the server failed; the request changed nothing it reported"
    )

    public static func unavailable(_ message: String) -> APIError {
        APIError(status: .serviceUnavailable, code: "unavailable", message: message)
    }

    struct Body: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
            let field: String?
        }
        let error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Body(error: .init(code: code, message: message, field: field)))
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfterSeconds { headers[.retryAfter] = "\(retryAfterSeconds)" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// The one throttle of ``ErrorMiddleware``'s "request failed" warnings (503 `database_unavailable` and the like).
let requestFailures = LogThrottle()

/// Turns every error into the JSON error shape: API errors as they are, the router's own
/// errors (unknown route, wrong method) by status, an unavailable database as 503 `database_unavailable`
/// (``ServiceError/interpreting(_:)``), anything else as an opaque 500 that is logged here with its detail.
///
/// Those interpreted failures (a database outage answers every request 503) are logged through one ``LogThrottle``
/// for the process: a line per 10 s with the count left out, not one per request.
public struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as ServiceError {
            if error.kind == .internalFailure {
                context.logger.error("service failure", metadata: ["error": "\(error)"])
            }
            throw APIError(error)
        } catch let error as any HTTPResponseError {
            let code: String
            switch error.status {
            case .notFound: code = "not_found"
            case .methodNotAllowed: code = "method_not_allowed"
            case .badRequest: code = "bad_request"
            case .contentTooLarge: code = "payload_too_large"
            case .unsupportedMediaType: code = "unsupported_media_type"
            default: code = error.status.code >= 500 ? "internal_error" : "request_error"
            }
            let message = error.status == .notFound ? "no such endpoint: \(request.uri.path)" : error.status.reasonPhrase
            throw APIError(status: error.status, code: code, message: message)
        } catch {
            if let meaning = ServiceError.interpreting(error) {
                requestFailures.log(.warning, "request failed", metadata: ["code": "\(meaning.code)"], to: context.logger)
                throw APIError(meaning)
            }
            context.logger.error("unhandled error", metadata: ["error": "\(String(reflecting: error))"])
            throw APIError.internalFailure
        }
    }
}

// MARK: The services' errors and answers

/// The one place where the services' errors become HTTP answers: the kind picks the status, the code,
/// message and field pass through unchanged (`{"error": {"code", "message", "field"?}}`) — except for our
/// own failures, whose detail goes to the log only: the caller gets the opaque ``internalFailure``.
extension APIError {
    public init(_ error: ServiceError) {
        if error.kind == .internalFailure {
            self = .internalFailure
            return
        }
        self.init(status: Self.status(of: error.kind), code: error.code, message: error.message, field: error.field)
    }

    static func status(of kind: ServiceError.Kind) -> HTTPResponse.Status {
        switch kind {
        case .malformedRequest: .badRequest
        case .invalidInput: .unprocessableContent
        case .notFound: .notFound
        case .conflict: .conflict
        case .gone: .gone
        case .dependencyFailed: .badGateway
        case .unavailable: .serviceUnavailable
        default: .internalServerError
        }
    }
}

extension PaymentAnswer.Result {
    /// 200 approved; 402 declined (an answer, not an error); 502 the issuer could not be reached.
    var status: HTTPResponse.Status {
        switch self {
        case .succeeded: .ok
        case .declined: HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required")
        case .acquirerUnreachable: .badGateway
        }
    }
}

extension HoldOperationOutcome.Result {
    /// 200 applied or replayed; 402 for an increment the issuer declined.
    var status: HTTPResponse.Status {
        self == .declined ? HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required") : .ok
    }
}
