import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

/// The event catalogue against what the running ledger really writes: a full flow through the real router
/// and database (payments approved and declined, increment, capture, ship, refund, void, expiry, end-of-day
/// settlement up to the payout and a resolved reconciliation break, a signed checkpoint, an erasure, new prices;
/// Apple Pay tokens accepted and refused), then every `type` in `ledger.events` must be registered, on the
/// streams of its category, at a readable schema version, and every row must decode. Between them the two
/// flows write every type of the catalogue.
@Suite(.machine(.shared)) struct EventCatalogueCompletenessTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    /// What the full flow writes for certain (all but the Apple Pay markers); a type missing from the log
    /// means the flow no longer exercises it.
    static let expectedTypes: Set<String> = [
        "ProductListed", "StockReceived", "ShippingMethodListed",
        "OrderOpened", "StockReserved", "OrderAuthorized", "AuthorizationHoldPlaced", "PaymentDeclined", "ReservationReleased",
        "PaymentOutcomeUnknown", "OrderCancelled", "ProductPriceChanged", "ShippingMethodPriceChanged",
        "HoldIncremented", "HoldCaptured", "OrderPaymentUpdated", "OrderShipped", "StockSold", "HoldRefunded", "HoldReversed",
        "HoldExpired",
        "SettlementBatchOpened", "SettlementBatchClosed", "SettlementBatchSubmitted", "SettlementBatchCleared",
        "SettlementPayoutScheduled", "SettlementPayoutPaid", "ReconciliationRecorded", "ReconciliationBreakFound", "ReconciliationBreakResolved",
        "CheckpointSigned", "ContactErased",
    ]

    static func instant(_ text: String) -> Date { Date(epochMicroseconds: RFC3339.micros(text)!) }

    @Test func everyTypeAFullFlowWritesIsRegistered() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-catalogue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        // Every payout is short by a cent, so that reconciliation finds a break an operator can resolve.
        var faults = FaultConfiguration()
        faults.shortPayPayout = FaultKnob(probability: Rate(numerator: 1, denominator: 1))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(faults: faults), clock: clock.reading)
        try await TestApp.withApp(
            seed: true,
            acquirer: acquirer,
            clock: { clock.now },
            environment: ["LEDGERD_DATA_DIR": directory.path],
            checkpointKey: CheckpointKey.generate()
        ) { client, services in
            func expectOK(_ reply: (HTTPResponse.Status, String), _ what: String) {
                #expect((200..<300).contains(reply.0.code), "\(what): \(reply.1)")
            }
            // Payments (approved, declined, outcome unknown), and every hold operation.
            let shipped = try await storefront.placeOrder(client)
            let voided = try await storefront.placeOrder(client)
            let lapsing = try await storefront.placeOrder(client)
            let (declined, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_chargeDeclined"))
            #expect(declined.code == 402, "\(text)")
            let (unknown, reply) = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_chargeDeclinedProcessingError"))
            #expect(unknown == .badGateway, "\(reply)")
            expectOK(try await backOffice.operate(client, shipped, "increment", #"{"amount": "5.00"}"#), "increment")
            expectOK(try await backOffice.operate(client, shipped, "capture", #"{"amount": "64.00", "final": true}"#), "capture")
            expectOK(try await backOffice.operate(client, shipped, "ship", #"{"carrier": "UPS", "tracking": "1Z999"}"#), "ship")
            expectOK(try await backOffice.operate(client, shipped, "refund", #"{"amount": "10.00", "reason": "damaged"}"#), "refund")
            expectOK(try await backOffice.operate(client, voided, "void"), "void")

            // Two business days settled (the second closes the first one's reconciliation window), then the
            // value date of the payouts; the payout break is resolved by an operator.
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            let first = try #require(try await backOffice.settle(client, "2026-06-17").batches.first?.batchId)
            let next = try await storefront.placeOrder(client)
            expectOK(try await backOffice.operate(client, next, "capture", #"{"amount": "10.00", "final": true}"#), "capture")
            clock.set(TestApp.instant("2026-06-18T22:00:01Z"))
            _ = try await backOffice.settle(client, "2026-06-18")
            clock.set(TestApp.instant("2026-06-22T22:00:01Z"))
            _ = try await backOffice.settle(client, "2026-06-22")
            let found = try #require(try await backOffice.reconciliation(client, first).breaks.first?.breakId)
            expectOK(
                try await client.execute(
                    uri: "/reconciliation/breaks/\(found)/resolve",
                    method: .post,
                    headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
                    body: ByteBuffer(string: #"{"reason": "acquirer ticket 42"}"#)
                ) { ($0.status, String(buffer: $0.body)) },
                "resolve"
            )

            // The untouched hold lapses.
            clock.set(TestApp.instant("2026-06-26T10:00:00Z"))
            #expect(try await services.holds.expireDue() == 1)
            #expect(try await backOffice.order(client, lapsing).status == "expired")

            // A signed checkpoint, an erasure, and new prices from a catalog import.
            let operatorJSON: HTTPFields = [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"]
            expectOK(
                try await client.execute(uri: "/audit/checkpoints", method: .post, headers: operatorJSON) {
                    ($0.status, String(buffer: $0.body))
                },
                "checkpoint"
            )
            expectOK(
                try await client.execute(
                    uri: "/privacy/erasures",
                    method: .post,
                    headers: operatorJSON,
                    body: ByteBuffer(string: #"{"customer": "jane@example.com"}"#)
                ) {
                    ($0.status, String(buffer: $0.body))
                },
                "erasure"
            )
            let prices = """
                {"products": [{"name": "Clock", "description": "Wooden clock", "price": "55.00", "stock": 20}],
                 "shipping_methods": [{"name": "Standard", "description": "Delivers in four days", "transit_days": 4, "price": "6.00"}]}
                """
            let imported = try await CatalogImport.parse(prices, format: "json").run(
                client: services.client,
                now: clock.now,
                logger: TestCluster.logger
            )
            #expect(imported.priceChanged.count == 2, "\(imported)")

            try await Self.expectEveryTypeRegistered(services, including: Self.expectedTypes)
        }
    }

    @Test func theApplePayMarkersAreRegistered() async throws {
        let applePay = ApplePayPaymentTests()
        let fixture = try ApplePayPaymentTests.Fixture()
        try await applePay.withApplePay(fixture) { client, services in
            let accepted = try await storefront.pay(client, ApplePayPaymentTests.body(fixture.token()))
            #expect(accepted.0 == .ok, "\(accepted.1)")
            let wrongAmount = try await storefront.pay(client, ApplePayPaymentTests.body(fixture.token(ApplePayPaymentTests.spec(amount: 5800))))
            #expect(wrongAmount.0 == .unprocessableContent, "\(wrongAmount.1)")
            try await Self.expectEveryTypeRegistered(services, including: ["ApplePayTokenAccepted", "ApplePayTokenRejected"])
        }
    }

    /// Every type in the log is registered, on its category's streams, at a version its entry reads, and
    /// every row decodes through the catalogue; `expected` are types the log must hold.
    static func expectEveryTypeRegistered(_ services: ServiceContainer, including expected: Set<String>) async throws {
        var seen: Set<String> = []
        let rows = try await services.client.query(
            "SELECT type, schema_version, split_part(stream_id, '-', 1), count(*) FROM ledger.events GROUP BY 1, 2, 3 ORDER BY 1, 3"
        )
        for try await (type, version, streamCategory, count) in rows.decode((String, Int32, String, Int64).self) {
            seen.insert(type)
            guard let entry = EventCatalogue.entry(forType: type) else {
                Issue.record("\(count) \(type) event(s) in the log, but \(type) is not in the event catalogue")
                continue
            }
            #expect(entry.streamCategory == streamCategory, "\(type) on a \(streamCategory)- stream")
            #expect(entry.readableSchemaVersions.contains(version), "\(type) at schema version \(version)")
        }
        #expect(expected.subtracting(seen).isEmpty, "the flow wrote no \(expected.subtracting(seen).sorted())")
        let log = try await services.store.read(from: 1, limit: 100_000)
        #expect(!log.isEmpty)
        for recorded in log {
            #expect(throws: Never.self, "position \(recorded.position), \(recorded.type)") { try LedgerEvent.decode(recorded) }
        }
    }
}
