import Foundation
import LedgerCore

/// `GET /health`'s database probe: the position of the ledger's last event (a read of the head row), or
/// ``DatabaseUnavailableError`` — at once while a watched ``DatabaseClient`` finds the database unreachable, and
/// after `deadline` (when given) if the read does not come back in time.
public struct EventStoreHealthProbe: Sendable {
    let store: EventStore
    let deadline: Duration?

    public init(store: EventStore, deadline: Duration? = nil) {
        self.store = store
        self.deadline = deadline
    }

    public func lastPosition() async throws -> Int64 {
        let store = self.store
        guard let deadline else { return try await store.head().position }
        return try await withDeadline(deadline) { try await store.head().position }
    }
}
