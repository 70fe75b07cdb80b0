import Foundation
import LedgerCore
import LedgerMacros

/// The history endpoints' reads, served by the event store and the Swift chain verifier. The feed's page
/// (`GET /events`) reaches no further than the durable head (``HeadWatcher``): a consumer paging the log is never served
/// an event a failover could take back. A stream's or an order's history and a verification read what the store holds.
public struct EventStoreReader: Sendable {
    let store: EventStore
    let verifier: ChainVerifier
    let watcher: HeadWatcher
    public init(store: EventStore, verifier: ChainVerifier, watcher: HeadWatcher) {
        self.store = store
        self.verifier = verifier
        self.watcher = watcher
    }
    public func events(stream: StreamID, afterVersion version: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await store.readStream(stream, after: version, limit: limit)
    }
    public func events(after position: Int64, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent] {
        let through = try await watcher.servable(of: store)
        return try await store.events(after: position, through: through, matching: filter, limit: limit)
    }
    public func orderHistory(_ orderID: String) async throws -> [RecordedEvent] { try await store.orderHistory(orderID) }
    public func verifyChain(from: Int64, to: Int64?) async throws -> ChainReport { try await verifier.verify(from: from, to: to) }
}
