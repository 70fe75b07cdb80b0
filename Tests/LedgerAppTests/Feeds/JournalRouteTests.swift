import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

/// The accounting journal over the scripted day of the as-of tests (``AsOfTests``): every entry
/// balances, and the day ties out to the settlement's net and the payout.
@Suite(.machine(.shared)) struct JournalRouteTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    @Test(.timeLimit(.minutes(3))) func theScriptedDaysJournalBalancesAndTiesOutToTheNetAndThePayout() async throws {
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 11, clock: { clock.now })
        let started = Date().addingTimeInterval(-60)
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: db, acquirer: model, clock: { clock.now }) { client, services in
            func operate(_ id: String, _ operation: String, _ body: String = "{}") async throws {
                let (status, text) = try await backOffice.operate(client, id, operation, body)
                #expect(status == .ok, "\(operation) \(body): \(text)")
            }
            // The day of AsOfTests.asOfAnswersEqualTheLiveAnswersAtEveryStepOfADay, up to its settlement.
            var orders: [String] = []
            orders.append(try await storefront.placeOrder(client))
            orders.append(try await storefront.placeOrder(client, product: "Pen", amount: 3200))
            try await operate(orders[0], "capture", #"{"amount": "20.00"}"#)
            _ = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_chargeDeclined"))
            try await operate(orders[1], "void", #"{"amount": "2.00"}"#)
            try await operate(orders[0], "ship", #"{"carrier": "UPS"}"#)
            try await operate(orders[0], "refund", #"{"amount": "10.00", "reason": "scratched"}"#)
            orders.append(try await storefront.placeOrder(client))
            try await operate(orders[2], "void")
            orders.append(try await storefront.placeOrder(client, product: "Pen", amount: 3200))
            try await operate(orders[3], "capture", #"{"amount": "5.00"}"#)
            orders.append(try await storefront.placeOrder(client))
            clock.set(TestApp.instant("2030-06-19T22:00:01Z"))
            let settled = try await backOffice.settle(client, "2030-06-19")
            let batch = try #require(settled.batches.first)
            #expect(settled.batches.count == 1 && batch.captures == 3 && batch.refunds == 1, "\(settled)")
            // The next business day: the payout reaches the bank.
            clock.set(TestApp.instant("2030-06-20T22:00:01Z"))
            _ = try await backOffice.settle(client, "2030-06-20")
            // The bank's statement shows the payout (its reference as the end-to-end id): matched, booked into the bank.
            let (viewed, viewText) = try await call(client, .get, "/settlements/\(batch.batchId)", key: TestApp.auditorKey)
            #expect(viewed == 200, "\(viewText)")
            let view = try JSONDecoder().decode(SettlementBatchReply.self, from: Data(viewText.utf8))
            let paid = try #require(view.payout).replacingOccurrences(of: ".", with: ",")
            let statement =
                ":20:S1\n:25:US-1\n:28C:1/1\n:60F:C300620USD0,\n:61:3006200620C\(paid)NTRFNONREF//B1\n"
                + ":86:/EREF/\(try #require(view.payoutReference))/REMI/payout\n:62F:C300620USD\(paid)\n"
            let (imported, importText) = try await call(client, .post, "/bank/statements", statement)
            #expect(imported == 200 && importText.contains(#""matched":1"#), "\(importText)")
            let to = Date().addingTimeInterval(60)

            let from = RFC3339.format(started.epochMicroseconds)
            let (status, text) = try await call(
                client,
                .get,
                "/journal?from=\(from)&to=\(RFC3339.format(to.epochMicroseconds))",
                key: TestApp.auditorKey
            )
            #expect(status == 200, "\(text)")
            let journal = try WireJSON.decode(JournalReply.self, from: text)
            func units(_ text: String) throws -> Int64 { try Money(decimal: text, currency: .usd).minorUnits }
            for entry in journal.entries {
                let debit = try entry.lines.reduce(0) { $0 + (try units($1.debit)) }
                let credit = try entry.lines.reduce(0) { $0 + (try units($1.credit)) }
                #expect(debit == credit && debit > 0, "entry \(entry.position) \(entry.eventType) does not balance")
            }
            let types = [
                "HoldCaptured", "HoldCaptured", "HoldRefunded", "HoldCaptured", "SettlementBatchClosed", "SettlementBatchCleared",
                "SettlementPayoutScheduled", "BankPayoutMatched",
            ]
            #expect(journal.entries.map(\.eventType) == types, "\(journal.entries.map(\.eventType))")
            // An account the page does not show is a failure (a renamed or lost account would otherwise read as a cleared
            // one), except where the test says it may be absent (a fee the report did not charge).
            func balance(_ account: String, mayBeAbsent: Bool = false) throws -> Int64 {
                guard let total = journal.totals.first(where: { $0.account == account }) else {
                    if !mayBeAbsent { Issue.record("account \(account) is not in the journal's totals: \(journal.totals.map(\.account))") }
                    return 0
                }
                return try units(total.debit) - units(total.credit)
            }
            let gross = try units(batch.gross)
            let net = try units(try #require(batch.net))
            let payout = try units(try #require(batch.payout))
            // Captured 20.00 + 39.00 (o1's rest at shipment) + 5.00, refunded 10.00: the batch's gross.
            #expect(gross == 5_400)
            // The receivable is cleared by the batch, the clearing account by the payout.
            #expect(try balance("1100") == 0)
            #expect(try balance("1200") == 0)
            #expect(try balance("1300") == 0)
            // Fees = gross − net (the report's net), and the bank received the payout, which is the net (on the bank's
            // statement: the acquirer's SettlementPayoutPaid posts nothing).
            let fees = try ["6100", "6110", "6120", "6130", "6190"].reduce(0) { $0 + (try balance($1, mayBeAbsent: true)) }
            #expect(fees == gross - net && fees > 0)
            #expect(try balance("1000") == payout && payout == net)
            // Income less refunds, tax and fees account for the bank deposit.
            let income = try -(balance("4000") + balance("4100") + balance("4200", mayBeAbsent: true) + balance("4900"))
            #expect(income + (try -balance("2100")) - fees == payout)

            // The CLI's export reads the same journal from the database.
            let export = try await DaemonProcess.run(
                [
                    "journal", "export", "--from", from, "--to", RFC3339.format(to.epochMicroseconds), "--format", "csv",
                    "--database-url", "postgres://ledger_app@/\(db.name)?host=\(db.endpoint.socketDirectory)",
                ],
                environment: DaemonProcess.environment(["LEDGERD_LOG_LEVEL": "warning"])
            )
            #expect(export.status == 0, "\(export.output)")
            let rows = export.output.split(separator: "\r\n")
            #expect(rows.first.map(String.init) == JournalExport.columns.joined(separator: ","))
            #expect(rows.count - 1 == journal.entries.reduce(0) { $0 + $1.lines.count })
            // Review 3, N3: paged. Pages of one and of three journal events give the same entries, in order, as one reply;
            // the last page has no `next_after`.
            for limit in [1, 3] {
                var paged: [Components.Schemas.JournalEntry] = []
                var after = 0
                var pages = 0
                while pages < 1_000 {
                    let uri = "/journal?from=\(from)&to=\(RFC3339.format(to.epochMicroseconds))&limit=\(limit)&after=\(after)"
                    let (pageStatus, pageText) = try await call(client, .get, uri, key: TestApp.auditorKey)
                    #expect(pageStatus == 200, "\(pageText)")
                    let page = try WireJSON.decode(JournalReply.self, from: pageText)
                    #expect(page.entries.count <= limit)
                    paged += page.entries
                    pages += 1
                    guard let next = page.nextAfter else { break }
                    #expect(next > after)
                    after = next
                }
                #expect(paged == journal.entries, "limit \(limit): \(paged.map(\.eventType))")
                #expect(pages > journal.entries.count / limit, "limit \(limit): \(pages) pages")
            }
            #expect(try await call(client, .get, "/journal?from=\(from)&to=\(RFC3339.format(to.epochMicroseconds))&limit=10001").0 == 400)
            // A period that ends before it starts is empty, not malformed (security review 4: positive data acceptance).
            let backwards = try await call(client, .get, "/journal?from=\(RFC3339.format(to.epochMicroseconds))&to=\(from)")
            #expect(backwards.0 == 200, "\(backwards)")
            #expect(try WireJSON.decode(JournalReply.self, from: backwards.1).entries.isEmpty)
            #expect(try await call(client, .get, "/journal?from=yesterday&to=\(from)").0 == 400)
            #expect(try await call(client, .get, "/journal?to=\(from)").0 == 400)
        }
    }
}
