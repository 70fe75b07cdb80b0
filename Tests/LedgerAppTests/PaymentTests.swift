import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Logging
import Synchronization
import Testing

/// `POST /payment` end to end through the real router: a real database, the acquirer model.
@Suite(.machine(.shared)) struct PaymentTests {
    let storefront = StorefrontDriver()

    @Test func theAppsExactRequestAuthorizesAndReservesStock() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody())
            #expect(status == .ok, "\(text)")
            let reply = try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8))
            #expect(reply.status == .succeeded && reply.orderStatus == .authorized && reply.amount == 5900)
            #expect(!reply.id.isEmpty && reply.id != reply.orderId)
            let row = try await storefront.clockRow(client)
            #expect(row.quantity_on_hand == 10 && row.reserved == 1 && row.available == 9)
            #expect(try await services.eventCount(type: "AuthorizationHoldPlaced") == 1)
            #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
            // No cardholder or contact data in the log.
            let log = try await services.store.read(from: 1, limit: 100_000).map { $0.data + $0.metadata }.joined()
            #expect(!log.contains("Appleseed") && !log.contains("Infinite Loop") && !log.contains("jane@"))
        }
    }

    @Test(arguments: [
        ("tok_chargeDeclined", "05"), ("tok_chargeDeclinedInsufficientFunds", "51"), ("tok_chargeDeclinedExpiredCard", "54"),
        ("tok_chargeDeclinedProcessingError", "91"),
    ])
    func declinesAndUnknownOutcomesLeaveAvailabilityUnchanged(token: String, code: String) async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(source: token))
            let reply = try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8))
            #expect(reply.status == .failed && reply.declineCode == code, "\(text)")
            #expect(status == (code == "91" ? .badGateway : HTTPResponse.Status(code: 402)))
            #expect(reply.orderStatus == (code == "91" ? .cancelled : .declined))
            let row = try await storefront.clockRow(client)
            #expect(row.reserved == 0 && row.available == 10)
            #expect(try await services.eventCount(type: "AuthorizationHoldPlaced") == 0)
        }
    }

    @Test func aCardWhoseOpenToBuyIsUsedUpIsDeclined51() async throws {
        let limited = AcquirerModel(
            seed: 7,
            configuration: AcquirerModelConfiguration(creditLimits: [
                CreditLimit(token: "tok_visa", limit: Money(minorUnits: 10_000, currency: .usd))
            ]),
            clock: { Date() }
        )
        try await TestApp.withApp(seed: true, acquirer: limited) { client, _ in
            #expect(try await storefront.pay(client, StorefrontDriver.paymentBody()).0 == .ok)
            let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody())
            #expect(status == HTTPResponse.Status(code: 402))
            #expect(try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8)).declineCode == "51")
            #expect(try await storefront.clockRow(client).reserved == 1)
        }
    }

    @Test func noOversellUnderConcurrentPayments() async throws {
        let model = AcquirerModel(seed: 11, clock: { Date() })
        try await TestApp.withApp(seed: true, acquirer: model) { client, services in
            // 7 of the 10 clocks sold first: 3 available.
            for _ in 0..<7 { #expect(try await storefront.pay(client, StorefrontDriver.paymentBody()).0 == .ok) }
            #expect(try await storefront.clockRow(client).available == 3)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<200 { group.addTask { try await storefront.pay(client, StorefrontDriver.paymentBody()).0 } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 3)
            #expect(statuses.filter { $0 == .conflict }.count == 197)
            let row = try await storefront.clockRow(client)
            #expect(row.reserved == 10 && row.available == 0)
            #expect(try await services.eventCount(type: "AuthorizationHoldPlaced") == 10)
            #expect(try await services.eventCount(type: "OrderOpened") == 10)
            // The refused payments never reached the acquirer: it holds exactly the 10 orders' holds, all open.
            let orders = try await services.store.read(from: 1, limit: 100_000).filter { $0.type == "OrderOpened" }
                .map { $0.streamID.rawValue.replacingOccurrences(of: "order-", with: "") }
            var open = 0
            for order in orders {
                if case .found(let details) = try await model.query(merchantReference: order), details.status == .open { open += 1 }
            }
            #expect(open == 10)
        }
    }

    @Test func badInputGetsA4xxNamingTheFieldAndAppendsNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let before = try await services.store.head().position
            let cases: [(Data, String, Int, String?)] = [
                (StorefrontDriver.paymentBody(amount: 5800), "application/json", 422, "amount"),
                (StorefrontDriver.paymentBody(product: "Teapot"), "application/json", 422, "description"),
                (StorefrontDriver.paymentBody(method: "Teleport"), "application/json", 422, "shipping_method_name"),
                (StorefrontDriver.paymentBody(extra: ["currency": "EUR"]), "application/json", 422, "currency"),
                (StorefrontDriver.paymentBody(extra: ["amount": -5]), "application/json", 422, "amount"),
                (StorefrontDriver.paymentBody(extra: ["amount": 1e30]), "application/json", 422, "amount"),
                (StorefrontDriver.paymentBody(extra: ["quantity": 0]), "application/json", 422, "quantity"),
                (StorefrontDriver.paymentBody(extra: ["shipping_zip": 95014]), "application/json", 422, "shipping_zip"),
                (StorefrontDriver.paymentBody(extra: ["shipping_zip": "9\u{0}"]), "application/json", 422, "shipping_zip"),
                (StorefrontDriver.paymentBody(extra: ["shipping_street": "1 Infinite\u{0} Loop"]), "application/json", 422, "shipping_street"),
                (StorefrontDriver.paymentBody(extra: ["shipping_city": "Cuper\u{7}tino"]), "application/json", 422, "shipping_city"),
                (Data("{\"gateway\": ".utf8), "application/json", 400, nil),
                (StorefrontDriver.paymentBody(), "text/plain", 415, nil),
                (Data(repeating: 0x20, count: 70_000), "application/json", 413, nil),
            ]
            for (body, contentType, expected, field) in cases {
                let (status, text) = try await storefront.pay(client, body, contentType: contentType)
                #expect(Int(status.code) == expected, "\(text)")
                #expect(text.contains(#""error":"#))
                if let field { #expect(text.contains(#""field":"\#(field)""#), "\(text)") }
            }
            #expect(try await services.store.head().position == before)
            #expect(try await storefront.clockRow(client).reserved == 0)
            // No personal data is left behind by a refused payment.
            #expect(try await services.shippingContactCount() == 0)
            #expect(try await storefront.pay(client, StorefrontDriver.paymentBody()).0 == .ok)
            #expect(try await services.shippingContactCount() == 1)
        }
    }

    /// A NUL in a shipping field is refused as input (422 naming the field), appends nothing, and nothing of
    /// the address reaches the log, at any level.
    @Test func aNulInAShippingFieldIsA422AndNothingOfTheAddressIsLogged() async throws {
        let lines = LogLines()
        let logger = Logger(label: "ledger.tests.nul") { _ in LogLines.Handler(lines: lines) }
        try await TestApp.withApp(seed: true, logger: logger, poolLogger: logger) { client, services in
            let before = try await services.store.head().position
            let body = StorefrontDriver.paymentBody(extra: ["shipping_street": "77 Piistreet\u{0} Rd", "shipping_zip": "9\u{0}"])
            let (status, text) = try await storefront.pay(client, body)
            #expect(status.code == 422 && text.contains(#""field":"shipping_"#), "\(text)")
            #expect(try await services.store.head().position == before)
            #expect(try await services.shippingContactCount() == 0)
        }
        #expect(!lines.all.contains { $0.contains("Piistreet") }, "\(lines.all)")
    }

    @Test func aRetryWithTheSameKeyReturnsTheSameReplyAndAuthorizesOnce() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let first = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "checkout-42")
            let second = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "checkout-42")
            #expect(first.0 == .ok && second.0 == .ok)
            #expect(first.1 == second.1)
            #expect(try await services.eventCount(type: "OrderOpened") == 1)
            #expect(try await services.eventCount(type: "AuthorizationHoldPlaced") == 1)
            #expect(try await storefront.clockRow(client).reserved == 1)
        }
    }

    /// L9: an anonymous payment's key is bound to its body (the key and the body's hash are the stored key): only the
    /// identical body — its card token included — gets the first reply; another body under the same key is a payment of
    /// its own, not a 409, so a key someone else used first can neither be taken over nor blocked.
    @Test func aPaymentKeyIsBoundToItsBodySoNobodyCanSquatIt() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let squatter = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_mastercard"), key: "checkout-44")
            #expect(squatter.0 == .ok, "\(squatter.1)")
            let shopper = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "checkout-44")
            #expect(shopper.0 == .ok, "\(shopper.1)")
            let squatted = try WireJSON.decode(PaymentReply.self, from: squatter.1)
            let own = try WireJSON.decode(PaymentReply.self, from: shopper.1)
            #expect(own.orderId != squatted.orderId)
            let other = try await storefront.pay(client, StorefrontDriver.paymentBody(amount: 3200, product: "Pen"), key: "checkout-44")
            #expect(other.0 == .ok, "\(other.1)")
            #expect(try WireJSON.decode(PaymentReply.self, from: other.1).orderId != own.orderId)
            #expect(try await services.eventCount(type: "OrderOpened") == 3)
            let head = try await services.store.head().position
            let replay = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "checkout-44")
            #expect(replay.0 == .ok && replay.1 == shopper.1, "\(replay.1)")
            #expect(try await services.store.head().position == head)
        }
    }

    /// L9: a hold operation's key is scoped by the principal that sent it: a second operator's capture under the first
    /// one's key and body is a capture of its own (not the first one's replay), and each operator's retry replays
    /// only its own.
    @Test func aHoldOperationKeyIsScopedByThePrincipal() async throws {
        let second = "second-operator-key"
        try await TestApp.withApp(seed: true, environment: ["LEDGERD_OPERATOR_KEYS": "\(TestApp.operatorKey), \(second)"]) { client, services in
            let order = try await storefront.placeOrder(client)
            let backOffice = BackOfficeDriver()
            let body = #"{"amount": "1.00"}"#
            let first = try await backOffice.operate(client, order, "capture", body, key: .given("capture-1"))
            let other = try await backOffice.operate(client, order, "capture", body, key: .given("capture-1"), apiKey: second)
            #expect(first.0 == .ok && other.0 == .ok, "\(first) \(other)")
            #expect(try WireJSON.decode(HoldOperationReply.self, from: first.1).result == .applied)
            #expect(try WireJSON.decode(HoldOperationReply.self, from: other.1).result == .applied, "\(other.1)")
            for apiKey in [TestApp.operatorKey, second] {
                let retry = try await backOffice.operate(client, order, "capture", body, key: .given("capture-1"), apiKey: apiKey)
                #expect(retry.0 == .ok && (try? WireJSON.decode(HoldOperationReply.self, from: retry.1))?.result == .replayed, "\(retry)")
            }
            #expect(try await services.eventCount(type: "HoldCaptured") == 2)
        }
    }

    /// A replay answers what the first request answered, byte for byte — not the order as it stands after the back
    /// office captured and shipped it (it answered "shipped" before) — and appends nothing.
    @Test func aReplayAfterTheOrderMovedOnAnswersTheFirstReply() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let first = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "checkout-43")
            #expect(first.0 == .ok && first.1.contains(#""order_status":"authorized""#), "\(first.1)")
            let order = try WireJSON.decode(PaymentReply.self, from: first.1).orderId
            let captured = try await BackOfficeDriver().operate(client, order, "capture", #"{"amount": "20.00"}"#)
            let shipped = try await BackOfficeDriver().operate(client, order, "ship", "{}")
            #expect(captured.0 == .ok && shipped.0 == .ok, "\(captured) \(shipped)")
            let head = try await services.store.head().position
            let replay = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "checkout-43")
            #expect(replay.0 == .ok && replay.1 == first.1, "\(replay.1)\nfirst: \(first.1)")
            #expect(try await services.store.head().position == head)
        }
    }

    /// A replay after the product sold out answers what the first request answered — approved or declined — not
    /// `409 out_of_stock`: the open command is decided on the product as it is now, and only a refusal's probe of the
    /// key finds the first request (issue 56: the simulator found it, `replay-pay out_of_stock`). A new key for the
    /// same body is a payment of its own, refused, and nothing is appended by any of them.
    @Test func aReplayAfterTheProductSoldOutAnswersTheFirstReply() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let declinedBody = StorefrontDriver.paymentBody(source: "tok_chargeDeclined")
            let declined = try await storefront.pay(client, declinedBody, key: "sold-out-declined")
            #expect(declined.0.code == 402, "\(declined)")
            var approved: [(HTTPResponse.Status, String)] = []
            for n in 1...10 { approved.append(try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "sold-out-\(n)")) }
            #expect(approved.allSatisfy { $0.0 == .ok }, "\(approved.map(\.0))")
            #expect(try await storefront.clockRow(client).available == 0)
            let head = try await services.store.head().position
            for (n, first) in approved.enumerated() where n == 0 || n == 9 {
                let replay = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "sold-out-\(n + 1)")
                #expect(replay.0 == .ok && replay.1 == first.1, "\(replay.1)\nfirst: \(first.1)")
            }
            let replayedDecline = try await storefront.pay(client, declinedBody, key: "sold-out-declined")
            #expect(replayedDecline.0 == declined.0 && replayedDecline.1 == declined.1, "\(replayedDecline.1)\nfirst: \(declined.1)")
            let another = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: "sold-out-11")
            #expect(another.0 == .conflict && another.1.contains(#""code":"out_of_stock""#), "\(another)")
            #expect(try await services.store.head().position == head)
        }
    }

    /// An acquirer that forwards to the model but "crashes" around the call: either before the
    /// model sees it, or after it answered (the answer is lost, as when the daemon dies).
    final class CrashingAcquirer: AcquirerModelWrapper, @unchecked Sendable {
        enum Crash { case beforeCall, afterCall, none }
        let model: AcquirerModel
        let crash = Mutex(Crash.none)
        init(model: AcquirerModel) { self.model = model }
        func authorize(_ request: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse {
            switch crash.withLock({ $0 }) {
            case .beforeCall: throw AcquirerError(.unavailable, "simulated crash before the call")
            case .afterCall:
                _ = try await model.authorize(request)
                throw AcquirerError(.unavailable, "simulated crash after the call: the answer is lost")
            case .none: return try await model.authorize(request)
            }
        }
    }

    @Test(arguments: [true, false])
    func aPaymentLeftPendingByACrashIsResolvedOnRecovery(acquirerApproved: Bool) async throws {
        let now = Mutex(Date())
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let acquirer = CrashingAcquirer(model: AcquirerModel(seed: 3, clock: clock))
        acquirer.crash.withLock { $0 = acquirerApproved ? .afterCall : .beforeCall }
        let db = try await TestDatabase.fresh()
        let pending = Mutex<String?>(nil)
        try await TestApp.withApp(seed: true, database: db, acquirer: acquirer, clock: clock) { client, _ in
            let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody())
            #expect(status == .badGateway)
            let reply = try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8))
            #expect(reply.orderStatus == .pendingPayment)
            #expect(try await storefront.clockRow(client).reserved == 1)
            pending.withLock { $0 = reply.orderId }
        }
        let orderID = try #require(pending.withLock { $0 })
        // "Restart": a new application on the same database, two minutes later.
        acquirer.crash.withLock { $0 = .none }
        now.withLock { $0 = $0.addingTimeInterval(121) }
        try await TestApp.withApp(seed: true, database: db, acquirer: acquirer, clock: clock) { client, services in
            let recovery = RecoveryService(
                payments: services.payments,
                interval: .seconds(60),
                policy: .standard,
                logger: TestCluster.logger
            )
            // The restarted daemon's own recovery loop sweeps at start too: whichever sweeper gets there first
            // resolves the order, exactly once (appends are version-checked); then nothing is left to resolve.
            #expect(try await recovery.sweep() <= 1)
            var status = try await BackOfficeDriver().order(client, orderID).status
            for _ in 0..<400 where status == "pending_payment" {
                try await Task.sleep(for: .milliseconds(25))
                status = try await BackOfficeDriver().order(client, orderID).status
            }
            #expect(status != "pending_payment")
            #expect(try await recovery.sweep() == 0)
            let held = try await acquirer.model.query(merchantReference: orderID)
            let row = try await storefront.clockRow(client)
            if acquirerApproved {
                guard case .found(let details) = held else {
                    Issue.record("the acquirer lost the hold")
                    return
                }
                #expect(details.status == .open)
                #expect(row.reserved == 1)
                #expect(try await services.eventCount(type: "AuthorizationHoldPlaced") == 1)
            } else {
                guard case .notFound = held else {
                    Issue.record("unexpected hold")
                    return
                }
                #expect(row.reserved == 0 && row.available == 10)
            }
        }
    }
}

/// Every line a logger received, at every level, with its metadata.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }

    struct Handler: LogHandler {
        let lines: LogLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            lines.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}
