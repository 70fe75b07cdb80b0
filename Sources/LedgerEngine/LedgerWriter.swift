import Foundation
import LedgerCore
import LedgerMacros
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// The group-commit writer: the only way events enter the ledger.
///
/// Many concurrent callers `append`; one loop takes everything queued (up to a cap) and commits it
/// with **one** statement, `ledger.append_batch` (sql/0002), under the ledger-head row lock:
///
/// 1. the loop decides each request in queue order against what it believes — stream versions it
///    has seen committed (cached), idempotency keys it knows are stored: replay a stored result,
///    refuse a reused key or a version conflict, or accept it (later requests in the batch see
///    earlier ones' versions). The deciding is ``BatchPlanner``, a pure state machine; the loop
///    only performs its actions (reads, the statement, version-cache updates);
/// 2. `append_batch` takes the head lock — every writer of every process serialises there, so
///    positions are gapless and in commit order — and verifies those beliefs set-based: every
///    stream's version is what the loop believed, no key is already stored;
/// 3. if so, and if the head is the one the loop linked the batch onto (``ChainLinks``: positions,
///    `recorded_at` and hashes computed here, sql/0017), it inserts the accepted events and stores
///    the idempotency records, in the same statement, so the batch commits whole or not at all;
///    if not (another process wrote a stream or used a key) it appends nothing and returns the
///    truth, and the loop decides the batch again.
///
/// One round trip per batch in the common case (`CALL ledger.append_batch_committed`, which commits before it
/// answers, sql/0018: callers are acknowledged on the commit), and no per-request SQL. While one batch commits,
/// the next one queues up: throughput comes from batching, not from concurrency on the head row.
/// If the server rejects a batch (e.g. a payload that is not JSON), its requests are retried one
/// by one so that one bad request cannot fail its neighbours.
///
/// The loop runs over the ``EventLog`` port (issue 56): LedgerPostgres gives it `PostgresEventLog` (and builds the
/// daemon's writer, `LedgerWriter(client:…)`), a simulation an in-memory log; ``commitQueued()`` is the step a
/// simulation drives instead of ``run()``.
public final class LedgerWriter: Service, Sendable {
    @MemberwiseInit
    public struct Configuration: Sendable {
        /// Most events committed in one transaction.
        public var maximumBatchEvents: Int = 2_000
        /// Most time one batch's transaction may take before its callers are answered "database unavailable"
        /// (outcome unknown: a retry with the same idempotency key is safe) and the writer goes on with the next
        /// batch; nil: no bound. The daemon sets it a little above its `statement_timeout`: a transaction whose
        /// connection died under it (the primary killed during a failover) must not hold every later append.
        public var transactionDeadline: Duration? = nil
        /// The `statement_timeout` of the writer's connections (nil: none). A `CALL ledger.append_batch_committed`
        /// that ran this long may have had its wait for the synchronous standby cancelled by that timeout, which
        /// PostgreSQL then answers as a success (a WARNING aside): the writer makes sure with a barrier before it
        /// answers (`HeadWatcher`).
        public var statementTimeout: Duration? = nil
        /// Streams whose committed version the writer remembers (`LEDGERD_VERSION_CACHE_ENTRIES`).
        public var versionCacheEntries: Int = 100_000
    }

    /// What a caller queued: a request decided already, or a command the batch decides.
    private enum Work: Sendable {
        case append(AppendRequest)
        case command(LedgerCommand, any CommandStateSource)
    }

    private struct Pending: Sendable {
        let work: Work
        let continuation: CheckedContinuation<WriterAnswer, any Error>
        let enqueuedAt: ContinuousClock.Instant

        /// Events it appends (a command's, estimated before it is decided: one per stream it reads, and one).
        var eventCount: Int {
            switch work {
            case .append(let request): request.eventCount
            case .command(let command, _): command.reads.streams.count + 1
            }
        }
    }

    private struct State: Sendable {
        var queue: [Pending] = []
        var waiter: CheckedContinuation<Void, Never>?
        var stopped = false
    }

