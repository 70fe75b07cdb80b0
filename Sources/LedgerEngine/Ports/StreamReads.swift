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
