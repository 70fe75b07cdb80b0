import Foundation
import LedgerCore

/// `GET /health`'s database probe: the position of the ledger's last event (a read of the head row).
public struct EventStoreHealthProbe: Sendable {
    let store: EventStore
    public init(store: EventStore) { self.store = store }
    public func lastPosition() async throws -> Int64 { try await store.head().position }
}
