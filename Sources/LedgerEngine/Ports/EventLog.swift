import LedgerCore

/// The event log under the writer's batching loop: a port, implemented on PostgreSQL with today's SQL
/// (LedgerPostgres) and in memory for simulations (``InMemoryEventLog``), with the same hash chain.
///
/// The loop plans a batch (``BatchPlanner``) on what it believes; ``commit(_:recordedAtMicros:)`` verifies those
/// beliefs under the log's one lock and appends the batch whole, or appends nothing and answers the truth.
package protocol EventLog: Sendable {
    /// Commits one planned batch as `ledger.append_batch` does (sql/0002, sql/0017, sql/0023): `stale` rows for every
    /// stream whose version is not the one believed and `key_exists` rows for every probed key already stored (then
    /// nothing is appended), else the events linked onto the head at `recordedAtMicros` (never before the head's),
    /// the idempotency records, projection rows and contacts stored, and one `appended` row with the first position.
    func commit(_ batch: BatchStatement, recordedAtMicros: Int64) async throws -> [BatchAnswerRow]

    /// The current version of each stream (0: none), read without the lock (``commit(_:recordedAtMicros:)`` checks).
    func versions(of streams: [String]) async throws -> [String: Int64]

    /// The events of `streams` after the given versions (a stream not in `versions`: all of it), in log order.
    func read(_ streams: [StreamID], after versions: [StreamID: Int64]) async throws -> [RecordedEvent]

    /// The end of the chain: last position, its hash, its `recorded_at`.
    func head() async throws -> ChainHead

    /// Whether `error`, thrown by ``commit(_:recordedAtMicros:)``, is the log refusing the batch's statement itself (a
    /// payload it cannot store) rather than failing: the writer then commits the batch's requests one by one.
    func isStatementRejected(_ error: any Error) -> Bool

    /// `error`, thrown by ``commit(_:recordedAtMicros:)`` or ``versions(of:)``, as the writer's callers get it.
    func appendError(from error: any Error) -> AppendError
}

extension EventLog {
    /// A log that throws only ``AppendError``s rejects no statement of its own.
    package func isStatementRejected(_ error: any Error) -> Bool { false }

    package func appendError(from error: any Error) -> AppendError {
        error as? AppendError ?? .storageFailure("the event log failed")
    }
}

extension ChainHead {
    /// The head of an empty log (sql/0001: position 0, 32 zero bytes, the epoch).
    package static let genesis = ChainHead(position: 0, hash: [UInt8](repeating: 0, count: 32), recordedAtMicros: 0)
}

extension EventLog {
    /// Commits `requests` as one batch on this log by performing ``BatchPlanner``'s actions — the writer's loop without
    /// its commands, cache and durability: what a simulation or a test appends with. Each request's result, in order;
    /// a batch the planner gives up on throws its error.
    package func append(_ requests: [AppendRequest], clock: any LedgerClock) async throws -> [Result<AppendResult, AppendError>] {
        var planner = BatchPlanner(requests: requests)
        var action = planner.startAttempt(cached: [:])
        var learned: [String: Int64] = [:]
        while true {
            switch action {
            case .loadVersions(let streams):
                action = planner.versionsLoaded(try await versions(of: streams))
            case .execute(let plan):
                action = planner.batchAnswered(try await commit(plan.statement, recordedAtMicros: clock.now().epochMicroseconds))
            case .redecide(let versions):
                learned.merge(versions) { _, new in new }
                action = planner.startAttempt(cached: learned)
            case .complete(let results, _):
                return results
            case .fail(let error):
                throw error
            }
        }
    }
}
