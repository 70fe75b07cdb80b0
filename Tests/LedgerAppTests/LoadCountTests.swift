import Foundation
import HummingbirdTesting
import LedgerAPI
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// How often one request loads the aggregates it works on, counted by the services' shared
/// ``AggregateStore``. A use case answers from the states its own appends leave (``AggregateStore``
/// returns them) and decides its first attempt on the states it already holds, instead of loading
/// the order and hold again before every step.
///
/// The counts are deltas around one request, after a warm-up payment (so that name look-ups and the
/// catalog cache are as in steady state). The background loops (recovery, expiry) sweep at start
/// and then every 30 s: with no waiting orders or due holds, they load nothing in between.
@Suite(.machine(.shared)) struct LoadCountTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    @Test func anApprovedPaymentLoadsItsOrderOnceAndNoHold() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let loader = services.payments.aggregates
            _ = try await storefront.placeOrder(client)
            let before = loader.loads
            let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody())
            let loads = loader.loads - before
            #expect(status == .ok, "\(text)")
            let reply = try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8))
            #expect(reply.status == .succeeded)
            #expect(reply.orderStatus == .authorized)
            // Authorizing needs the order (its amount and reference); recording decides on that same
            // state, and the reply comes from the states the append left.
            #expect(loads.orders == 1, "\(loads)")
            #expect(loads.holds == 0, "\(loads)")
            // Reserving decides on the product, recording the authorization on the product again (it
            // moved in between); the shipping method is read fresh for the price.
            #expect(loads.products == 2, "\(loads)")
            #expect(loads.shippingMethods == 1, "\(loads)")
        }
    }

    /// The writer's fresh read of many orders and holds (an expiry page after a conflict) is one query; its states
    /// are the ones a stream-by-stream read folds, and it leaves them remembered at their versions.
    @Test func aFreshReadOfSeveralOrdersAndHoldsFoldsAsStreamByStream() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            var ids: [OrderID] = []
            for _ in 0..<3 { ids.append(OrderID(try await storefront.placeOrder(client))!) }
            _ = try await backOffice.operate(client, ids[0].rawValue, "capture", key: "first")
            let keys = AggregateKeys(orders: ids, holds: ids)
            let together = try await services.payments.aggregates.states(keys, fresh: Set(keys.streams))
            let alone = AggregateStore(writer: services.writer, store: services.store)
            for id in ids {
                let (order, hold) = (try await alone.order(id), try await alone.hold(id))
                #expect(together.orders[id] == order && together.holds[id] == hold, "\(id)")
                #expect(try await services.payments.aggregates.order(id, fresh: false)?.version == order?.version)
                #expect(try await services.payments.aggregates.hold(id, fresh: false)?.version == hold?.version)
            }
            #expect(together.holds[ids[0]]?.balance.captured.isZero == false)
        }
    }

    @Test func aCaptureLoadsItsOrderTwiceAndItsHoldOnce() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let loader = services.holds.aggregates
            let order = try await storefront.placeOrder(client)
            let before = loader.loads
            let (status, text) = try await backOffice.operate(client, order, "capture", key: "capture-once")
            let loads = loader.loads - before
            #expect(status == .ok, "\(text)")
            #expect(reply(text)?.status == .captured)
            #expect(reply(text)?.result == .applied)
            // Once to find the order (404 otherwise) and once in the order's turn, where the operation is
            // decided; the hold once, in that turn. Recording decides on those states, and the reply
            // comes from the states the append left.
            #expect(loads.orders == 2, "\(loads)")
            #expect(loads.holds == 1, "\(loads)")
            #expect(loads.products == 1, "\(loads)")

            // A replay of the same request answers from the ledger: the order and hold, nothing decided.
            let replayStart = loader.loads
            let (again, replayed) = try await backOffice.operate(client, order, "capture", key: "capture-once")
            let replayLoads = loader.loads - replayStart
            #expect(again == .ok, "\(replayed)")
            #expect(reply(replayed)?.result == .replayed)
            #expect(reply(replayed)?.status == .captured)
            #expect(replayLoads == LoadCounts(orders: 1, holds: 1), "\(replayLoads)")
        }
    }

    /// The hold operation's reply, or nil when it is not one (usable inside `#expect`).
    func reply(_ text: String) -> HoldOperationReply? { try? WireJSON.decode(HoldOperationReply.self, from: text) }
}
