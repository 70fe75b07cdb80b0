import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerCoreTestSupport
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Synchronization
import Testing

/// The hold lifecycle through the real router and database: capture, increment, void, refund,
/// ship and expiry, their refusals, idempotency, and the invariants across two daemons.
@Suite(.machine(.shared)) struct HoldTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    func decode(_ text: String) throws -> HoldOperationReply { try JSONDecoder().decode(HoldOperationReply.self, from: Data(text.utf8)) }
    /// The reply, or nil when it is not one (usable inside `#expect`).
    func r(_ text: String) -> HoldOperationReply? { try? decode(text) }

    func head(_ services: ServiceContainer) async throws -> Int64 { try await services.store.head().position }

    @Test func captureShipAndRefundWalkTheOrderThroughItsStatuses() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            var (status, text) = try await backOffice.operate(client, id, "capture", #"{"amount": "20.00"}"#)
            #expect(status == .ok, "\(text)")
            var reply = try decode(text)
            #expect(reply.status == .partiallyCaptured && reply.payment?.captured == "20.00" && reply.payment?.open == "39.00")
            (status, text) = try await backOffice.operate(client, id, "capture", #"{"amount": "30.00", "final": true}"#)
            reply = try decode(text)
            #expect(
                reply.status == .captured && reply.payment?.captured == "50.00" && reply.payment?.reversed == "9.00"
                    && reply.payment?.open == "0.00"
            )
            // Captured is not sold: the goods are still in the warehouse until they ship.
            var clock = try await storefront.clockRow(client)
            #expect(clock.quantity_on_hand == 10 && clock.reserved == 1)
            (status, text) = try await backOffice.operate(client, id, "ship", #"{"carrier": "UPS", "tracking": "1Z999"}"#)
            #expect(status == .ok && r(text)?.status == .shipped, "\(text)")
            clock = try await storefront.clockRow(client)
            #expect(clock.quantity_on_hand == 9 && clock.reserved == 0 && clock.available == 9)
            (status, text) = try await backOffice.operate(client, id, "refund", #"{"amount": "10.00", "reason": "scratched"}"#)
            #expect(r(text)?.status == .partiallyRefunded && r(text)?.payment?.refunded == "10.00", "\(text)")
            (status, text) = try await backOffice.operate(client, id, "refund", #"{"amount": "40.00", "reason": "returned"}"#)
            #expect(r(text)?.status == .refunded, "\(text)")
            let order = try await backOffice.order(client, id)
            #expect(order.status == "refunded" && order.payment?.refunded == "50.00" && order.hold?.state == "closed")
            #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
        }
    }

    @Test func shippingCapturesTheOpenAmountUnderTheOnShipmentPolicy() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let (status, text) = try await backOffice.operate(client, id, "ship", "")
            #expect(status == .ok, "\(text)")
            let reply = try decode(text)
            #expect(reply.status == .shipped && reply.payment?.captured == "59.00" && reply.payment?.open == "0.00")
            #expect(try await services.eventCount(type: "HoldCaptured") == 1)
            #expect(try await services.eventCount(type: "StockSold") == 1)
        }
    }

    @Test func theAutomaticPolicyCapturesAtAuthorization() async throws {
        try await TestApp.withApp(seed: true, environment: ["LEDGERD_CAPTURE_POLICY": "automatic"]) { client, services in
            let id = try await storefront.placeOrder(client)
            let order = try await backOffice.order(client, id)
            #expect(order.status == "captured" && order.payment?.captured == "59.00")
            let (status, text) = try await backOffice.operate(client, id, "ship", "{}")
            #expect(status == .ok && r(text)?.status == .shipped, "\(text)")
            #expect(try await services.eventCount(type: "HoldCaptured") == 1)
        }
    }

    @Test func aFullVoidReleasesTheStockAndAPartialVoidDoesNot() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            let id = try await storefront.placeOrder(client)
            var (status, text) = try await backOffice.operate(client, id, "void", #"{"amount": "9.00"}"#)
            #expect(status == .ok && r(text)?.status == .authorized && r(text)?.payment?.open == "50.00", "\(text)")
            #expect(try await storefront.clockRow(client).available == 9)
            (status, text) = try await backOffice.operate(client, id, "void")
            #expect(status == .ok && r(text)?.status == .voided, "\(text)")
            let clock = try await storefront.clockRow(client)
            #expect(clock.reserved == 0 && clock.available == 10 && clock.quantity_on_hand == 10)
        }
    }

    @Test func incrementsAreApprovedOrDeclinedByTheIssuer() async throws {
        // The acquirer model's test cards have 10,000.00 of open-to-buy by default.
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            var (status, text) = try await backOffice.operate(client, id, "increment", #"{"amount": "15.00"}"#)
            #expect(status == .ok && r(text)?.payment?.incremented == "15.00" && r(text)?.payment?.open == "74.00", "\(text)")
            let before = try await head(services)
            (status, text) = try await backOffice.operate(client, id, "increment", #"{"amount": "9999.00"}"#)
            #expect(status.code == 402, "\(text)")
            #expect(r(text)?.result == .declined && r(text)?.declineCode == "51")
            #expect(try await head(services) == before)
        }
    }

    /// Capture, increment, void and refund move money: without an `Idempotency-Key` each is refused (a client's retry
    /// would apply it twice), naming the header, and nothing is appended; ship needs none.
    @Test func theOperationsThatMoveMoneyRequireAnIdempotencyKey() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            expectReply(try await backOffice.capture(client, id, #"{"amount": "10.00"}"#))
            let before = try await head(services)
            for (operation, body) in [
                ("capture", #"{"amount": "1.00"}"#), ("increment", #"{"amount": "1.00"}"#), ("void", #"{"amount": "1.00"}"#),
                ("refund", #"{"amount": "1.00", "reason": "dent"}"#),
            ] {
                let (status, text) = try await backOffice.operate(client, id, operation, body, key: .none)
                #expect(status == .badRequest, "\(operation): \(text)")
                let error = JSONValue.parse(text)?["error"]
                #expect(error?["code"] == .string("missing_idempotency_key") && error?["field"] == .string("Idempotency-Key"), "\(text)")
            }
            #expect(try await head(services) == before)
            let (status, text) = try await backOffice.operate(client, id, "ship", #"{"carrier": "UPS"}"#, key: .none)
            #expect(status == .ok, "\(text)")
        }
    }

    @Test func everyRejectedOperationNamesTheReasonAndAppendsNothing() async throws {
        let clock = SimulatedClock(Date())
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let open = try await storefront.placeOrder(client)
            let finalCaptured = try await storefront.placeOrder(client)
            let voided = try await storefront.placeOrder(client)
            let lapsing = try await storefront.placeOrder(client)
            expectReply(try await backOffice.operate(client, finalCaptured, "capture", #"{"amount": "10.00", "final": true}"#))
            expectReply(try await backOffice.operate(client, voided, "void"))
            let cases: [(String, String, String, String?, Int, String)] = [
                (open, "capture", #"{"amount": "59.01"}"#, nil, 422, "exceeds_open_amount"),
                (open, "capture", #"{"amount": "0.00"}"#, nil, 422, "invalid_amount"),
                (open, "capture", #"{"amount": "1.234"}"#, nil, 422, "invalid_amount"),
                (open, "capture", #"{"amount": 5}"#, nil, 422, "invalid_field"),
                (open, "capture", #"{"amount": "5.00", "reason": "x"}"#, nil, 400, "unknown_field"),
                (open, "capture", "not json", nil, 400, "invalid_json"),
                (open, "refund", #"{"amount": "1.00", "reason": "none captured"}"#, nil, 422, "exceeds_refundable"),
                (open, "refund", #"{"amount": "1.00"}"#, nil, 422, "missing_field"),
                (open, "increment", "{}", nil, 422, "missing_field"),
                (finalCaptured, "capture", #"{"amount": "1.00"}"#, nil, 409, "hold_closed"),
                (finalCaptured, "increment", #"{"amount": "1.00"}"#, nil, 409, "hold_closed"),
                (finalCaptured, "void", "{}", nil, 409, "hold_closed"),
                (finalCaptured, "refund", #"{"amount": "10.01", "reason": "too much"}"#, nil, 422, "exceeds_refundable"),
                (voided, "capture", "{}", nil, 409, "hold_closed"),
                (voided, "ship", "{}", nil, 409, "nothing_to_ship"),
                ("no-such-order", "capture", "{}", nil, 404, "not_found"),
                (open, "capture", "{}", "wrong-key", 401, "unauthenticated"),
                (open, "capture", "{}", TestApp.auditorKey, 403, "forbidden"),
            ]
            for (id, operation, body, key, expected, code) in cases {
                let before = try await head(services)
                let (status, text) = try await backOffice.operate(client, id, operation, body, apiKey: key ?? TestApp.operatorKey)
                #expect(status.code == expected, "\(operation) \(body): \(text)")
                let error = try? JSONDecoder().decode(SystemRoutesTests.ErrorBody.self, from: Data(text.utf8))
                #expect(error?.error.code == code, "\(operation) \(body): \(text)")
                #expect(try await head(services) == before, "\(operation) \(body) appended")
            }
            // Past its expiry (the sweeper has not run): capture is refused, and so after the sweep.
            clock.advance(by: 8 * 86_400)
            for _ in 0..<2 {
                let before = try await head(services)
                let (status, text) = try await backOffice.operate(client, lapsing, "capture", "{}")
                #expect(status == .conflict && text.contains("hold_expired"), "\(text)")
                #expect(try await head(services) == before)
                try await services.holds.expireDue()
            }
        }
    }

    struct HoldPage: Decodable {
        struct Hold: Decodable {
            let order_id, state, order_status, expires_at: String
            let figures: HoldFigures
        }
        let authorizations: [Hold]
        let next_cursor: String?
    }

    func authorizations(_ client: any TestClientProtocol, _ query: String) async throws -> (HTTPResponse.Status, HoldPage?) {
        try await client.execute(
            uri: "/authorizations\(query)",
            method: .get,
            headers: [.authorization: "Bearer \(TestApp.auditorKey)"]
        ) { response in
            (response.status, try? JSONDecoder().decode(HoldPage.self, from: Data(buffer: response.body)))
        }
    }

    @Test func openHoldsAreListedByStateAndExpiry() async throws {
        let clock = SimulatedClock(Date(timeIntervalSince1970: 1_790_000_000))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, _ in
            let a = try await storefront.placeOrder(client)
            let b = try await storefront.placeOrder(client)
            let c = try await storefront.placeOrder(client)
            expectReply(try await backOffice.operate(client, b, "void"))
            expectReply(try await backOffice.operate(client, c, "capture", #"{"amount": "1.00"}"#))
            let (status, open) = try await authorizations(client, "?state=open")
            #expect(status == .ok)
            #expect(open?.authorizations.map(\.order_id) == [a, c])
            #expect(open?.authorizations.last?.figures.captured == "1.00" && open?.authorizations.last?.order_status == "partially_captured")
            let closed = try await authorizations(client, "?state=closed").1
            #expect(closed?.authorizations.map(\.order_id) == [b] && closed?.authorizations.first?.order_status == "voided")
            // Holds of the demo acquirer last 7 days: none expires within a day, all within 8.
            let soon = try await authorizations(client, "?state=open&expiring_before=2026-09-23T00:00:00Z").1
            #expect(soon?.authorizations.isEmpty == true)
            let later = try await authorizations(client, "?state=open&expiring_before=2026-10-01T00:00:00Z").1
            #expect(later?.authorizations.count == 2)
            let paged = try await authorizations(client, "?limit=2").1
            #expect(paged?.authorizations.count == 2 && paged?.next_cursor != nil)
            #expect(try await authorizations(client, "?state=maybe").0 == .badRequest)
            #expect(try await authorizations(client, "?expiring_before=soon").0 == .badRequest)
        }
    }

    @Test func aModificationTheLedgerMissedIsRecordedFromTheAcquirerNeverMistakenForAnExpiry() async throws {
        let clock = SimulatedClock(Date(timeIntervalSince1970: 1_790_000_000))
        let model = AcquirerModel(seed: 5, clock: { clock.now })
        try await TestApp.withApp(seed: true, acquirer: model, clock: { clock.now }) { client, services in
            let voided = try await storefront.placeOrder(client)
            let captured = try await storefront.placeOrder(client)
            // The acquirer applied these, but the ledger never heard (the recorder crashed after the call).
            _ = try await model.reverse(ReversalRequest(authorizationReference: voided, modificationReference: "\(voided)-void-lost"))
            _ = try await model.capture(
                CaptureRequest(
                    authorizationReference: captured,
                    modificationReference: "\(captured)-capture-lost",
                    amount: Money(minorUnits: 2_000, currency: .usd),
                    isFinal: false
                )
            )
            clock.advance(by: 8 * 86_400)
            #expect(try await services.holds.expireDue() == 1)
            #expect(try await backOffice.order(client, voided).status == "voided")
            let partly = try await backOffice.order(client, captured)
            #expect(partly.status == "captured" && partly.payment?.captured == "20.00" && partly.payment?.expired == "39.00")
            #expect(try await services.eventCount(type: "HoldReversed") == 1)
            #expect(try await services.eventCount(type: "HoldExpired") == 1)
            // Stock: the voided order's unit is back; the partly captured order still has its unit to ship.
            #expect(try await storefront.clockRow(client).available == 9)
        }
    }

    /// A's partial void reaches the acquirer first, but B's final capture is recorded before A's answer
    /// comes back. B's balance then matches the acquirer's whether or not the void is in the ledger
    /// (a void and a final capture's release both count as reversed), so only the release the acquirer
    /// names tells B it missed the void: B records it first, and A's answer then finds it recorded.
    @Test(.timeLimit(.minutes(3))) func aFinalCaptureRecordedBeforeAnotherDaemonsEarlierVoidReleasesOnlyWhatTheAcquirerReleased() async throws {
        let model = AcquirerModel(seed: 7, clock: { Date() })
        let applied = Barrier(parties: 2)
        let answer = Barrier(parties: 2)
        // Daemon A's acquirer applies the void, then holds its answer until the test lets it go.
        let slowVoids = InterposedAcquirer(
            model,
            after: { call in
                guard call == .reverse else { return }
                await applied.arrive()
                await answer.arrive()
            }
        )
        let database = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: database, acquirer: slowVoids) { a, services in
            try await TestApp.withApp(database: database, acquirer: model) { b, _ in
                let id = try await storefront.placeOrder(a)
                async let void = backOffice.operate(a, id, "void", #"{"amount": "10.00"}"#)
                await applied.arrive()
                let (status, text) = try await backOffice.operate(b, id, "capture", #"{"amount": "20.00", "final": true}"#)
                #expect(status == .ok, "\(text)")
                #expect(r(text)?.payment?.captured == "20.00" && r(text)?.payment?.reversed == "39.00", "\(text)")
                await answer.arrive()
                let (voidStatus, voidText) = try await void
                #expect(voidStatus == .ok, "\(voidText)")
                let events = try await services.store.readStream(OrderID(id)!.holdStreamID).map { try DomainEvent.decode($0) }
                let released = events.compactMap { event -> Money? in
                    if case .hold(.captured(let e)) = event { e.released } else { nil }
                }
                let voided = events.compactMap { event -> Money? in
                    if case .hold(.reversed(let e)) = event { e.amount } else { nil }
                }
                #expect(released == [Money(minorUnits: 2_900, currency: .usd)] && voided == [Money(minorUnits: 1_000, currency: .usd)])
                guard case .found(let details) = try await model.query(merchantReference: id) else {
                    Issue.record("the acquirer does not know \(id)")
                    return
                }
                let order = try await backOffice.order(b, id)
                #expect(details.balance?.reversed.decimalString == order.payment?.reversed && order.payment?.open == "0.00")
                #expect(try await services.eventCount(type: "HoldReversed") == 1)
                #expect(try await services.eventCount(type: "HoldCaptured") == 1)
            }
        }
    }

    @Test func theSameIdempotencyKeyReplaysAndAnotherBodyIsRefused() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let (s1, t1) = try await backOffice.operate(client, id, "capture", #"{"amount": "5.00"}"#, key: "cap-1")
            let (s2, t2) = try await backOffice.operate(client, id, "capture", #"{"amount": "5.00"}"#, key: "cap-1")
            #expect(s1 == .ok && s2 == .ok, "\(t1) \(t2)")
            #expect(r(t1)?.result == .applied && r(t2)?.result == .replayed)
            #expect(r(t2)?.payment?.captured == "5.00")
            let before = try await head(services)
            let (s3, t3) = try await backOffice.operate(client, id, "capture", #"{"amount": "6.00"}"#, key: "cap-1")
            #expect(s3 == .conflict && t3.contains("idempotency_conflict"), "\(t3)")
            #expect(try await head(services) == before)
            #expect(try await services.eventCount(type: "HoldCaptured") == 1)
        }
    }

    /// A replay answers what the first request was answered — its amount, the acquirer's reference, the order and hold
    /// as it left them — not the order as it stands after later operations (first-day report: a replayed capture
    /// answered today's figures and dropped `amount` and `psp_modification_reference`).
    @Test func aReplayAnswersTheFirstReplyNotTheOrderAsItStandsNow() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let (s1, first) = try await backOffice.operate(client, id, "capture", #"{"amount": "5.00"}"#, key: "cap-first")
            #expect(s1 == .ok, "\(first)")
            let (s2, later) = try await backOffice.operate(client, id, "capture", #"{"amount": "7.00"}"#, key: "cap-later")
            let (s3, refund) = try await backOffice.operate(client, id, "refund", #"{"amount": "2.00", "reason": "dent"}"#, key: "ref-1")
            #expect(s2 == .ok && s3 == .ok, "\(later) \(refund)")
            let before = try await head(services)
            let (s4, replay) = try await backOffice.operate(client, id, "capture", #"{"amount": "5.00"}"#, key: "cap-first")
            #expect(s4 == .ok, "\(replay)")
            func members(_ text: String) throws -> [String: JSONValue] {
                guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { return [:] }
                return object
            }
            var expected = try members(first)
            expected["result"] = .string("replayed")
            let replayed = try members(replay)
            #expect(replayed == expected, "first \(first)\nreplay \(replay)")
            #expect(r(replay)?.payment?.captured == "5.00" && r(replay)?.payment?.refunded == "0.00", "\(replay)")
            #expect(replayed["amount"] == .string("5.00") && replayed["psp_modification_reference"] != nil, "\(replay)")
            let (s5, refundReplay) = try await backOffice.operate(client, id, "refund", #"{"amount": "2.00", "reason": "dent"}"#, key: "ref-1")
            var expectedRefund = try members(refund)
            expectedRefund["result"] = .string("replayed")
            let refundReplayed = try members(refundReplay)
            #expect(s5 == .ok && refundReplayed == expectedRefund, "first \(refund)\nreplay \(refundReplay)")
            #expect(try await head(services) == before)
        }
    }

    /// A simulated clock and an acquirer model on it, whose test cards have `creditLimit` US cents of open-to-buy.
    static func simulatedAcquirer(seed: UInt64, creditLimit: Int64) -> (SimulatedClock, AcquirerModel) {
        let clock = SimulatedClock(Date())
        let model = AcquirerModel(
            seed: seed,
            configuration: AcquirerModelConfiguration(defaultCreditLimit: Money(minorUnits: creditLimit, currency: .usd)),
            clock: { clock.now }
        )
        return (clock, model)
    }

    @Test func lapsedHoldsStopReservingAtOnceAndTwoSweepersExpireEachExactlyOnce() async throws {
        let (clock, model) = Self.simulatedAcquirer(seed: 7, creditLimit: 20_000)
        let database = try await TestDatabase.fresh()
        // Each sweeper's first acquirer query after arming (a page's holds in one call) waits for the other's: both
        // have read the due holds' streams before either commits, so their appends race for the same versions. Only
        // the two sweeps' queries count (marked by a task-local value): a daemon's background pass that queried the
        // acquirer after the arming took the shot and waited at the barrier for a party that never came — the sweeps
        // then ran unhindered, and the barrier held the pass, and the app's shutdown, forever.
        let barrier = Barrier(parties: 2)
        let (armedA, armedB) = (OneShot(), OneShot())
        let acquirerA = InterposedAcquirer(model) { call in
            if call == .queries, SweepUnderTest.marked, armedA.fire() { await barrier.arrive() }
        }
        let acquirerB = InterposedAcquirer(model) { call in
            if call == .queries, SweepUnderTest.marked, armedB.fire() { await barrier.arrive() }
        }
        try await TestApp.withApp(seed: true, database: database, acquirer: acquirerA, clock: { clock.now }) { client, services in
            try await TestApp.withApp(database: database, acquirer: acquirerB, clock: { clock.now }) { _, other in
                var ids: [String] = []
                for _ in 0..<3 { ids.append(try await storefront.placeOrder(client)) }
                expectReply(try await backOffice.operate(client, ids[2], "capture", #"{"amount": "10.00"}"#))
                // The card's 200.00 of open-to-buy is used up: a fourth payment is declined.
                #expect(try await storefront.pay(client, StorefrontDriver.paymentBody()).0.code == 402)
                #expect(try await storefront.clockRow(client).available == 7)

                clock.advance(by: 8 * 86_400)
                // Before any sweep, reads already treat the lapsed holds as released.
                #expect(try await storefront.clockRow(client).available == 9)
                #expect(try await backOffice.order(client, ids[0]).status == "expired")
                #expect(try await backOffice.order(client, ids[2]).status == "captured")
                #expect(try await services.eventCount(type: "HoldExpired") == 0)

                armedA.arm()
                armedB.arm()
                async let first = SweepUnderTest.$marked.withValue(true) { try await services.holds.expireDue() }
                async let second = SweepUnderTest.$marked.withValue(true) { try await other.holds.expireDue() }
                let (a, b) = try await (first, second)
                #expect(barrier.arrivals == 2, "both sweepers decided before either committed")
                // One append expires all three; the other sweeper's append conflicts, it reads again and finds nothing due.
                #expect([a, b].sorted() == [0, 3])
                #expect(try await services.eventCount(type: "HoldExpired") == 3)
                #expect(try await services.holds.expireDue() == 0)
                let clockRow = try await storefront.clockRow(client)
                #expect(clockRow.available == 9 && clockRow.reserved == 1 && clockRow.quantity_on_hand == 10)
                #expect(try await backOffice.order(client, ids[0]).status == "expired")
                // The acquirer model released the open amounts: the card can pay again.
                #expect(try await storefront.pay(client, StorefrontDriver.paymentBody()).0 == .ok)
                #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
            }
        }
    }

    /// The sweep reads the next page while the previous one commits. Here that page is expired by
    /// another daemon after it was read and before it was decided: the stale decision conflicts, the
    /// page is read again and nothing is expired twice.
    /// Bounded in time: a sweep that failed before its second page's query would leave the barrier waiting.
    @Test(.timeLimit(.minutes(3))) func aSweepInPagesExpiresEachHoldOnceWhenAnotherDaemonExpiresAPageItHadAlreadyRead() async throws {
        let (clock, model) = Self.simulatedAcquirer(seed: 11, creditLimit: 10_000_000)
        let database = try await TestDatabase.fresh()
        // After the sweeper's second acquirer query (one per page of two: the second page has been read), it
        // waits while the other daemon sweeps. Only this sweep's queries count, told apart by a task-local value
        // its calls carry: a background pass of the same daemon run late beside the sweep (the payment recovery
        // once did) would otherwise take the count to four first and leave this sweep free.
        // Still intermittent on a loaded machine (theirs 0, about 1 run in 5-10 of the hold suites beside other
        // suites; not reproduced with tracing in the sweep): the other daemon's sweep then expires nothing though
        // three holds are due and open. Unexplained; see the session note of 2026-12-03.
        let queries = Atomic<Int>(0)
        let (secondPageRead, otherSwept) = (Barrier(parties: 2), Barrier(parties: 2))
        let acquirer = InterposedAcquirer(model) { _ in
        } after: { call in
            guard call == .queries, SweepUnderTest.marked,
                queries.add(1, ordering: .sequentiallyConsistent).newValue == 2
            else { return }
            await secondPageRead.arrive()
            await otherSwept.arrive()
        }
        try await TestApp.withApp(
            seed: true,
            database: database,
            acquirer: acquirer,
            clock: { clock.now }
        ) { client, services in
            try await TestApp.withApp(database: database, acquirer: model, clock: { clock.now }) { _, other in
                var ids: [String] = []
                for _ in 0..<5 {
                    ids.append(try await storefront.placeOrder(client))
                    clock.advance(by: 1)  // one expiry after another: pages of two are [0, 1], [2, 3], [4]
                }
                clock.advance(by: 8 * 86_400)
                async let ours = SweepUnderTest.$marked.withValue(true) { try await services.holds.expireDue(batchSize: 2) }
                await secondPageRead.arrive()
                let theirs = try await other.holds.expireDue(batchSize: 2)
                await otherSwept.arrive()
                let expiredByUs = try await ours
                // The other daemon expired at least the second and third pages (the first is ours or theirs, once).
                #expect(theirs >= 3)
                #expect(expiredByUs + theirs == 5)
                #expect(try await services.eventCount(type: "HoldExpired") == 5)
                #expect(try await services.holds.expireDue(batchSize: 2) == 0)
                for id in ids { #expect(try await backOffice.order(client, id).status == "expired") }
                #expect(try await storefront.clockRow(client).reserved == 0)
                #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
            }
        }
    }
}

extension HoldTests {
    /// A daemon whose writer remembers a product from before another daemon reserved more of it still expires
    /// those holds: the lifecycle's refusal on the remembered stock (`stockOutOfDate`) refuses the command
    /// (`.refuse`), so the writer decides again on states read fresh. When the expiry skipped that refusal, the page appended nothing, nothing
    /// caught the product up, and this daemon's every sweep passed over the other daemon's due holds (seen as two
    /// daemons' sweeps leaving holds open, and as a sweep expiring none of three due holds).
    @Test func aSweepOnAProductItsWriterRemembersFromBeforeAnotherDaemonsOrdersExpiresThem() async throws {
        let (clock, model) = Self.simulatedAcquirer(seed: 12, creditLimit: 10_000_000)
        let database = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: database, acquirer: model, clock: { clock.now }) { a, servicesA in
            try await TestApp.withApp(database: database, acquirer: model, clock: { clock.now }) { b, servicesB in
                // B's writer decides on the clock's stock once (an order voided in full), and remembers it.
                let own = try await storefront.placeOrder(b)
                #expect(try await backOffice.operate(b, own, "void").0 == .ok)
                // Then A reserves two more, which B's writer has not seen.
                let theirs = [try await storefront.placeOrder(a), try await storefront.placeOrder(a)]
                #expect(try await storefront.clockRow(a).reserved == 2)
                clock.advance(by: 8 * 86_400)
                let before = try await servicesB.eventCount(type: "HoldExpired")
                #expect(try await servicesB.holds.expireDue() == 2)
                #expect(try await servicesB.eventCount(type: "HoldExpired") == before + 2)
                for id in theirs { #expect(try await backOffice.order(a, id).status == "expired") }
                #expect(try await storefront.clockRow(a).reserved == 0)
                #expect(try await servicesA.holds.expireDue() == 0)
                #expect(try await ChainVerifier(client: servicesA.client, logger: TestCluster.logger).verify().ok)
            }
        }
    }
}

/// A few thousand random hold operations through HTTP, spread over two daemons on one database
/// (sharing the acquirer, as two real daemons share the real one), concurrently, with clock jumps
/// and sweeps by both; then every invariant is checked on what the database holds.
@Suite(.machine(.shared)) struct HoldInvariantsThroughHTTPTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    @Test(.seeded()) func randomOperationsOnTwoDaemonsKeepEveryInvariant() async throws {
        let seed = PropertySeed.current
        let operations = ProcessInfo.processInfo.environment["LEDGER_HTTP_OPERATIONS"].flatMap(Int.init) ?? 2_000
        let clock = SimulatedClock(Date(timeIntervalSince1970: 1_790_000_000))
        let model = AcquirerModel(seed: seed, clock: { clock.now })
        let database = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: database, acquirer: model, clock: { clock.now }) { a, servicesA in
            try await TestApp.withApp(database: database, acquirer: model, clock: { clock.now }) { b, servicesB in
                let ids = OrderList()
                for _ in 0..<10 { ids.append(try await storefront.placeOrder(a)) }
                let amounts = ["0.01", "1.00", "5.00", "10.00", "20.00", "59.00", "60.00", "0.00", "-1.00", "abc", "100.00"]
                let invalidAmounts: Set<String> = ["0.00", "-1.00", "abc"]
                // Every reply is checked: 200 (or 402 for a declined increment), or a 4xx with the error body;
                // never a 5xx, and never a 200 for an amount that is not a positive decimal.
                let problems = Findings()
                func check(_ reply: (HTTPResponse.Status, String), _ what: String, invalidInput: Bool = false) {
                    let (status, text) = reply
                    let fine: Bool
                    if status == .ok {
                        fine = !invalidInput
                    } else if status.code == 402 && what.hasPrefix("increment") {
                        fine = !invalidInput && JSONValue.parse(text)?["result"] == .string("declined")  // the issuer's answer, not an error
                    } else {
                        fine = (400..<500).contains(status.code) && isErrorBody(text)
                    }
                    if !fine { problems.list.withLock { $0.append("\(what) → \(status.code) \(text)") } }
                }
                // Four workers, each with its own generator derived from the seed.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<4 {
                        group.addTask {
                            var rng = SeededRandom(seed: seed &+ UInt64(worker) &* 0x9E37_79B9)
                            for _ in 0..<(operations / 4) {
                                let client = Bool.random(using: &rng) ? a : b
                                // Half the time one of the newest orders, whose holds are likelier still open.
                                let all = ids.all
                                let id = (Bool.random(using: &rng) ? all.suffix(4) : all[...]).randomElement(using: &rng)!
                                let amount = amounts.randomElement(using: &rng)!
                                let key: IdempotencyKeyChoice =
                                    Int.random(in: 0..<4, using: &rng) == 0 ? .given("k\(Int.random(in: 0..<20, using: &rng))") : .fresh
                                let invalid = invalidAmounts.contains(amount)
                                switch Int.random(in: 0..<100, using: &rng) {
                                case 0..<25:
                                    let whole = Bool.random(using: &rng)
                                    let body = whole ? "{}" : #"{"amount": "\#(amount)", "final": \#(Bool.random(using: &rng))}"#
                                    check(
                                        try await backOffice.operate(client, id, "capture", body, key: key),
                                        "capture \(id) \(body)",
                                        invalidInput: !whole && invalid
                                    )
                                case 25..<37:
                                    let body = #"{"amount": "\#(amount)"}"#
                                    check(
                                        try await backOffice.operate(client, id, "increment", body, key: key),
                                        "increment \(id) \(body)",
                                        invalidInput: invalid
                                    )
                                case 37..<50:
                                    let whole = Bool.random(using: &rng)
                                    let body = whole ? "{}" : #"{"amount": "\#(amount)"}"#
                                    check(
                                        try await backOffice.operate(client, id, "void", body, key: key),
                                        "void \(id) \(body)",
                                        invalidInput: !whole && invalid
                                    )
                                case 50..<75:
                                    let body = #"{"amount": "\#(amount)", "reason": "test"}"#
                                    check(
                                        try await backOffice.operate(client, id, "refund", body, key: key),
                                        "refund \(id) \(body)",
                                        invalidInput: invalid
                                    )
                                case 75..<86: check(try await backOffice.operate(client, id, "ship", "{}", key: key), "ship \(id)")
                                case 86..<90:
                                    // A new order while pens last (out of stock, or a declined card, is an expected answer here).
                                    let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(amount: 3200, product: "Pen"))
                                    if status == .ok {
                                        ids.append(try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8)).orderId)
                                    } else if status.code >= 500 {
                                        problems.list.withLock { $0.append("payment → \(status.code) \(text)") }
                                    }
                                case 90..<91: clock.advance(by: Int64.random(in: 0...(86_400 / 4), using: &rng))
                                default: try await (Bool.random(using: &rng) ? servicesA : servicesB).holds.expireDue()
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                // A few holds still open at the end, then every remaining hold lapses and both sweepers race.
                for _ in 0..<3 { ids.append(try await storefront.placeOrder(b, product: "Stapler", amount: 2120)) }
                clock.advance(by: 40 * 86_400)
                async let sweepA = servicesA.holds.expireDue()
                async let sweepB = servicesB.holds.expireDue()
                _ = try await (sweepA, sweepB)

                var found: [String] = problems.list.withLock { $0 }
                var products: [ProductID: ProductState] = [:]
                var statuses = Set<String>()
                for raw in ids.all {
                    let id = OrderID(raw)!
                    let order = OrderState.fold(
                        try await servicesA.store.readStream(id.streamID).map { event -> OrderEvent in
                            guard case .order(let e) = try DomainEvent.decode(event) else { preconditionFailure() }
                            return e
                        }
                    )!
                    let hold = HoldState.fold(
                        try await servicesA.store.readStream(id.holdStreamID).map { event -> HoldEvent in
                            guard case .hold(let e) = try DomainEvent.decode(event) else { preconditionFailure() }
                            return e
                        }
                    )!
                    statuses.insert(order.status.rawValue)
                    let balance = hold.balance
                    if !balance.satisfiesIdentity { found.append("\(id): identity \(balance)") }
                    if !hold.isClosed { found.append("\(id): still open after every expiry") }
                    if order.status != HoldOracle.status(balance, shipped: order.shipment != nil) {
                        var history: [String] = []
                        for e in try await servicesA.store.read(from: 1, limit: 1_000_000)
                        where e.streamID == id.streamID || e.streamID == id.holdStreamID {
                            history.append("#\(e.position) \(e.streamID) v\(e.streamVersion) \(e.type) \(e.data) \(e.metadata)")
                        }
                        found.append("\(id): status \(order.status) balance \(balance) DEBUG \(history.joined(separator: "\n"))")
                    }
                    if hold.isClosed && !balance.open.isZero { found.append("\(id): closed with \(balance.open) open") }
                    // The ledger and the acquirer agree on every hold's money.
                    if case .found(let details) = try await model.query(merchantReference: order.merchantReference), let theirs = details.balance {
                        if theirs != balance { found.append("\(id): ledger \(balance) ≠ acquirer \(theirs)") }
                    } else {
                        found.append("\(id): unknown at the acquirer")
                    }
                    for line in order.lines where products[line.productID] == nil {
                        products[line.productID] = ProductState.fold(
                            try await servicesA.store.readStream(line.productID.streamID).map { event -> ProductEvent in
                                guard case .product(let e) = try DomainEvent.decode(event) else { preconditionFailure() }
                                return e
                            }
                        )
                    }
                    let held = products[order.lines[0].productID]?.reservations[id]
                    if order.holdsStock != (held != nil) { found.append("\(id): \(order.status) but reservation \(held ?? 0)") }
                    let row = try await backOffice.order(a, raw)
                    if row.status != order.status.rawValue { found.append("\(id): read model says \(row.status), log says \(order.status)") }
                }
                for (id, product) in products {
                    if product.onHand + product.sold != product.received { found.append("\(id): on hand + sold ≠ received") }
                    if product.reservations.values.reduce(0, +) != product.reserved || product.available < 0 { found.append("\(id): reservations") }
                    let row = try await storefront.inventory(a).first { $0.id == id.rawValue }!
                    if row.quantity_on_hand != product.onHand || row.reserved != product.reserved { found.append("\(id): inventory row disagrees") }
                }
                let chain = try await ChainVerifier(client: servicesA.client, logger: TestCluster.logger).verify()
                if !chain.ok { found.append("chain: \(chain)") }
                #expect(found.isEmpty, "seed \(seed) (LEDGER_PROPERTY_SEED): \(found.joined(separator: "; "))")
                // The run must have exercised every kind of change, or it proves little.
                let types = Set(try await servicesA.store.read(from: 1, limit: 1_000_000).map(\.type))
                let exercised: Set<String> = [
                    "HoldCaptured", "HoldIncremented", "HoldReversed", "HoldRefunded", "HoldExpired", "OrderShipped", "StockSold",
                    "ReservationReleased",
                ]
                #expect(
                    types.isSuperset(of: exercised),
                    "seed \(seed): missing \(exercised.subtracting(types).sorted()), final statuses \(statuses.sorted())"
                )
            }
        }
    }
}

/// Problems found by concurrent workers.
final class Findings: Sendable {
    let list = Mutex<[String]>([])
}

/// Order ids shared by concurrent workers.
final class OrderList: Sendable {
    private let ids = Mutex<[String]>([])
    func append(_ id: String) { ids.withLock { $0.append(id) } }
    var all: [String] { ids.withLock { $0 } }
}

/// Marks the acquirer calls of the sweep a test holds at a barrier (a task-local value: the sweep's child tasks carry
/// it, a daemon's background passes do not).
enum SweepUnderTest {
    @TaskLocal static var marked = false
}
