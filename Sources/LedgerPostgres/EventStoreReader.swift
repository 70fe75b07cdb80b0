import Foundation
import LedgerCore
import LedgerMacros

/// The history endpoints' reads, served by the event store and the Swift chain verifier.
@MemberwiseInit
public struct EventStoreReader: Sendable {
    let store: EventStore
    let verifier: ChainVerifier
    public func events(stream: StreamID) async throws -> [RecordedEvent] { try await store.readStream(stream) }
    public func events(after position: Int64, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent] {
        try await store.events(after: position, matching: filter, limit: limit)
    }
    public func orderHistory(_ orderID: String) async throws -> [RecordedEvent] { try await store.orderHistory(orderID) }
    public func verifyChain(from: Int64, to: Int64?) async throws -> ChainReport { try await verifier.verify(from: from, to: to) }
}
