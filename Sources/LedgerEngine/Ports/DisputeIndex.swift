import LedgerCore

/// The dispute index (issue 56, a read port): every dispute's events, for the dispute list, an order's other disputes
/// and settlement's dispute money. On PostgreSQL, LedgerPostgres' `DisputeReader` (today's SQL); in memory,
/// ``InMemoryEventLog``.
package protocol DisputeIndex: Sendable {
    /// Every dispute stream's events (`dispute-…`), in log order.
    func allDisputeEvents() async throws -> [RecordedEvent]
}

extension DisputeIndex {
    /// The disputes folded from their streams, by id.
    package func disputes() async throws -> [String: DisputeState] {
        var states: [String: DisputeState] = [:]
        for recorded in try await allDisputeEvents() {
            let event = try DisputeEvent.decode(recorded)
            states[event.disputeID] = DisputeState.evolve(states[event.disputeID], event)
        }
        return states
    }
}
