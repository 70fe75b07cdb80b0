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
///
/// **Waiters are woken at most once every ``wakeInterval``** (issue 57): ``wait(beyond:timeout:)`` answers with the
/// *published* head, which follows the durable head at once when the last wake is older than the interval, else at the
/// interval's end, with every commit since in one wake. Each wake costs each follower a read (the live feed's page, the
/// webhook dispatcher's schedule and claim), so without it a follower read once per commit: at 120 requests a second the
/// ledger's database ran 8–9 transactions per request, most of them these. A quiet ledger's commit is published at
/// once; a busy one's reach a follower at most ``wakeInterval`` (plus the clock's tick) late, in fewer, larger pages.
public final class HeadWatcher: Service, Sendable {
    public static let channel = "ledger_events"

    let client: DatabaseClient
    let pollInterval: Duration
    let logger: Logger

    private struct State {
        /// The durable head.
        var head: Int64 = 0
        /// The durable head as the waiters were last woken with it (``wait(beyond:timeout:)``'s answer): at most ``head``.
        var published: Int64 = 0
        /// When ``published`` last moved; nil: never.
        var lastWake: ContinuousClock.Instant?
        /// A wake is scheduled for the end of the interval (``head`` moved within it).
        var wakePending = false
        /// The highest committed head learned (a notification, a poll, a barrier's read): at least ``head``.
        var committed: Int64 = 0
        /// Whether a committed head was learned at all (before, ``committed`` is 0 only for want of news).
        var learned = false
        var next = 0
        /// Who waits beyond which position; a waiter is entered before it suspends (no continuation yet), so a wake or
        /// its timeout that comes first removes the entry and the waiter then does not suspend.
        var waiters: [Int: (beyond: Int64, continuation: CheckedContinuation<Void, Never>?)] = [:]
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
    /// Waiters are woken at most once per interval (the type's notes); zero: at every move. The daemon's is
    /// `LEDGERD_FEED_WAKE_MS` (50 ms: at most 20 reads a second per follower, whatever the commit rate).
    let wakeInterval: Duration

    public init(
        client: DatabaseClient,
        pollInterval: Duration,
        barrierDelay: Duration = .milliseconds(50),
        barrierDeadline: Duration = .seconds(10),
        wakeInterval: Duration = .zero,
        logger: Logger
    ) {
        self.client = client
        self.pollInterval = pollInterval
        self.barrierDelay = barrierDelay
        self.barrierDeadline = barrierDeadline
        self.wakeInterval = wakeInterval
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
        let now = ContinuousClock.now
        let wake = state.withLock { state -> Wake in
            state.learned = true
            state.committed = max(state.committed, position)
            guard position > state.head else { return .none }
            state.head = position
            guard !state.wakePending else { return .none }  // the scheduled wake publishes this too
            if let last = state.lastWake, now - last < wakeInterval {
                state.wakePending = true
                return .later(wakeInterval - (now - last))
            }
            return .now(Self.publish(&state, at: now))
        }
        switch wake {
        case .none: break
        case .now(let woken): for continuation in woken { continuation.resume() }
        case .later(let delay):
            _ = DeadlineClock.shared.add(after: delay) { [self] in
                let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.wakePending = false
                    return Self.publish(&state, at: ContinuousClock.now)
                }
                for continuation in woken { continuation.resume() }
            }
        }
    }

    private enum Wake {
        case none
        case now([CheckedContinuation<Void, Never>])
        case later(Duration)
    }

    /// Publishes the durable head: takes the waiters it passes, to be resumed outside the lock.
    private static func publish(_ state: inout State, at now: ContinuousClock.Instant) -> [CheckedContinuation<Void, Never>] {
        state.published = state.head
        state.lastWake = now
        let position = state.published
        let due = state.waiters.filter { $0.value.beyond < position }
        for id in due.keys { state.waiters.removeValue(forKey: id) }
        return due.values.compactMap(\.continuation)
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

    /// Returns once the published durable head (the type's notes: it follows the durable head at most every
    /// ``wakeInterval``) is beyond `position`, `timeout` has passed (up to ``DeadlineClock``'s tick later), or the task
    /// is cancelled; the published head then.
    @discardableResult
    public func wait(beyond position: Int64, timeout: Duration) async -> Int64 {
        let id = state.withLock { state -> Int? in
            if state.published > position { return nil }
            state.next += 1
            state.waiters[state.next] = (position, nil)
            return state.next
        }
        guard let id else { return published }
        // The timeout is an entry in the one deadline clock, not a task and a timer per wait.
        let timer = DeadlineClock.shared.add(after: timeout) { [self] in
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation?.resume()
        }
        defer { DeadlineClock.shared.remove(timer) }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    // Gone: woken or timed out before it suspended.
                    guard state.waiters[id] != nil, !Task.isCancelled else {
                        state.waiters[id] = nil
                        return true
                    }
                    state.waiters[id]?.continuation = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation?.resume()
        }
        return published
    }

    /// The durable head as waiters were last woken with it (at most ``head``).
    public var published: Int64 { state.withLock { $0.published } }

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