    /// The event log the batches are committed to: today's SQL in the daemon (LedgerPostgres' `PostgresEventLog`).
    private let log: any EventLog
    private let configuration: Configuration
    private let logger: Logger
    private let metrics: WriterMetrics
    private let state = Mutex(State())
    /// Touched only by the commit loop; a Mutex keeps the class Sendable at no contention cost.
    private let versionCache: Mutex<VersionCache>
    /// The durable head (nil: not kept — a tool, a benchmark): confirmed after each commit, and made to cover what a
    /// batch answers before its callers are answered (``makeDurable(_:)``).
    private let durability: (any DurableHead)?
    /// Logs `append failed` (the daemon's: at most once per interval, with how many were left out).
    private let appendFailed: @Sendable (_ metadata: Logger.Metadata) -> Void
    /// The time of record a batch is stamped with (`recorded_at`).
    private let clock: any LedgerClock
    /// Where every new id of the process comes from: its commands' event ids, and the services' correlation, order and
    /// event ids (through `aggregates.writer.ids`), so that one seeded source makes a run's ids repeatable (issue 56).
    public let ids: any IDSource

    /// A writer committing to `log`. `appendFailed`: how a failed batch is logged (each one, unless told otherwise).
    package init(
        log: any EventLog,
        configuration: Configuration = .init(),
        durability: (any DurableHead)? = nil,
        logger: Logger = Logger(label: "ledger.writer"),
        metrics: WriterMetrics = WriterMetrics(factory: MetricsSystem.factory),
        clock: any LedgerClock = SystemClock(),
        ids: any IDSource = RandomIDs(),
        appendFailed: (@Sendable (_ metadata: Logger.Metadata) -> Void)? = nil
    ) {
        self.log = log
        self.clock = clock
        self.ids = ids
        self.durability = durability
        self.configuration = configuration
        self.logger = logger
        self.versionCache = Mutex(VersionCache(limit: configuration.versionCacheEntries))
        self.metrics = metrics
        self.appendFailed = appendFailed ?? { metadata in logger.error("append failed", metadata: metadata) }
    }

    /// The stream-version cache's size and counts (`/metrics`: `ledger_cache_*{cache="stream_versions"}`).
    public var versionCacheStatistics: CacheStatistics { versionCache.withLock { $0.statistics } }

    /// Appends one request atomically and returns its positions and stream versions.
    ///
    /// Throws ``AppendError``: `.versionConflict` (retryable after reloading the stream),
    /// `.idempotencyConflict`, `.invalidAppend`, `.settlementItemsMismatch`, `.writerStopped` or
    /// `.storageFailure`.
    public func append(_ request: AppendRequest) async throws -> AppendResult {
        try request.validate()
        guard case .appended(let result) = try await enqueue(.append(request)) else { throw AppendError.storageFailure("unexpected answer") }
        return result
    }

    /// Decides `command` inside the next batch, in queue order, on the states of what it reads as the batch has
    /// left them (from `states`, checked against the versions this writer has seen committed), and appends what
    /// it decided with the batch. Throws what `decide` threw (nothing appended), or an ``AppendError`` as
    /// ``append(_:)`` does — `.versionConflict` when another process moved a stream under the decision, or a
    /// request earlier in the batch did: deciding again is right.
    package func decide(_ command: LedgerCommand, states: any CommandStateSource) async throws -> CommandOutcome {
        guard case .decided(let outcome) = try await enqueue(.command(command, states)) else {
            throw AppendError.storageFailure("unexpected answer")
        }
        return outcome
    }

