import HTTPTypes
import Hummingbird
import LedgerServices
import Synchronization

/// At most `limit` expensive requests at once — a chain verification, a report upload, an as-of read, a journal page or an
/// export, the API's or the console's (each can hold a pooled connection and memory for long): one more is refused at
/// once with 429 `busy` and `Retry-After: 1`, so a burst of them cannot take every database connection from the payments.
/// An export (a streamed file) also counts against its key's `exportsPerKey`.
///
/// Decided by route (``kind(method:route:query:)``), not by path or query alone, and only for an authenticated caller
/// (review 4, M4: any path with `as_of`, counted before authentication, let four anonymous slow bodies hold every slot).
/// A slot is held until the reply's body has been written, or dropped unwritten (review 4, M5: a streamed export gave
/// its slot back when its handler returned, before a byte of it was sent).
public final class ExpensiveRequestLimit: Sendable {
    public let limit: Int
    public let exportsPerKey: Int
    /// Called when the last running expensive request ends: gives its memory back (``MemoryReturn/soon(after:)``).
    let whenIdle: @Sendable () -> Void
    private let running = Mutex(0)
    private let exports = Mutex<[String: Int]>([:])

    public init(limit: Int, exportsPerKey: Int = 2, whenIdle: @escaping @Sendable () -> Void = { MemoryReturn.soon() }) {
        precondition(limit >= 1 && exportsPerKey >= 1)
        self.limit = limit
        self.exportsPerKey = exportsPerKey
        self.whenIdle = whenIdle
    }

    /// What a request costs: expensive work, or an export (expensive, and counted per key too).
    public enum Kind: Sendable { case work, export }

    /// When a route is expensive: always, with `as_of`, with `verify` (the console's audit page), or as an export.
    enum Rule { case always, asOf, verify, export }

    /// The expensive routes, by method and route (Hummingbird's endpoint path, parameters as `{name}`).
    static let routes: [String: Rule] = [
        "GET /audit/verify": .always, "POST /reconciliation/reports": .always, "GET /journal": .always,
        "GET /inventory": .asOf, "GET /orders/{id}": .asOf, "GET /authorizations/{id}": .asOf, "GET /products/{id}": .asOf,
        "GET /settlements/{id}": .asOf, "GET /settlements/{id}/report.csv": .export,
        // The console's pages that do the work of an expensive API request: its verification re-hashes as
        // `GET /audit/verify` does; its report upload, as-of page, journal page and exports are the API's same work.
        "GET /console/audit": .verify, "POST /console/reports": .always, "GET /console/audit/as-of": .always,
        "GET /console/audit/journal": .always, "GET /console/audit/journal.csv": .export,
        "GET /console/audit/journal.jsonl": .export, "GET /console/audit/events.jsonl": .export,
    ]

    /// What a request to `route` costs; nil when it is not expensive (an unknown route is not).
    public static func kind(method: HTTPRequest.Method, route: String?, query: Parameters) -> Kind? {
        guard let route, let rule = routes["\(method.rawValue) \(route)"] else { return nil }
        switch rule {
        case .always: return .work
        case .asOf: return query["as_of"] == nil ? nil : .work
        case .verify: return query["verify"] == nil ? nil : .work
        case .export: return .export
        }
    }

    /// One slot taken: given back once, by ``release()`` or when the last reference to it goes.
    final class Slot: Sendable {
        let giveBack: @Sendable () -> Void
        let released = Mutex(false)

        init(_ giveBack: @escaping @Sendable () -> Void) { self.giveBack = giveBack }

        func release() {
            let first = released.withLock { released in
                defer { released = true }
                return !released
            }
            if first { giveBack() }
        }

        deinit { release() }
    }

    /// Runs `work` in a slot (and, for an export, in one of `key`'s export slots): 429 `busy` when none is free. The
    /// slots are held by the reply's body until it is written (the client gone, or the body never written — a HEAD —
    /// releases them too).
    public func admit(_ kind: Kind, key: String, _ work: () async throws -> Response) async throws -> Response {
        var slots: [Slot] = []
        if kind == .export { slots.append(try takeExport(key)) }
        slots.append(try take())
        let held = slots
        do {
            var response = try await work()
            let body = response.body
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer { for slot in held { slot.release() } }
                try await body.write(writer)
            }
            return response
        } catch {
            for slot in held { slot.release() }
            throw error
        }
    }

    private func take() throws -> Slot {
        let admitted = running.withLock { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else {
            throw Self.busy("too many verifications, uploads, exports or as-of reads are running; retry in a moment")
        }
        return Slot { [self] in
            // The last one out gives the memory back (N15): a journal page or an upload's buffers.
            if running.withLock({ count in
                count -= 1
                return count == 0
            }) {
                whenIdle()
            }
        }
    }

    private func takeExport(_ key: String) throws -> Slot {
        let admitted = exports.withLock { open -> Bool in
            guard open[key, default: 0] < exportsPerKey else { return false }
            open[key, default: 0] += 1
            return true
        }
        guard admitted else { throw Self.busy("this key has \(exportsPerKey) exports running; wait for one to end") }
        return Slot { [self] in
            exports.withLock { open in
                let left = open[key, default: 1] - 1
                open[key] = left > 0 ? left : nil
            }
        }
    }

    static func busy(_ message: String) -> APIError {
        var error = APIError(status: .tooManyRequests, code: "busy", message: message)
        error.retryAfterSeconds = 1
        return error
    }
}

/// Applies an ``ExpensiveRequestLimit`` to the routes of the group it is added to, after their authentication:
/// `caller` names the authenticated caller's key, or nil for a caller not (yet) authenticated, whose request passes on
/// uncounted, for its route to refuse (a 401, or the console's sign-in page) without a slot.
public struct ExpensiveRequestLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: ExpensiveRequestLimit
    let caller: @Sendable (Request, Context) -> String?

    public init(_ limit: ExpensiveRequestLimit, caller: @escaping @Sendable (Request, Context) -> String?) {
        self.limit = limit
        self.caller = caller
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let kind = ExpensiveRequestLimit.kind(method: request.method, route: context.endpointPath, query: request.uri.queryParameters),
            let key = caller(request, context)
        else { return try await next(request, context) }
        return try await limit.admit(kind, key: key) { try await next(request, context) }
    }
}
