import Foundation
import LedgerCore

/// `GET /health`'s database probe: the position of the ledger's last event (a read of the head row), or
/// ``DatabaseUnavailableError`` — at once while the database is known to be unreachable, else after `deadline`.
public struct EventStoreHealthProbe: Sendable {
    let store: EventStore
    let deadline: Duration

    public init(store: EventStore, deadline: Duration = .milliseconds(1500)) {
        self.store = store
        self.deadline = deadline
    }

    public func lastPosition() async throws -> Int64 {
        let store = self.store
        return try await withDeadline(deadline) { try await store.head().position }
    }
}
