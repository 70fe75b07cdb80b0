import LedgerEngine
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Knows the ledger's **durable head** — the last position a consumer may be served — soon after every commit, from
/// any daemon, and wakes whoever waits for it to grow: the live feed, subscriptions' long polls and the webhook
/// dispatcher.
///
/// Why durable, not committed (issue 30, item 4): with a synchronous standby, a commit whose wait for the standby is
/// cancelled (a terminated backend, an operator's cancel, a statement timeout inside a procedure that commits) stays
/// committed on the primary, visible to every session there, though no standby has it; a failover then loses it and
/// another event takes its position. Serving it would hand a consumer an event the ledger later never had. So a
/// position is durable once a COMMIT that waited for synchronous replication and returned came after it: PostgreSQL
/// streams WAL in order, so the standby that confirmed that commit record holds every commit record before it.
/// Positions are assigned under the head lock, held to commit, so a position's commit precedes every later one's.
///
/// Two ways the durable head moves:
/// - ``confirm(_:)``: the writer, after a batch's commit waited and returned (``LedgerWriter``), for what it appended;
/// - a **barrier** (``ensureDurable(through:)``): one transaction that reads the head, writes `ledger.durability_barrier`
///   and commits (sql/0024); its COMMIT waits for the standby like any other, so when it returns every position at or
///   below the head it read is durable. The watcher runs one when the committed head it learns of stays ahead of the
///   durable head for ``barrierDelay`` (another daemon's commits, or a commit whose wait was cancelled), and the writer
///   runs one before it answers anything a batch did not append itself (a replayed result, a decision read from the
///   log). Barriers run one at a time; callers that need one meanwhile share the next.
///
/// Without a synchronous standby every commit is as durable as the cluster makes it, and the first barrier (at start)
/// or the writer's next commit brings the durable head to the committed one.
///
/// The committed head is learned two ways, either enough on its own: `LISTEN ledger_events` on one connection of the
/// pool (`ledger.append_events` sends `pg_notify('ledger_events', <last position>)`, delivered at commit, sql/0001), and
/// a poll of `ledger.head` every `pollInterval` as the fallback (a lost connection, a notification queue that
/// overflowed). Readers bound what they read by ``head`` (``EventStore/feedPage(after:through:matching:limit:)``).
public final class HeadWatcher: Service, Sendable {
    public static let channel = "ledger_events"

    let client: DatabaseClient
    let pollInterval: Duration
    let logger: Logger

    private struct State {
        /// The durable head.
        var head: Int64 = 0
        /// The highest committed head learned (a notification, a poll, a barrier's read): at least ``head``.
        var committed: Int64 = 0
        /// Whether a committed head was learned at all (before, ``committed`` is 0 only for want of news).
        var learned = false
        var next = 0
        var waiters: [Int: (beyond: Int64, continuation: CheckedContinuation<Void, Never>)] = [:]
        /// The barrier running now, which callers share; nil: none.
        var barrier: Task<Int64, any Error>?
        /// Woken when the committed head passes the durable one.
        var behind: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// How long the committed head may stay ahead of the durable one before the watcher runs a barrier: long enough
    /// for the writer's own confirmation of a commit whose notification arrived first.
    let barrierDelay: Duration
    /// Most time one barrier may take (its commit waits for the standby) before it fails and a later one is tried.
    let barrierDeadline: Duration

    public init(
        client: DatabaseClient,
        pollInterval: Duration,
        barrierDelay: Duration = .milliseconds(50),
        barrierDeadline: Duration = .seconds(10),
        logger: Logger
    ) {
        self.client = client
        self.pollInterval = pollInterval
        self.barrierDelay = barrierDelay
        self.barrierDeadline = barrierDeadline
        self.logger = logger
    }

    /// The durable head: the last position a consumer may be served (see the type's notes).
    public var head: Int64 { state.withLock { $0.head } }

    /// The highest committed head learned so far (at least ``head``; what lies between is not served yet).
    public var committedHead: Int64 { state.withLock { $0.committed } }

    /// Listens and polls until the service group shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listen() }
                group.addTask { await self.poll() }
                group.addTask { await self.keepDurable() }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Learns that the ledger has committed through `position` (a notification, a poll): not yet served, until it is
    /// durable.
    public func observe(_ position: Int64) {
        let wake = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.learned = true
            guard position > state.committed else { return nil }
            state.committed = position
            guard position > state.head, let behind = state.behind else { return nil }
            state.behind = nil
            return behind
        }
        wake?.resume()
    }

    /// Raises the durable head to `position` — a commit that waited for synchronous replication and returned came
    /// after it — and wakes the waiters it passes. The writer calls it for what its commits appended.
    public func confirm(_ position: Int64) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.learned = true
            state.committed = max(state.committed, position)
            guard position > state.head else { return [] }
            state.head = position
            let due = state.waiters.filter { $0.value.beyond < position }
            for id in due.keys { state.waiters.removeValue(forKey: id) }
            return due.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once every position through `position` is durable, running barriers (shared with other callers) until
    /// one confirms it; throws what a barrier threw (the database unreachable, the standby's confirmation not arriving
    /// within the pool's statement deadline). Bound it by the caller's own deadline.
    public func ensureDurable(through position: Int64) async throws {
        for _ in 0..<3 {
            if head >= position { return }
            _ = try await barrier()
        }
        if head < position {
            throw AppendError.storageFailure("position \(position) is beyond the ledger head \(head) after three barriers")
        }
    }