    private func enqueue(_ work: Work) async throws -> WriterAnswer {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.queue.append(Pending(work: work, continuation: continuation, enqueuedAt: .now))
                if let waiter = state.waiter {
                    state.waiter = nil
                    waiter.resume()
                }
                return true
            }
            if !accepted { continuation.resume(throwing: AppendError.writerStopped) }
        }
    }

    /// Runs the commit loop until graceful shutdown or cancellation; requests already queued are
    /// committed before it returns.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                while let batch = await nextBatch() {
                    await commit(batch)
                }
            } onCancel: {
                self.stop()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    /// Stops taking appends; the loop drains what is queued and ends.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            if let waiter = state.waiter {
                state.waiter = nil
                waiter.resume()
            }
        }
    }

    /// The next batch, or nil once stopped with nothing left to commit.
    private func nextBatch() async -> [Pending]? {
        while true {
            enum Take {
                case batch([Pending])
                case finished, wait
            }
            let take = state.withLock { state -> Take in
                if let batch = takeBatch(from: &state.queue) { return .batch(batch) }
                return state.stopped ? .finished : .wait
            }
            switch take {
            case .batch(let batch): return batch
            case .finished: return nil
            case .wait:
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.queue.isEmpty || state.stopped { return true }
                        state.waiter = waiter
                        return false
                    }
                    if resumeNow { waiter.resume() }
                }
            }
        }
    }

    /// The queue's head up to ``Configuration/maximumBatchEvents`` (at least one request), removed; nil when empty.
    private func takeBatch(from queue: inout [Pending]) -> [Pending]? {
        guard !queue.isEmpty else { return nil }
        var events = 0
        var count = 0
        for pending in queue {
            let n = pending.eventCount
            if count > 0 && events + n > configuration.maximumBatchEvents { break }
            events += n
            count += 1
        }
        let batch = Array(queue.prefix(count))
        queue.removeFirst(count)
        return batch
    }

    /// Commits one batch of what is queued now, without waiting for more: the step a simulation drives instead of
    /// ``run()``, so that its seed decides where a batch ends. False when nothing was queued.
    package func commitQueued() async -> Bool {
        guard let batch = state.withLock({ takeBatch(from: &$0.queue) }) else { return false }
        await commit(batch)
        return true
    }

    /// Requests queued and not yet taken into a batch (what ``commitQueued()`` would take, up to the cap).
    package var queuedCount: Int { state.withLock { $0.queue.count } }

    private func commit(_ batch: [Pending]) async {
        let started = ContinuousClock.now
        do {
            let outcomes: [Result<WriterAnswer, any Error>]
            if let deadline = configuration.transactionDeadline {
                outcomes = try await withDeadline(deadline, timedOut: DeadlinePassed()) {
                    try await self.makeDurable(self.commitTransaction(batch))
                }
            } else {
                outcomes = try await makeDurable(commitTransaction(batch))
            }
            let finished = ContinuousClock.now
            metrics.commitDuration.recordNanoseconds((finished - started).nanoseconds)
            var events = 0
            for (pending, outcome) in zip(batch, outcomes) {
                metrics.appendLatency.recordNanoseconds((finished - pending.enqueuedAt).nanoseconds)
                switch outcome {
                case .success(let answer):
                    if let result = answer.result {
                        if !result.replayed { events += Int(result.lastPosition - result.firstPosition + 1) }
                        metrics.outcome(result.replayed ? "replayed" : "appended").increment()
                    } else if case .decided(let outcome) = answer, outcome.refused {
                        metrics.outcome("refused").increment()  // a refusal decided as a value, as one thrown
                    } else {
                        metrics.outcome("decided_nothing").increment()
                    }
                case .failure(let error as AppendError):
                    metrics.outcome(error == .versionConflict ? "version_conflict" : "idempotency_conflict").increment()
                case .failure:
                    metrics.outcome("refused").increment()
                }
                pending.continuation.resume(with: outcome)
            }
            metrics.appendedEvents.increment(by: events)
            metrics.batchSize.record(events)
        } catch {
            if batch.count > 1 && log.isStatementRejected(error) {
                logger.warning(
                    "batch rejected by the database; retrying its requests one by one",
                    metadata: ["requests": "\(batch.count)", "error": "\(String(reflecting: error))"]
                )
                for pending in batch { await commit([pending]) }
                return
            }
            // A transaction past its deadline: its outcome is unknown, as when the database is unreachable.
            let mapped = error is DeadlinePassed ? AppendError.databaseUnavailable : log.appendError(from: error)
            if mapped == .versionConflict {
                // Other writers kept winning (BatchPlanner's attempts ran out): busy, not broken; each request's caller
                // decides again in a later batch.
                logger.warning("batch too contended; its requests decide again", metadata: ["requests": "\(batch.count)"])
                metrics.outcome("version_conflict").increment()
            } else {
                // Throttled: through an outage every request fails, and a line each was 28,728 lines in 20 s (review 4, L5).
                appendFailed(["error": "\(String(reflecting: error))"])
                metrics.outcome("failed").increment()
            }
            for pending in batch { pending.continuation.resume(throwing: mapped) }
        }
    }

    /// Answers no caller before what it is told is durable (``DurableHead``; issue 30, item 4). A batch that appended
    /// confirms its last position: its commit waited for synchronous replication (``executeLinked(_:onto:)`` makes
    /// sure when it cannot be sure), and every replay or decision it answers lies below what it appended. A batch that
    /// appended nothing answers from what the log already held — a replayed result, a decision read from the log — which
    /// may be a commit whose wait for the standby was cancelled: a barrier through the head first. Nothing of this when
    /// the batch only failed (its callers learn nothing about the log).
    private func makeDurable(_ outcomes: [Result<WriterAnswer, any Error>]) async throws -> [Result<WriterAnswer, any Error>] {
        guard let durability else { return outcomes }
        var appended: Int64 = 0
        var answered = false
        for outcome in outcomes {
            switch outcome {
            case .success(let answer):
                answered = true
                if let result = answer.result, !result.replayed { appended = max(appended, result.lastPosition) }
            case .failure(let error):
                if !(error is AppendError) { answered = true }
            }
        }
        if appended > 0 {
            durability.confirm(appended)
        } else if answered {
            try await durability.barrier()
        }
        return outcomes
    }

    /// Commits one batch by performing ``BatchPlanner``'s actions. The planner decides the batch
    /// against what the writer believes (cached stream versions, known keys); `ledger.append_batch`
    /// (sql/0002) verifies those beliefs under the head lock and appends — one round trip, one
    /// statement, so all of it commits or none of it does. When a belief was wrong (another process
    /// wrote a stream, or a key was already used), nothing is appended: the planner learns the truth
    /// from the answer and decides the batch again — and the batch's commands are decided again first,
    /// on states caught up with what was learned (``CommandDecisions``). This loop decides nothing
    /// itself: it runs the SQL, loads states and keeps the version cache, which the planner gets as data.
    private func commitTransaction(_ batch: [Pending]) async throws -> [Result<WriterAnswer, any Error>] {
        var decisions = try await decideCommands(batch)
        if decisions.requests.isEmpty { return decisions.answers([]).answers }  // commands that refused or decided nothing
        var planner = BatchPlanner(requests: decisions.requests)
        var action = planner.startAttempt(cached: cachedVersions(of: planner.streams))
        while true {
            switch action {
            case .loadVersions(let streams):
                let versions = try await log.versions(of: streams)
                versionCache.withLock { cache in for (stream, version) in versions { cache.store(stream, version) } }
                action = planner.versionsLoaded(versions)
            case .execute(let plan):
                action = planner.batchAnswered(try await log.commit(plan.statement, recordedAtMicros: wallClockMicros()))
            case .redecide(let learned):
                metrics.outcome("redecided").increment()
                versionCache.withLock { cache in for (stream, version) in learned { cache.store(stream, version) } }
                if decisions.hasCommands {
                    decisions = try await decideCommands(batch)
                    if decisions.requests.isEmpty { return decisions.answers([]).answers }
                    planner.restart(with: decisions.requests)
                }
                action = planner.startAttempt(cached: cachedVersions(of: planner.streams))
            case .complete(let results, let committed):
                versionCache.withLock { cache in for (stream, version) in committed { cache.store(stream, version) } }
                let (answers, remembered) = decisions.answers(results)
                for (source, states) in remembered { source.remember(states) }
                return answers
            case .fail(let error):
                throw error
            }
        }
    }

    /// The states of `keys` for `command`: what the caller gave where it holds a state, the rest as the source
    /// remembers it — unless any of them is older than the version this writer last saw committed or learned:
    /// then all of them are read fresh, so that a decision never mixes a stream caught up with one left behind
    /// (a shipment decided on a fresh order beside a hold missing its refund).
    private func states(
        of keys: AggregateKeys,
        for command: LedgerCommand,
        from source: any CommandStateSource
    ) async throws -> (AggregateStates, AggregateKeys, fresh: Set<StreamID>) {
        let streams = keys.streams
        let seen = versionCache.withLock { cache in streams.map { cache[$0.rawValue] } }
        let givenVersions = command.given.versions(of: keys)
        let given = Set(zip(streams, givenVersions).compactMap { $1 == nil ? nil : $0 })
        var states = command.given.only(given)
        let missing = keys.filtered(Set(streams).subtracting(given))
        if !missing.streams.isEmpty { states.merge(try await source.states(missing, fresh: [])) }
        // Current: no later version seen (no state is version 0).
        let current = zip(states.versions(of: keys), seen).allSatisfy { version, seen in (version ?? 0) >= (seen ?? 0) }
        guard !current else { return (states, keys, []) }
        let all = Set(streams)
        return (try await source.states(keys, fresh: all), keys, all)
    }

    /// Decides the batch's commands in queue order (see ``CommandDecisions``). A command's states come from its
    /// source as remembered, except streams whose remembered version is not the one this writer last saw
    /// committed or learned: those are caught up with the log first. A refusal decided on a remembered state is
    /// decided again on a fresh one before it stands (stock may have come back through another process).
    private func decideCommands(_ batch: [Pending]) async throws -> CommandDecisions {
        var decisions = CommandDecisions(ids: ids)
        for pending in batch {
            switch pending.work {
            case .append(let request): decisions.add(request)
            case .command(let command, let source):
                let unknown = decisions.unknown(command.reads)
                if !unknown.streams.isEmpty {
                    try await decisions.loaded(states(of: unknown, for: command, from: source))
                }
                if let refreshable = decisions.decide(command, source: source) {
                    let all = Set(refreshable.streams)
                    decisions.loaded(try await source.states(refreshable, fresh: all), for: refreshable, fresh: all)
                    decisions.decideAgain(command, source: source)
                }
            }
        }
        return decisions
    }

    /// Microseconds since 1970 on the writer's clock (this machine's wall clock in the daemon): a batch's `recorded_at`
    /// (the ledger's own time of record; the domain's clocks set `effective_at`).
    private func wallClockMicros() -> Int64 { clock.now().epochMicroseconds }

    private func cachedVersions(of streams: [String]) -> [String: Int64] {
        versionCache.withLock { cache in
            Dictionary(uniqueKeysWithValues: streams.compactMap { stream in cache[stream].map { (stream, $0) } })
        }
    }
}

