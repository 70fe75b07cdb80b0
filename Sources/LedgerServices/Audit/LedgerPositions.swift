import LedgerEngine

/// Which position of the ledger a read reflects, and waiting for a position (`Ledger-Position`, `min_position`).
///
/// Auditors' reads (history, as-of, the event feed and exports, verification) may be served by a streaming replica
/// (`LEDGERD_READ_DATABASE_URL`). A replica replays the primary's log a little later, so each such reply names the
/// position of the ledger's head on the database that served it, read before the reply: every event up to it is in
/// what the reply was read from. A reader that needs a later position (its own write, or a position it saw on the
/// primary) asks for it: the read waits up to ``wait`` for the replica to replay it, then is refused with 503
/// `replica_behind` (retry shortly). On the primary the head is authoritative — a position beyond it does not exist
/// yet — so the read answers at once.
public struct LedgerPositions: Sendable {
    /// The event store on the primary or the replica (LedgerPostgres' `EventStore`).
    let store: any HeadReads
    /// True when ``store`` reads a replica.
    public let isReplica: Bool
    /// The longest a read waits for the replica to replay a position.
    public let wait: Duration
    let poll: Duration

    package init(store: any HeadReads, isReplica: Bool, wait: Duration, poll: Duration = .milliseconds(20)) {
        self.store = store
        self.isReplica = isReplica
        self.wait = wait
        self.poll = poll
    }

    /// The head's position once it is at least `wanted` (nil: now); throws `replica_behind` when the replica has not
    /// replayed `wanted` within ``wait``.
    public func position(atLeast wanted: Int64?) async throws -> Int64 {
        let deadline = ContinuousClock.now.advanced(by: wait)
        while true {
            let head: Int64
            do {
                head = try await store.head().position
            } catch {
                throw ServiceError.interpreting(error) ?? error
            }
            guard let wanted, isReplica, head < wanted else { return head }
            guard ContinuousClock.now < deadline else {
                throw ServiceError(
                    .unavailable,
                    code: "replica_behind",
                    message: "the replica has replayed the ledger up to position \(head), not yet \(wanted); retry shortly",
                    field: "min_position"
                )
            }
            try await Task.sleep(for: poll)
        }
    }
}
