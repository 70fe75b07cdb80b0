import Foundation
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO

/// `ledgerd bench expiry`: the time the sweeper takes to expire `holds` holds that all pass their
/// expiry at once. Setup (not timed): one product with enough stock, then `holds` orders authorized
/// at the acquirer model, opened and recorded through the pure payment steps and committed with
/// their read-model rows, in batches. Timed, once the clock passed every expiry:
/// ``HoldService/expireDue(now:batchSize:)`` from the first due hold to the last — reading the due
/// holds, asking the acquirer about each, deciding, and appending hold expiry + order status + stock release.
/// Runs on the same kind of private durable cluster as `bench append` (database dropped first).
@MemberwiseInit
public struct ExpiryBenchmark: Sendable {
    public var holds: Int
    public var sweepBatch: Int
    public let dataDirectory: URL
    public let logger: Logger

    public func run(migrations: [Migration]) async throws -> String {
        let logger = self.logger
        let holds = self.holds
        let sweepBatch = self.sweepBatch
        return try await BenchLedger.withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer in
            let store = EventStore(client: client, logger: logger)
            let aggregates = AggregateStore(writer: writer, store: store)
            let t0 = Date(timeIntervalSince1970: 1_790_000_000)
            let clock = SimulatedClock(t0)
            let acquirer = AcquirerModel(
                seed: 1,
                configuration: AcquirerModelConfiguration(defaultCreditLimit: Money(minorUnits: Int64.max / 4, currency: .usd)),
                clock: { clock.now }
            )
            try await Self.setUp(holds: holds, at: t0, acquirer: acquirer, aggregates: aggregates)
            let service = HoldService(
                aggregates: aggregates,
                idempotency: IdempotencyStore(client: client, logger: logger),
                intents: HoldIntentLog(store: HoldIntentStore(client: client, logger: logger)),
                dueHolds: ProjectionHoldReader(client: client, logger: logger),
                acquirer: acquirer,
                clock: { clock.now },
                logger: logger
            )
            clock.advance(by: 30 * 86_400)  // past every hold's expiry, at the acquirer too
            let start = ContinuousClock.now
            let expired = try await service.expireDue(now: clock.now, batchSize: sweepBatch)
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            var count: Int64 = 0
            for try await n in try await client.query("SELECT count(*) FROM ledger.events WHERE type = 'HoldExpired'", logger: logger).decode(
                Int64.self
            ) { count = n }
            let verified = try await ChainVerifier(client: client, logger: logger).verify().ok
            return String(
                format: "expired %d holds in %.2f s = %.0f holds/s (sweep batch %d); HoldExpired events: %lld; chain verified: %@",
                expired,
                seconds,
                Double(expired) / seconds,
                sweepBatch,
                count,
                verified ? "yes" : "NO"
            )
        }
    }

    /// One product with `holds` units, and `holds` orders authorized at `acquirer` (which sets their expiry).
    static func setUp(holds: Int, at t0: Date, acquirer: AcquirerModel, aggregates: AggregateStore) async throws {
        let context = DecisionContext(now: t0)
        let productID = ProductID("bench-widget")!
        let methodID = ShippingMethodID("bench-post")!
        let listed = try ProductDecider.decide(
            .list(
                sku: nil,
                name: "Bench widget",
                description: "",
                imageFile: "bench-widget.png",
                price: Money(minorUnits: 1_000, currency: .usd),
                initialStock: Int64(holds)
            ),
            product: productID,
            state: nil,
            context: context
        ).get()
        let shipping = try ShippingMethodDecider.decide(
            .list(name: "Bench post", description: "", transitDays: 2, price: Money(minorUnits: 500, currency: .usd)),
            method: methodID,
            state: nil,
            context: context
        ).get()
        var states = AggregateStates()
        let catalog = AppendPlan([
            PlannedAppend(streamID: productID.streamID, expectedVersion: .noStream, events: listed.map(DomainEvent.product)),
            PlannedAppend(streamID: methodID.streamID, expectedVersion: .noStream, events: shipping.map(DomainEvent.shippingMethod)),
        ])
        guard try await aggregates.commit(catalog, on: states, now: t0, metadata: EventMetadata(actor: "bench")) != nil else { return }
        for event in catalog.events { states.apply(event) }
        var made = 0
        while made < holds {
            let before = states
            var builder = AppendPlanBuilder()
            func add(_ plan: AppendPlan) {
                builder.add(plan)
                for event in plan.events { states.apply(event) }
            }
            for _ in 0..<min(400, holds - made) {
                let orderID = OrderID(UUID.newTimeOrderedString())!
                add(
                    try PaymentFlow.placeOrder(
                        PlaceOrder(
                            orderID: orderID,
                            lines: [RequestedLine(productID: productID)],
                            shippingMethodID: methodID,
                            contactRef: orderID.contactReference,
                            claimedAmount: nil
                        ),
                        order: nil,
                        products: states.products,
                        shippingMethod: states.shippingMethods[methodID],
                        context: context
                    ).get()
                )
                let order = states.orders[orderID]!
                let approval = try await acquirer.authorize(
                    AuthorizationRequest(
                        merchantReference: order.merchantReference,
                        amount: order.amounts.total,
                        paymentMethod: .token("tok_visa")
                    )
                )
                add(try PaymentFlow.recordAuthorization(approval, order: order, products: states.products, context: context).get())
                made += 1
            }
            guard try await aggregates.commit(builder.plan, on: before, now: t0, metadata: EventMetadata(actor: "bench")) != nil else {
                throw ConfigurationError("bench setup conflicted")
            }
            states.orders = [:]
            states.holds = [:]
        }
    }
}
