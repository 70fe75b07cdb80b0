import Foundation
import LedgerCore
import LedgerEngine
import Logging
import PostgresNIO

/// Reads the dispute streams (`dispute-<id>`) for the dispute list and an order's disputes: the
/// events of every dispute stream in log order, folded by the caller (``DisputeState``).
public struct DisputeReader: PostgresStore {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    /// Every dispute stream's events, in position order: `stream_id LIKE 'dispute-%'`, exact under any collation, which
    /// PostgreSQL turns into a range on the streams' index (sql/0020) where the collation is C, as the embedded
    /// cluster's is (`left(stream_id, 8) = 'dispute-'` scanned the whole log: 0.3 s at a million events,
    /// docs/performance.md). Disputes are few next to payments (a projection table is the step after this one).
    public func allDisputeEvents() async throws -> [RecordedEvent] {
        try await EventStore.decode(
            client.query(
                "\(unescaped: EventStore.columns) WHERE stream_id LIKE 'dispute-%' ORDER BY position",
                logger: logger
            )
        )
    }
}

/// The dispute index the services read (``DisputeIndex``): today's SQL; the folding is the port's.
extension DisputeReader: DisputeIndex {}
