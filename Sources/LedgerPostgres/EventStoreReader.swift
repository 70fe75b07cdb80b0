import Foundation
import LedgerCore
import LedgerMacros

/// The history endpoints' reads, served by the event store and the Swift chain verifier.
public struct EventStoreReader: Sendable {
    let store: EventStore
    let verifier: ChainVerifier
    public init(store: EventStore, verifier: ChainVerifier) {
        self.store = store
        self.verifier = verifier
    }
    public func events(stream: StreamID, afterVersion version: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await store.readStream(stream, after: version, limit: limit)
    }
    public func events(after position: Int64, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent] {
        try await store.events(after: position, matching: filter, limit: limit)
    }
    public func orderHistory(_ orderID: String) async throws -> [RecordedEvent] { try await store.orderHistory(orderID) }
    public func verifyChain(from: Int64, to: Int64?) async throws -> ChainReport { try await verifier.verify(from: from, to: to) }
}
