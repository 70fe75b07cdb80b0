import LedgerEngine

/// The servable head as the services read it (``ServableHead``): the watcher's durable head on the event store's head
/// (the replica's, when the store reads one).
package struct StoreServableHead: ServableHead {
    package let watcher: HeadWatcher
    package let store: EventStore

    package init(watcher: HeadWatcher, store: EventStore) {
        self.watcher = watcher
        self.store = store
    }

    package func servable() async throws -> Int64 { try await watcher.servable(of: store) }
}
