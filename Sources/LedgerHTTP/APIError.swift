import Foundation
import Hummingbird
import LedgerCore
import LedgerHTTPServer
import LedgerServices

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
