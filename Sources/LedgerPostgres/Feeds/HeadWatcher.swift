import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Knows the ledger's head (its last committed position) soon after every commit, from any daemon,
/// and wakes whoever waits for the log to grow: the live feed, subscriptions' long polls and the
/// webhook dispatcher.
///
/// Two sources, either enough on its own: `LISTEN ledger_events` on one connection of the pool
/// (`ledger.append_events` sends `pg_notify('ledger_events', <last position>)`, delivered at commit,
/// sql/0001), and a poll of `ledger.head` every `pollInterval` as the fallback (a lost connection,
/// a notification queue that overflowed). The head it knows is only a wake-up hint: readers take the
/// head they read up to from the database (``EventStore/feedPage(after:matching:limit:)``).
public final class HeadWatcher: Service, Sendable {
    public static let channel = "ledger_events"

    let client: DatabaseClient
    let pollInterval: Duration
    let logger: Logger

    private struct State {
        var head: Int64 = 0
        var next = 0
        var waiters: [Int: (beyond: Int64, continuation: CheckedContinuation<Void, Never>)] = [:]
    }

    private let state = Mutex(State())

    public init(client: DatabaseClient, pollInterval: Duration, logger: Logger) {
        self.client = client
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// The highest head seen so far.
    public var head: Int64 { state.withLock { $0.head } }

    /// Listens and polls until the service group shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listen() }
                group.addTask { await self.poll() }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Raises the known head to `position` and wakes the waiters it passes.
    public func observe(_ position: Int64) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard position > state.head else { return [] }
            state.head = position
            let due = state.waiters.filter { $0.value.beyond < position }
            for id in due.keys { state.waiters.removeValue(forKey: id) }
            return due.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once the known head is beyond `position`, `timeout` has passed, or the task is cancelled;
    /// the known head then.
    @discardableResult
    public func wait(beyond position: Int64, timeout: Duration) async -> Int64 {
        if head > position { return head }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntil(beyond: position) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        return head
    }

    private func waitUntil(beyond position: Int64) async {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.head > position || Task.isCancelled { return true }
                    state.waiters[id] = (position, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume()
        }
    }

    private func listen() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        // Committed while LISTEN was being set up: the poll below catches it too, this is sooner.
                        try await self.readHead()
                        for try await notification in notifications {
                            if let position = Int64(notification.payload) { self.observe(position) }
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("LISTEN ledger_events failed; polling the head until it is back", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func poll() async {
        while !Task.isCancelled {
            do { try await readHead() } catch {
                if Task.isCancelled { return }
                logger.debug("polling the ledger head failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: pollInterval)
        }
    }

    private func readHead() async throws {
        let rows = try await client.query("SELECT position FROM ledger.head WHERE singleton", logger: logger)
        for try await position in rows.decode(Int64.self) { observe(position) }
    }
}
