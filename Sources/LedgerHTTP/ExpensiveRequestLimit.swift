import Hummingbird
import Synchronization

/// At most `limit` expensive requests at once — a chain verification, a report upload, an as-of read, a journal page (each can hold
/// a pooled connection and memory for long): one more is refused at once with 429 `busy` and `Retry-After: 1`,
/// so a burst of them cannot take every database connection from the payments.
public struct ExpensiveRequestLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int
    private let running: Counter

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    public init(limit: Int) {
        self.limit = limit
        self.running = Counter()
    }

    /// True for the requests this limit applies to.
    public static func isExpensive(_ request: Request) -> Bool {
        let path = request.uri.path
        if path == "/audit/verify" || path == "/reconciliation/reports" || path == "/journal" { return true }
        return request.uri.queryParameters["as_of"] != nil
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isExpensive(request) else { return try await next(request, context) }
        let admitted = running.value.withLock { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else {
            var error = APIError(
                status: .tooManyRequests,
                code: "busy",
                message: "too many verifications, uploads or as-of reads are running; retry in a moment"
            )
            error.retryAfterSeconds = 1
            throw error
        }
        defer { running.value.withLock { $0 -= 1 } }
        return try await next(request, context)
    }
}
