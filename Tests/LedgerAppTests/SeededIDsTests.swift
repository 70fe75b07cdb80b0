import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

/// Every id a payment mints — the order's id, the correlation id, every event id — comes from the one `IDSource` the
/// application was built with (the writer's, read by the services), so a seeded source makes a run's ids repeatable:
/// the ground a deterministic simulation stands on (issue 56). Two apps on fresh databases with one seed mint the same
/// ids for the same payment; another seed mints others. Before the services read the writer's source, the order and
/// correlation ids were minted by `UUID.newTimeOrdered()` in the services and differed run to run.
@Suite(.machine(.shared)) struct SeededIDsTests {
    /// The order id of one payment, and every event the payment appended (the demo catalog's seeding left out), as
    /// `stream id | event id | metadata`.
    static func payment(seed: UInt64) async throws -> (order: String, events: [String]) {
        let result = Mutex<(String, [String])>(("", []))
        try await TestApp.withApp(seed: true, clock: { TestApp.instant("2030-06-19T10:00:00Z") }, ids: SeededIDs(seed: seed)) {
            client,
            services in
            let before = try await services.store.head().position
            let order = try await StorefrontDriver().placeOrder(client)
            let events = try await services.store.read(from: before + 1, limit: 100)
            result.withLock { $0 = (order, events.map { "\($0.streamID) | \($0.eventID) | \($0.metadata)" }) }
        }
        return result.withLock { $0 }
    }

    @Test func oneSeedMintsTheSameIdsAndAnotherSeedOthers() async throws {
        let first = try await Self.payment(seed: 7)
        let again = try await Self.payment(seed: 7)
        let other = try await Self.payment(seed: 8)
        #expect(first.events.count >= 2, "the payment appended \(first.events)")
        #expect(first.order == again.order)
        #expect(first.events == again.events)
        #expect(first.order != other.order)
        #expect(Set(first.events).isDisjoint(with: other.events))
    }
}
