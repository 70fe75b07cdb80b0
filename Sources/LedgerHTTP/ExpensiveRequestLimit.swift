import Hummingbird
import Synchronization

/// At most `limit` expensive requests at once — a chain verification, a report upload, an as-of read, a journal page or an
/// export, the API's or the console's (each can hold a pooled connection and memory for long): one more is refused at
/// once with 429 `busy` and `Retry-After: 1`, so a burst of them cannot take every database connection from the payments.
public struct ExpensiveRequestLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int
    private let running: Counter
    /// Called when the last running expensive request ends: gives its memory back (``MemoryReturn/soon(after:)``).
    let whenIdle: @Sendable () -> Void

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    public init(limit: Int, whenIdle: @escaping @Sendable () -> Void = { MemoryReturn.soon() }) {
        self.limit = limit
        self.running = Counter()
        self.whenIdle = whenIdle
    }

    /// The console's pages that do the work of an expensive API request.
    static var consolePaths: Set<String> {
        [
            "/console/reports", "/console/audit/as-of", "/console/audit/journal", "/console/audit/journal.csv",
            "/console/audit/journal.jsonl", "/console/audit/events.jsonl",
        ]
    }

    /// True for the requests this limit applies to.
    public static func isExpensive(_ request: Request) -> Bool {
        let path = request.uri.path
        if path == "/audit/verify" || path == "/reconciliation/reports" || path == "/journal" { return true }
        // The console's verification re-hashes as `GET /audit/verify` does; its report upload, as-of page, journal page
        // and exports are the API's same work.
        if path == "/console/audit" && request.uri.queryParameters["verify"] != nil { return true }
        if consolePaths.contains(path) { return true }
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
        defer {
            // The last one out gives the memory back (N15): a journal page or an upload's buffers.
            if running.value.withLock({ count in
                count -= 1
                return count == 0
            }) {
                whenIdle()
            }
        }
        return try await next(request, context)
    }
}
