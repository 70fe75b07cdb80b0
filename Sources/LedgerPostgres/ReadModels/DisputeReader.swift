import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Reads the dispute streams (`dispute-<id>`) for the dispute list and an order's disputes: the
/// events of every dispute stream in log order, folded by the caller (``DisputeState``).
public struct DisputeReader: PostgresStore {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    /// Every dispute stream's events, in position order. A scan of the log filtered by stream
    /// category: disputes are few next to payments (a projection table is the step after this one).
    public func allDisputeEvents() async throws -> [RecordedEvent] {
        try await EventStore.decode(
            client.query(
                "\(unescaped: EventStore.columns) WHERE left(stream_id, 8) = 'dispute-' ORDER BY position",
                logger: logger
            )
        )
    }

    /// The disputes folded from their streams, by id.
    public func disputes() async throws -> [String: DisputeState] {
        var states: [String: DisputeState] = [:]
        for recorded in try await allDisputeEvents() {
            let event = try DisputeEvent.decode(recorded)
            states[event.disputeID] = DisputeState.evolve(states[event.disputeID], event)
        }
        return states
    }
}
