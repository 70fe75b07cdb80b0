import LedgerCore

/// The stream reads the command runner (``AggregateStore``) and the services' use cases make: implemented by the event
/// store on PostgreSQL (LedgerPostgres' `EventStore`), and by an in-memory log for simulations.
package protocol StreamReads: Sendable {
    /// The whole stream, in version order (empty: no such stream).
    func readStream(_ streamID: StreamID) async throws -> [RecordedEvent]
    /// The stream's events after `version`, in version order.
    func readStream(_ streamID: StreamID, after version: Int64) async throws -> [RecordedEvent]
    /// The events of `streams`, in log order.
    func readStreams(_ streams: [StreamID]) async throws -> [RecordedEvent]
    /// The events of `streams` at positions up to `position`, in log order.
    func readStreams(_ streams: [StreamID], through position: Int64) async throws -> [RecordedEvent]
}

/// The log's head as the event store reads it (issue 56, a read port): the position a reply reflects, whether a ledger
/// is empty. On PostgreSQL, LedgerPostgres' `EventStore` (on the primary or a replica).
package protocol HeadReads: Sendable {
    /// The last position and its hash (position 0: an empty ledger).
    func head() async throws -> (position: Int64, hash: [UInt8])
}

/// The log read by position and time (issue 56, a read port): the accounting journal's ranges. On PostgreSQL,
/// LedgerPostgres' `EventStore` (`ledger.position_at`, today's SQL).
package protocol PositionReads: StreamReads {
    /// The last position recorded at or before `micros` (0: none).
    func position(atMicros micros: Int64) async throws -> Int64
    /// At most `limit` events after `position` up to `through` that `filter` keeps, in log order.
    func events(after position: Int64, through: Int64, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent]
}

/// One event by its position (issue 56, a read port): what a checkpoint signs. On PostgreSQL, LedgerPostgres'
/// `EventStore`.
package protocol EventAtPosition: Sendable {
    /// The event at `position` (nil: none).
    func event(at position: Int64) async throws -> RecordedEvent?
}

/// The highest position the services may serve or sign (issue 56, a read port): durable, never one a failover could
/// take back. On PostgreSQL, LedgerPostgres' `StoreServableHead` (`HeadWatcher.servable(of:)` on the event store).
package protocol ServableHead: Sendable {
    func servable() async throws -> Int64
}
