import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerClient
import LedgerApp
import LedgerCore
import LedgerCoreTestSupport
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

/// Disputes the acquirer raises, end to end (issue 17): the acquirer's feed over the wire and across a
/// restart of its service, the ledger's poller recording each notification once (also with two
/// daemons polling at once), and a scripted day with a chargeback that settles and reconciles with zero
/// breaks while the journal balances.
@Suite(.machine(.shared)) struct DisputeFeedTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()
    /// The poller runs only when a test asks (`pollOnce`): no background loop races the script.
    static let noLoop = ["LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS": "0"]

    func ship(_ client: any TestClientProtocol, _ id: String) async throws {
        let (status, text) = try await backOffice.ship(client, id, "{}")
        #expect(status == .ok, "\(text)")
    }

    @Test(.timeLimit(.minutes(3))) func aDayWithAChargebackSettlesAndReconcilesWithZeroBreaksAndTheJournalBalances() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))  // a Wednesday
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        let started = Date().addingTimeInterval(-60)
        try await TestApp.withApp(seed: true, acquirer: model, clock: { clock.now }, environment: Self.noLoop) { client, services in
            // Day 1: two paid and shipped orders, one on the card that always draws a chargeback.
            let fraud = try await storefront.placeOrder(client, source: "tok_visa_chargeback_fraud")
            let good = try await storefront.placeOrder(client)
            try await ship(client, fraud)
            try await ship(client, good)
            let shipped = try await backOffice.order(client, good).status
            clock.set(TestApp.instant("2030-06-19T22:00:01Z"))
            let first = try #require(try await backOffice.settle(client, "2030-06-19").batches.first)
            #expect(first.captures == 2)
            // Nothing is raised before the next business day.
            #expect(try await services.disputePoller.pollOnce() == DisputePollSummary(read: 0, refused: 0, position: 0))

            // Day 2: the acquirer raises the chargeback; the poller records it.
            clock.set(TestApp.instant("2030-06-20T09:00:00Z"))
            #expect(try await services.disputePoller.pollOnce() == DisputePollSummary(read: 1, refused: 0, position: 1))
            let disputes = try await services.disputes.list()
            #expect(disputes.count == 1)
            let dispute = try #require(disputes.first)
            #expect(dispute.orderID.rawValue == fraud && dispute.reason == .visaFraudCardAbsent && dispute.status == .chargedBack)
            #expect(dispute.amount == Money(minorUnits: 5_900, currency: .usd) && dispute.debited)
            #expect(try await backOffice.order(client, fraud).status == "charged_back")
            #expect(try await backOffice.order(client, good).status == shipped)
            // Polling again reads nothing new.
            #expect(try await services.disputePoller.pollOnce() == DisputePollSummary(read: 0, refused: 0, position: 1))

            // Day 2's sales; its settlement debits the chargeback (a Chargeback line lowers the payout).
            let next = try await storefront.placeOrder(client, product: "Pen", amount: 3200)
            try await ship(client, next)
            clock.set(TestApp.instant("2030-06-20T22:00:01Z"))
            let second = try #require(try await backOffice.settle(client, "2030-06-20").batches.first)
            #expect(second.captures == 1)
            let reconciled = try await backOffice.reconciliation(client, second.batchId)
            #expect(reconciled.breaks.isEmpty, "\(reconciled.breaks.map(\._class.rawValue))")
            #expect(reconciled.reportLines == 3 && reconciled.matched == 2)  // Settled, Chargeback (+ MerchantPayout)
            let firstReconciled = try await backOffice.reconciliation(client, first.batchId)
            #expect(firstReconciled.breaks.isEmpty && firstReconciled.windowClosed)
            func units(_ text: String?) throws -> Int64 { try Money(decimal: text ?? "", currency: .usd).minorUnits }
            #expect(try units(second.payout) == units(second.net) && units(second.net) < units(second.gross) - 5_900 + 1)

            // The journal: every entry balances, the chargeback leaves acquirer clearing at zero.
            let to = Date().addingTimeInterval(60)
            let (status, text) = try await call(
                client,
                .get,
                "/journal?from=\(RFC3339.format(started.epochMicroseconds))&to=\(RFC3339.format(to.epochMicroseconds))",
                key: TestApp.auditorKey
            )
            #expect(status == 200, "\(text)")
            let journal = try WireJSON.decode(JournalReply.self, from: text)
            for entry in journal.entries {
                let debit = try entry.lines.reduce(0) { $0 + (try units($1.debit)) }
                let credit = try entry.lines.reduce(0) { $0 + (try units($1.credit)) }
                #expect(debit == credit && debit > 0, "entry \(entry.position) \(entry.eventType) does not balance")
            }
            #expect(journal.entries.filter { $0.eventType == "ChargebackReceived" }.map(\.reference) == [dispute.disputeID])
            func balance(_ account: String) throws -> Int64 {
                // An account the page does not show moved nothing: say so, rather than read it as a zero balance.
                guard let total = journal.totals.first(where: { $0.account == account }) else {
                    Issue.record("account \(account) is not in the journal's totals: \(journal.totals.map(\.account))")
                    return .min
                }
                return try units(total.debit) - units(total.credit)
            }
            #expect(try balance("4950") == 5_900)
            #expect(try balance("1100") == 0)
            #expect(try balance("1200") == 0)
        }
    }

    /// Random days (seeded), end to end through the router: orders on cards that draw chargebacks (a
    /// test card that always does, and a seeded rate), partial and whole captures, refunds (also between
    /// the settlement that draws a dispute and its raise), the operator defending or accepting, and each
    /// day settled. Refusals (an illegal step, a refund of a
    /// charged-back order) are 4xx and append nothing. At the end every batch reconciles with zero
    /// breaks, and for every order captured − refunded − charged back + reversed in the ledger equals
    /// its net in the acquirer's own settlement reports — the acquirer keeps its books apart.
    @Test(.seeded(), .timeLimit(.minutes(5))) func randomDaysWithDisputesSettleToWhatEveryOrderKeeps() async throws {
        let seed = PropertySeed.current
        let clock = SimulatedClock(TestApp.instant("2030-06-19T09:00:00Z"))  // a Wednesday
        var configuration = AcquirerModelConfiguration()
        configuration.disputes = .perMille(300)
        let model = AcquirerModel(seed: seed, configuration: configuration, clock: { clock.now })
        try await TestApp.withApp(seed: true, acquirer: model, clock: { clock.now }, environment: Self.noLoop) { client, services in
            func head() async throws -> Int64 { try await services.store.head().position }
            var random = SeededRandom(seed: seed)
            var orders: [String] = []
            var batches: [Components.Schemas.SettlementRunBatch] = []
            /// A reply that is not 200 must be a 4xx error body that appended nothing.
            func expectRefusalAppendedNothing(_ status: HTTPResponse.Status, _ text: String, before: Int64, _ what: String) async throws {
                #expect((400..<500).contains(status.code) && isErrorBody(text), "\(what) → \(status.code) \(text)")
                #expect(try await head() == before, "\(what) was refused but appended")
            }
            let days = ["2030-06-19", "2030-06-20", "2030-06-21", "2030-06-24"]
            for day in days {
                clock.set(TestApp.instant("\(day)T09:00:00Z"))
                _ = try await services.disputePoller.pollOnce()
                // The operator answers some disputes; an illegal or late answer is refused.
                for dispute in try await services.disputes.list() where random.chance(numerator: 1, denominator: 2) {
                    let before = try await head()
                    let accept = random.chance(numerator: 1, denominator: 3)
                    let uri = "/disputes/\(dispute.disputeID)/\(accept ? "accept" : "defend")"
                    let (status, text) = try await call(client, .post, uri, accept ? "{}" : #"{"evidence_refs": ["ev-\#(day)"]}"#)
                    if status != 200 { try await expectRefusalAppendedNothing(.init(code: status), text, before: before, uri) }
                }
                // Refunds on earlier orders: a charged-back order refuses them.
                for order in orders where random.chance(numerator: 1, denominator: 4) {
                    let before = try await head()
                    let status = try await backOffice.order(client, order).status
                    let amount = random.int(in: 1...12)
                    let (code, text) = try await backOffice.refund(client, order, #"{"amount": "\#(amount).00", "reason": "returned"}"#)
                    if code == .ok { continue }
                    try await expectRefusalAppendedNothing(code, text, before: before, "refund \(order) (\(status))")
                    if status == "charged_back" {
                        #expect(JSONValue.parse(text)?["error"]?["code"] == .string("charged_back"), "\(text)")
                    }
                }
                // The day's sales, captured in part or whole, and shipped.
                for _ in 0..<4 {
                    let source = ["tok_visa", "tok_mastercard", "tok_visa_chargeback_fraud", "tok_visa_debit"][Int(random.next(below: 4))]
                    let order = try await storefront.placeOrder(client, source: source, product: "Pen", amount: 3200)
                    if random.chance(numerator: 1, denominator: 2) {
                        let (status, text) = try await backOffice.capture(
                            client,
                            order,
                            #"{"amount": "\#(random.int(in: 10...31)).00", "final": true}"#
                        )
                        #expect(status == .ok, "\(text)")
                    }
                    let (status, text) = try await backOffice.ship(client, order, "{}")
                    #expect(status == .ok, "\(text)")
                    orders.append(order)
                }
                clock.set(TestApp.instant("\(day)T22:00:01Z"))
                batches.append(contentsOf: try await backOffice.settle(client, day).batches)
                // Late refunds, after the settlement drew the day's disputes and before they are raised:
                // the cardholder's bank charges such a payment back all the same, and the ledger records it.
                // (They settle the next day: none after the last settlement.)
                guard day != days.last else { continue }
                clock.set(TestApp.instant("\(day)T23:00:00Z"))
                for order in orders.suffix(4) where random.chance(numerator: 1, denominator: 3) {
                    let (code, text) = try await backOffice.refund(client, order, #"{"amount": "\#(random.int(in: 1...5)).00", "reason": "late"}"#)
                    #expect(code == .ok, "\(text)")
                }
            }
            #expect(batches.count == 4)
            for batch in batches {
                let reconciled = try await backOffice.reconciliation(client, batch.batchId)
                #expect(reconciled.breaks.isEmpty, "\(batch.batchId): \(reconciled.breaks.map { "\($0._class.rawValue) \($0.reference)" })")
            }
            // The acquirer's books: every line of every batch's report, by our order reference.
            var settled: [String: Int64] = [:]
            var chargebackLines = 0
            for batch in batches {
                let number = try #require(batch.batchNumber)
                for line in try await model.reportLines(batchNumber: number, from: 0, count: 10_000) {
                    let sign: Int64
                    switch line.type {
                    case .settled, SettlementLineType(rawValue: "ChargebackReversed"): sign = 1
                    case .refunded, .chargeback: sign = -1
                    default: continue
                    }
                    if line.type == .chargeback { chargebackLines += 1 }
                    let amount = (line.grossCredit ?? line.grossDebit)?.minorUnits ?? 0
                    settled[line.merchantReference, default: 0] += sign * amount
                }
            }
            let disputes = try await services.disputes.list()
            for order in orders {
                let id = OrderID(order)!
                guard let hold = try await services.holds.aggregates.hold(id, fresh: true) else {
                    Issue.record("order \(order) has no hold")
                    continue
                }
                let states = disputes.filter { $0.orderID == id }
                let kept = DisputeWorkflow.netKept(hold: hold, disputes: states).minorUnits
                let b = hold.balance
                let identity = states.reduce(b.captured.minorUnits - b.refunded.minorUnits) {
                    $0 - $1.chargedBack.minorUnits + $1.reversed.minorUnits
                }
                #expect(identity == kept && kept == settled[order, default: 0], "order \(order): ledger \(kept), acquirer \(settled[order] ?? 0)")
                #expect(states.count <= 1, "order \(order) drew \(states.count) disputes")
            }
            // The seed must have drawn what the property is about.
            #expect(chargebackLines > 0 && chargebackLines == disputes.filter(\.debited).count)
            #expect(try await ChainVerifier(client: services.client, logger: TestCluster.logger).verify().ok)
        }
    }

    /// Two daemons poll the same feed at the same moment (held together at the acquirer call): the
    /// notification is recorded once. A cursor moved back (a crash before it moved) reads it again:
    /// a no-op, nothing appended.
    @Test(.timeLimit(.minutes(3))) func twoDaemonsPollingAtOnceRecordEachNotificationOnce() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        let barrier = Barrier(parties: 2)
        let (armedA, armedB) = (OneShot(), OneShot())
        let database = try await TestDatabase.fresh()
        let acquirerA = InterposedAcquirer(model) { call in if call == .disputeNotifications, armedA.fire() { await barrier.arrive() } }
        let acquirerB = InterposedAcquirer(model) { call in if call == .disputeNotifications, armedB.fire() { await barrier.arrive() } }
        try await TestApp.withApp(seed: true, database: database, acquirer: acquirerA, clock: { clock.now }, environment: Self.noLoop) {
            a,
            servicesA in
            try await TestApp.withApp(database: database, acquirer: acquirerB, clock: { clock.now }, environment: Self.noLoop) { _, servicesB in
                let order = try await storefront.placeOrder(a, source: "tok_visa_chargeback_fraud")
                try await ship(a, order)
                clock.set(TestApp.instant("2030-06-19T22:00:01Z"))
                _ = try await backOffice.settle(a, "2030-06-19")
                clock.set(TestApp.instant("2030-06-20T09:00:00Z"))
                armedA.arm()
                armedB.arm()
                async let first = servicesA.disputePoller.pollOnce()
                async let second = servicesB.disputePoller.pollOnce()
                let (x, y) = try await (first, second)
                #expect(barrier.arrivals >= 2)
                #expect(x.read == 1 && y.read == 1 && x.refused == 0 && y.refused == 0)
                let disputes = try await servicesA.disputes.list()
                #expect(disputes.count == 1)
                let id = try #require(disputes.first?.disputeID)
                #expect(try await servicesA.store.readStream(Dispute.streamID(disputeID: id)).count == 1)
                #expect(try await backOffice.order(a, order).status == "charged_back")

                try await database.withOwner { client in
                    _ = try await client.query("UPDATE ledger.acquirer_feed_cursors SET position = 0", logger: TestCluster.logger)
                }
                let head = try await servicesA.store.head().position
                #expect(try await servicesB.disputePoller.pollOnce() == DisputePollSummary(read: 1, refused: 0, position: 1))
                #expect(try await servicesA.store.head().position == head)
            }
        }
    }

    /// The daemon's own loop (`LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS`) records a raised chargeback.
    @Test(.timeLimit(.minutes(2))) func theDaemonsLoopRecordsRaisedDisputes() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        try await TestApp.withApp(
            seed: true,
            acquirer: model,
            clock: { clock.now },
            environment: ["LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS": "1"]
        ) { client, services in
            let order = try await storefront.placeOrder(client, source: "tok_visa_chargeback_fraud")
            try await ship(client, order)
            clock.set(TestApp.instant("2030-06-19T22:00:01Z"))
            _ = try await backOffice.settle(client, "2030-06-19")
            clock.set(TestApp.instant("2030-06-20T09:00:00Z"))
            // A 1 s loop: waited for until it records (60 s at most, a bound for a broken run, not a timing claim).
            var recorded: [DisputeState] = []
            _ = try await eventually {
                recorded = try await services.disputes.list()
                return !recorded.isEmpty
            }
            #expect(recorded.count == 1 && recorded.first?.orderID.rawValue == order, "the loop recorded \(recorded) within 60 s")
            // The loop's runs are on the metrics page (counted once the run that recorded it returns).
            let run = #"ledger_job_runs_total{name="dispute_poll",outcome="success"} "#
            try #require(try await eventually { services.metrics.exposition().contains(run) }, "no successful dispute_poll run on /metrics")
            #expect(services.metrics.exposition().contains(#"ledger_job_last_success_timestamp_seconds{name="dispute_poll"} "#))
        }
    }

    /// The acquirer service reports the feed over its wire API like the in-process model, byte for
    /// byte, debits the chargeback in the next batch's report, and a restart of the service loses no
    /// notification (the feed derives from journalled settlements).
    @Test(.timeLimit(.minutes(3))) func theServiceReportsDisputesOverTheWireAndARestartLosesNone() async throws {
        let start = TestApp.instant("2030-06-19T10:00:00Z")
        @Sendable func script(
            _ acquirer: any Acquirer,
            _ clock: SimulatedClock
        ) async throws -> (
            before: [AcquirerDisputeNotification], feed: [AcquirerDisputeNotification], receipt: SettlementReceipt
        ) {
            func usd(_ cents: Int64) -> Money { Money(minorUnits: cents, currency: .usd) }
            func pay(_ reference: String, _ token: String) async throws -> SettlementItem {
                _ = try await acquirer.authorize(AuthorizationRequest(merchantReference: reference, amount: usd(5_900), paymentMethod: .token(token)))
                let capture = CaptureRequest(
                    authorizationReference: reference,
                    modificationReference: reference + "-c",
                    amount: usd(5_900),
                    isFinal: true
                )
                _ = try await acquirer.capture(capture)
                return SettlementItem(kind: .capture, authorizationReference: reference, modificationReference: reference + "-c", amount: usd(5_900))
            }
            let items = [try await pay("cb-1", "tok_visa_chargeback_fraud"), try await pay("ok-1", "tok_visa")]
            clock.set(TestApp.instant("2030-06-19T21:30:00Z"))  // before the cut-off: business day 06-19
            _ = try await acquirer.submitBatch(SettlementBatchHeader(batchReference: "B-1", currency: .usd)) { $0 == 0 ? items : nil }
            let before = try await acquirer.disputeNotifications(after: 0, limit: 10)
            clock.set(TestApp.instant("2030-06-20T08:00:00Z"))
            let feed = try await acquirer.disputeNotifications(after: 0, limit: 10)
            let next = [try await pay("ok-2", "tok_visa")]
            clock.set(TestApp.instant("2030-06-20T21:30:00Z"))
            let receipt = try await acquirer.submitBatch(SettlementBatchHeader(batchReference: "B-2", currency: .usd)) { $0 == 0 ? next : nil }
            return (before, feed, receipt)
        }
        let referenceClock = SimulatedClock(start)
        let reference = AcquirerModel(seed: 7, clock: referenceClock.reading)
        let expected = try await script(reference, referenceClock)
        #expect(expected.before.isEmpty && expected.feed.count == 1)
        let expectedSnapshot = try await reference.snapshot()

        let database = try await TestDatabase.fresh()
        let clock = SimulatedClock(start)
        try await AcquirerHarness.withService(database: database, clock: clock.reading) { acquirer, model in
            let got = try await script(acquirer, clock)
            #expect(got.before.isEmpty)
            let (gotBytes, expectedBytes) = (try LedgerJSON.encode(got.feed), try LedgerJSON.encode(expected.feed))
            #expect(gotBytes == expectedBytes)
            #expect(got.receipt == expected.receipt)
            let snapshot = try await model.snapshot()
            #expect(snapshot == expectedSnapshot)
            let lines = try await acquirer.reportLines(batchNumber: got.receipt.batchNumber, from: 0, count: 100)
            let chargeback = try #require(lines.first { $0.type == .chargeback })
            #expect(chargeback.modificationReference == got.feed[0].disputeID && chargeback.merchantReference == "cb-1")
            #expect(chargeback.grossDebit == got.feed[0].amount)
            #expect(try await acquirer.disputeNotifications(after: 1, limit: 10).isEmpty)
        }
        try await AcquirerHarness.withService(database: database, clock: clock.reading) { acquirer, model in
            let snapshot = try await model.snapshot()
            #expect(snapshot == expectedSnapshot)
            let feed = try await acquirer.disputeNotifications(after: 0, limit: 10)
            #expect(feed == expected.feed)
        }
    }
}
