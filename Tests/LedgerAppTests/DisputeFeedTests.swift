import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerAcquirerClient
import LedgerApp
import LedgerCore
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
@Suite struct DisputeFeedTests {
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
            let reconciled = try await backOffice.reconciliation(client, second.batch_id)
            #expect(reconciled.breaks.isEmpty, "\(reconciled.breaks.map(\.class))")
            #expect(reconciled.report_lines == 3 && reconciled.matched == 2)  // Settled, Chargeback (+ MerchantPayout)
            let firstReconciled = try await backOffice.reconciliation(client, first.batch_id)
            #expect(firstReconciled.breaks.isEmpty && firstReconciled.window_closed)
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
                #expect(debit == credit && debit > 0, "entry \(entry.position) \(entry.event_type) does not balance")
            }
            #expect(journal.entries.filter { $0.event_type == "ChargebackReceived" }.map(\.reference) == [dispute.disputeID])
            func balance(_ account: String) throws -> Int64 {
                guard let total = journal.totals.first(where: { $0.account == account }) else { return 0 }
                return try units(total.debit) - units(total.credit)
            }
            #expect(try balance("4950") == 5_900)
            #expect(try balance("1100") == 0)
            #expect(try balance("1200") == 0)
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
            var recorded: [DisputeState] = []
            for _ in 0..<200 where recorded.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                recorded = try await services.disputes.list()
            }
            #expect(recorded.count == 1 && recorded.first?.orderID.rawValue == order)
            // The loop's runs are on the metrics page (counted once the run that recorded it returns).
            let run = #"ledger_job_runs_total{name="dispute_poll",outcome="success"} "#
            while !services.metrics.exposition().contains(run) { try await Task.sleep(for: .milliseconds(50)) }
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