/// Stream versions the writer has seen committed, so that a batch can be decided without reading
/// first. Bounded: past the limit it forgets the stream least recently used, one per new stream (a miss
/// costs one read, never a wrong answer, because the database verifies every belief).
struct VersionCache: Sendable {
    private var versions: BoundedCache<String, Int64>

    init(limit: Int) { versions = BoundedCache(limit: limit) }

    subscript(stream: String) -> Int64? { mutating get { versions.get(stream) } }

    mutating func store(_ stream: String, _ version: Int64) { versions.put(stream, version) }

    var statistics: CacheStatistics { versions.statistics }
}

/// The writer's metrics: appended events, outcomes, batch sizes, commit and append latency (shared with its log,
/// which counts `relinked` batches).
package struct WriterMetrics: Sendable {
    let appendedEvents: Counter
    let batchSize: Recorder
    let commitDuration: Metrics.Timer
    let appendLatency: Metrics.Timer
    private let factory: any MetricsFactory

    package init(factory: any MetricsFactory) {
        self.factory = factory
        appendedEvents = Counter(label: "ledger_appended_events_total", factory: factory)
        batchSize = Recorder(label: "ledger_batch_events", aggregate: true, factory: factory)
        commitDuration = Metrics.Timer(label: "ledger_commit_duration_seconds", factory: factory)
        appendLatency = Metrics.Timer(label: "ledger_append_latency_seconds", factory: factory)
    }

    package func outcome(_ outcome: String) -> Counter {
        Counter(label: "ledger_append_requests_total", dimensions: [("outcome", outcome)], factory: factory)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