    /// The last position a consumer may be served now, given `committed`, a head the caller read (its store's: the
    /// replica's when auditors read one; nil: the primary's, read here): `committed` itself if it is durable or a barrier
    /// makes it so within `settle`, else the durable head. A standby that does not answer holds no reader past `settle`.
    public func servable(committed given: Int64? = nil, settle: Duration = .seconds(1)) async throws -> Int64 {
        let committed: Int64
        if let given { committed = given } else { committed = try await readHead() }
        if head < committed {
            _ = try? await withDeadline(settle) { try await self.ensureDurable(through: committed) }
        }
        return min(committed, head)
    }

    /// ``servable(committed:settle:)`` on the committed head learned so far (notifications, the writer's confirmations,
    /// the poll), read only until one was learned: for a consumer that waits for the head to grow anyway (the webhook
    /// dispatcher), which then costs no statement. Reading the head for it on every wake was, with the live feed's
    /// own reads, half the ledger database's statements at a low rate (a day at 20 requests a second: 10 of 20 per
    /// request). What it misses, a commit whose notification has not arrived, wakes it when it does.
    public func servableKnown(settle: Duration = .seconds(1)) async throws -> Int64 {
        let known = state.withLock { $0.learned ? $0.committed : nil }
        return try await servable(committed: known, settle: settle)
    }

    /// ``servable(committed:settle:)`` on `store`'s head (the replica's, when the store reads one).
    public func servable(of store: EventStore, settle: Duration = .seconds(1)) async throws -> Int64 {
        try await servable(committed: store.head().position, settle: settle)
    }

    /// Runs a barrier — the one running now if there is one, else a new one — and returns the durable head after it.
    @discardableResult
    public func barrier() async throws -> Int64 {
        let task = state.withLock { state -> Task<Int64, any Error> in
            if let running = state.barrier { return running }
            // Bounded: a primary that stopped answering (cut off, its standby gone) must not hold every later barrier.
            let task = Task {
                defer { self.state.withLock { $0.barrier = nil } }
                return try await withDeadline(self.barrierDeadline) { try await self.runBarrier() }
            }
            state.barrier = task
            return task
        }
        return try await task.value
    }

    /// One barrier: read the head, write the barrier row, commit (sql/0024). The COMMIT statement's own completion is
    /// the commit (PostgreSQL answers it after the wait for the standby, and no statement timeout runs during it).
    private func runBarrier() async throws -> Int64 {
        let logger = self.logger
        let position = try await client.withTransaction(logger: logger) { connection -> Int64 in
            let rows = try await connection.query(
                """
                WITH head AS (SELECT position FROM ledger.head WHERE singleton),
                     marked AS (UPDATE ledger.durability_barrier SET barriers = barriers + 1 WHERE singleton RETURNING 1)
                SELECT head.position FROM head, marked
                """,
                logger: logger
            )
            for try await position in rows.decode(Int64.self) { return position }
            throw AppendError.storageFailure("the ledger head or its durability barrier row is missing")
        }
        confirm(position)
        return position
    }

    /// Runs a barrier whenever the committed head has stayed ahead of the durable one for ``barrierDelay``; one at
    /// start, so that what was committed before the daemon started is served once durable.
    private func keepDurable() async {
        var started = false
        var failures = 0
        while !Task.isCancelled {
            if !started || committedHead > head {
                do {
                    if started { try await ensureDurable(through: committedHead) } else { try await barrier() }
                    started = true
                    failures = 0
                } catch {
                    if Task.isCancelled { return }
                    failures += 1
                    if failures == 1 || failures % 30 == 0 {
                        logger.warning(
                            "the durable head is behind the committed head and a barrier failed; consumers wait",
                            metadata: ["durable": "\(head)", "committed": "\(committedHead)", "error": "\(String(reflecting: error))"]
                        )
                    }
                    // Backing off: a barrier abandoned at its deadline leaves its backend waiting for the standby.
                    try? await Task.sleep(for: .seconds(min(1 << min(failures - 1, 5), 30)))
                    continue
                }
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.committed > state.head || Task.isCancelled { return true }
                        state.behind = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                let behind = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    defer { state.behind = nil }
                    return state.behind
                }
                behind?.resume()
            }
            // Give the writer the moment to confirm its own commit, whose notification may have come first.
            try? await Task.sleep(for: barrierDelay)
        }
    }

    /// Returns once the durable head is beyond `position`, `timeout` has passed, or the task is cancelled;
    /// the durable head then.
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

    /// Reads the committed head and learns it.
    @discardableResult
    private func readHead() async throws -> Int64 {
        let rows = try await client.query("SELECT position FROM ledger.head WHERE singleton", logger: logger)
        for try await position in rows.decode(Int64.self) {
            observe(position)
            return position
        }
        throw AppendError.storageFailure("the ledger head row is missing")
    }
}
