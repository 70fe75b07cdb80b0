import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

/// The console's day of work through the real router and database (issue 32): the actions an order's state allows,
/// finding an order by the references reconciliation staff hold (and by e-mail, an operator only), Today's
/// movements, cut-off and consumers, a day's settlement run streamed to the page, an acquirer's report uploaded
/// with a mismatching line and its break resolved, and Audit's checkpoints, as-of view, journal and exports. Each
/// refusal is checked in the ledger too: nothing appended.
extension ConsoleTests {
    /// The `id`s of the action forms on an order page, in page order.
    static func actionForms(_ html: String) -> [String] {
        ["capture", "void", "refund", "ship"].filter { html.contains("id=\"\($0)-form\"") }
    }

    @Test func anOrdersPageOffersOnlyTheActionsItsStateAllows() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let authorized = try await storefront.placeOrder(client)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            var page = try await browser.request("/console/orders/\(authorized)")
            // Nothing captured yet: nothing to refund.
            #expect(Self.actionForms(page.html) == ["capture", "void", "ship"], "\(page.html)")
            #expect(try await BackOfficeDriver().capture(client, authorized).0 == .ok)
            page = try await browser.request("/console/orders/\(authorized)")
            // Captured whole: the hold is closed, nothing left to capture or void.
            #expect(Self.actionForms(page.html) == ["refund", "ship"], "\(page.html)")
            let voided = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().void(client, voided).0 == .ok)
            page = try await browser.request("/console/orders/\(voided)")
            #expect(Self.actionForms(page.html).isEmpty && page.html.contains("id=\"no-action\">No action is open for an order that is voided."))
            // A form the state no longer allows, posted anyway (a stale page), is the API's refusal, nothing appended.
            let before = try await head(services)
            let stale = try await browser.request(
                "/console/orders/\(voided)/capture",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("idempotency_key", "stale-1"), ("amount", "1.00")]
            )
            #expect(stale.status == .conflict || stale.status == .unprocessableContent, "\(stale.status)")
            #expect(stale.html.contains("id=\"capture-form\""), "the refused form stays, with its error")
            #expect(try await head(services) == before)
            // An auditor sees no form at all, whatever the state.
            let auditor = Browser(client)
            try await auditor.signIn(TestApp.auditorKey)
            let audited = try await auditor.request("/console/orders/\(authorized)")
            #expect(Self.actionForms(audited.html).isEmpty && !audited.html.contains("no-action"))
        }
    }

    @Test func ordersAreFoundByPSPReferenceOrEmailAndAnAuditorCannotSearchByEmail() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let first = try await storefront.placeOrder(client)
            let (_, text) = try await BackOfficeDriver().get(client, "/orders/\(first)")
            let row = try #require((try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["order"] as? [String: Any])
            let psp = try #require(row["psp_reference"] as? String)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            // The merchant reference is the order id; the PSP reference is the acquirer's.
            var found = try await browser.request("/console/orders?q=\(first)")
            #expect(found.status == .seeOther && found.location == "/console/orders/\(first)")
            found = try await browser.request("/console/orders?q=\(psp)")
            #expect(found.status == .seeOther && found.location == "/console/orders/\(first)", "\(found.html)")
            // One shopper, one order: to its page; two: both listed.
            found = try await browser.request("/console/orders?q=JANE%40Example.com")
            #expect(found.status == .seeOther && found.location == "/console/orders/\(first)", "\(found.html)")
            let second = try await storefront.placeOrder(client)
            found = try await browser.request("/console/orders?q=jane%40example.com")
            #expect(found.status == .ok && found.html.contains("Orders matching jane@example.com"))
            #expect(found.html.contains("/console/orders/\(first)\"") && found.html.contains("/console/orders/\(second)\""))
            let none = try await browser.request("/console/orders?q=nobody%40example.com")
            #expect(none.status == .notFound && none.html.contains("id=\"id-error\"><code>not_found</code>"), "\(none.html)")
            // An erased contact is found no more.
            _ = try await services.privacy.erase(customer: "jane@example.com", actor: "operator:test")
            #expect(try await browser.request("/console/orders?q=jane%40example.com").status == .notFound)
            // The auditor: references yes, e-mail no (no personal data), and the field does not offer it.
            let auditor = Browser(client)
            try await auditor.signIn(TestApp.auditorKey)
            let form = try await auditor.request("/console/orders")
            #expect(!form.html.contains("e-mail") && !form.html.contains("email"))
            #expect(try await auditor.request("/console/orders?q=\(psp)").location == "/console/orders/\(first)")
            let refused = try await auditor.request("/console/orders?q=jane%40example.com")
            #expect(refused.status == .forbidden && refused.html.contains("<code>forbidden</code> a search by e-mail needs an operator key"))
        }
    }

    /// Today's movements are the journal's, by the ledger's own time of recording (the daemon's clock in production):
    /// this test runs on the real clock.
    @Test func todayShowsTheDaysMovementsAndEachConsumersLag() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let first = try await storefront.placeOrder(client)
            let second = try await storefront.placeOrder(client)
            // A declined card: a payment answered, nothing authorized.
            let (declined, _) = try await storefront.pay(client, StorefrontDriver.paymentBody(source: "tok_chargeDeclined"))
            #expect(declined.code == 402, "\(declined)")
            #expect(try await BackOfficeDriver().capture(client, first).0 == .ok)
            #expect(try await BackOfficeDriver().capture(client, second).0 == .ok)
            #expect(try await BackOfficeDriver().refund(client, second, #"{"amount": "5.00", "reason": "scratched"}"#).0 == .ok)
            let subscription = try await services.subscriptions.create(name: "erp", types: [], streamPrefixes: [], from: .after(0))
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"orders-count\">3<"), "\(today.html)")
            #expect(today.html.contains("<tr><td>USD</td><td>authorized</td><td class=\"num\">2</td><td class=\"num\">118.00</td></tr>"))
            #expect(today.html.contains("<tr><td>—</td><td>declined</td><td class=\"num\">1</td><td class=\"num\">—</td></tr>"))
            #expect(
                today.html.contains("<tr><td>captures</td><td>USD</td><td class=\"num\">2</td><td class=\"num\">118.00</td></tr>"),
                "\(today.html)"
            )
            #expect(today.html.contains("<tr><td>refunds</td><td>USD</td><td class=\"num\">1</td><td class=\"num\">5.00</td></tr>"))
            let head = try await head(services)
            #expect(subscription.checkpoint == 0)
            #expect(
                today.html.contains(
                    "<td>subscription</td><td><code>erp</code></td><td>active</td><td class=\"num\">0</td><td class=\"num\">\(head)</td>"
                ),
                "\(today.html)"
            )
            // Acknowledged to the head: nothing behind.
            _ = try await services.subscriptions.acknowledge("erp", through: head)
            let later = try await browser.request("/console/today")
            #expect(later.html.contains("<td>active</td><td class=\"num\">\(head)</td><td class=\"num\">0</td><td>acknowledged "))
        }
    }

    /// The next cut-off and the chart of the settled days' gross, fees and net, at the app's simulated clock.
    @Test func todayShowsTheNextCutOffAndTheSettledDaysGrossFeesAndNet() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let today = try await browser.request("/console/today")
            #expect(
                today.html.contains(
                    "id=\"next-cut-off\">The open business day <strong>2026-06-17</strong> closes at its cut-off 2026-06-17T22:00:00Z (in 12 h 00 min)."
                ),
                "\(today.html)"
            )
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            _ = try await BackOfficeDriver().settle(client, "2026-06-17")
            clock.set(TestApp.instant("2026-06-18T09:00:00Z"))
            try await browser.signIn(TestApp.operatorKey)
            let next = try await browser.request("/console/today")
            #expect(next.html.contains("<strong>2026-06-18</strong> closes at its cut-off 2026-06-18T22:00:00Z (in 13 h 00 min)"))
            let batch = try #require(try await services.settlement.batches(from: "2026-06-17", to: "2026-06-17").first)
            let gross = try #require(batch.closed).gross.decimalString
            #expect(next.html.contains("<title>2026-06-17 gross: \(gross) USD</title>"), "\(next.html)")
            if let cleared = batch.cleared {
                #expect(next.html.contains("<title>2026-06-17 net: \(cleared.net.decimalString) USD</title>"))
                #expect(next.html.contains("class=\"bar bar-fees\""))
            }
            #expect(next.html.contains("class=\"key bar-gross\">gross</span>"))
        }
    }

    @Test func anOperatorRunsADaysSettlementAndTheRunIsStreamedToThePage() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            var page = try await browser.request("/console/settlements")
            #expect(page.html.contains("id=\"run-form\"") && page.html.contains("id=\"upload-form\""))
            // A bad date and a cut-off not reached: the API's errors beside the field, nothing appended.
            let before = try await head(services)
            let csrf = Self.csrf(page.html)
            var refused = try await browser.request(
                "/console/settlements/run",
                method: .post,
                form: [("csrf_token", csrf), ("business_date", "2026-13-01")]
            )
            #expect(
                refused.status == .unprocessableContent && refused.html.contains("id=\"run-date-error\"><code>invalid_date</code>"),
                "\(refused.html)"
            )
            refused = try await browser.request(
                "/console/settlements/run",
                method: .post,
                form: [("csrf_token", csrf), ("business_date", "2026-06-17")]
            )
            #expect(refused.status.code >= 400 && refused.html.contains("id=\"run-date-error\"><code>cut_off_not_reached</code>"), "\(refused.html)")
            refused = try await browser.request(
                "/console/settlements/run",
                method: .post,
                form: [("csrf_token", csrf), ("business_date", "2026-06-17"), ("close_now", "true")]
            )
            #expect(refused.status.code == 400 || refused.status.code == 422, "\(refused.html)")
            #expect(try await head(services) == before)
            // An auditor's forged run is refused.
            let auditor = Browser(client)
            try await auditor.signIn(TestApp.auditorKey)
            let auditorPage = try await auditor.request("/console/settlements")
            #expect(!auditorPage.html.contains("id=\"run-form\"") && !auditorPage.html.contains("id=\"upload-form\""))
            let forged = try await auditor.request(
                "/console/settlements/run",
                method: .post,
                form: [("csrf_token", Self.csrf(auditorPage.html)), ("close_now", "true")]
            )
            #expect(forged.status == .forbidden)
            #expect(try await head(services) == before)
            // The operator closes the open day now: each step listed as it ran, then the batch.
            clock.set(TestApp.instant("2026-06-17T10:05:00Z"))
            let run = try await browser.request(
                "/console/settlements/run",
                method: .post,
                form: [("csrf_token", csrf), ("close_now", "true"), ("confirmed", "yes")]
            )
            #expect(run.status == .ok && run.headers[.contentType] == "text/html; charset=utf-8")
            #expect(run.html.contains("<ol id=\"run-progress\" class=\"progress\">") && run.html.contains("</html>"))
            let steps = run.html.components(separatedBy: "<li>").count - 1
            #expect(steps >= 3, "\(run.html)")
            let batch = try #require(try await services.settlement.batches(from: "2026-06-17", to: "2026-06-17").first, "\(run.html)")
            #expect(run.html.contains("id=\"run-done\">Settled 2026-06-17") && run.html.contains("closed early by operator:env-operator-1"))
            #expect(run.html.contains("<a href=\"/console/settlements/\(batch.opened.batchID)\">"), "\(run.html)")
            #expect(try await services.eventCount(type: "SettlementBatchOpened") == 1)
            page = try await browser.request("/console/settlements")
            #expect(page.html.contains("<a href=\"/console/settlements/\(batch.opened.batchID)\">"))
        }
    }

    /// Issue 55: on a weekend, `settle --today` closes the open business day, Monday, so the batch belongs to a date
    /// after today. Settlement and Today find batches by business date whatever today is: neither says "No batch".
    @Test func aBatchClosedOnAWeekendForMondayIsOnSettlementAndToday() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-20T10:00:00Z"))  // a Saturday
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            clock.set(TestApp.instant("2026-06-20T10:05:00Z"))
            let (status, text) = try await BackOfficeDriver().runSettlement(client, #"{"close_now": true}"#)
            #expect(status == .ok, "\(text)")
            let batch = try #require(try await services.settlement.batches(from: nil, to: nil).first, "\(text)")
            #expect(batch.opened.businessDate.description == "2026-06-22", "Monday's batch")
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let link = "<a href=\"/console/settlements/\(batch.opened.batchID)\">"
            let settlements = try await browser.request("/console/settlements")
            #expect(settlements.html.contains(link) && !settlements.html.contains("No batch."), "\(settlements.html)")
            let today = try await browser.request("/console/today")
            #expect(today.html.contains("Last batch <a href=\"/console/settlements/\(batch.opened.batchID)\">"), "\(today.html)")
            #expect(!today.html.contains("No settlement batch"))
        }
    }

    /// A form with a file, as a browser sends `multipart/form-data`.
    static func multipart(_ fields: [(String, String)], file: (name: String, filename: String, bytes: String)?) -> (String, String) {
        let boundary = "----ConsoleTestBoundary7MA4YWxkTrZu0gW"
        var body = ""
        for (name, value) in fields {
            body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
        }
        if let file {
            body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(file.name)\"; filename=\"\(file.filename)\"\r\n"
            body += "Content-Type: text/csv\r\n\r\n\(file.bytes)\r\n"
        }
        body += "--\(boundary)--\r\n"
        return ("multipart/form-data; boundary=\(boundary)", body)
    }

    func upload(_ client: any TestClientProtocol, _ browser: Browser, _ fields: [(String, String)], file: String?) async throws -> Browser.Page {
        let (type, body) = Self.multipart(fields, file: file.map { ("report", "report.csv", $0) })
        var headers: HTTPFields = [.contentType: type]
        headers[.cookie] = browser.cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        return try await client.execute(uri: "/console/reports", method: .post, headers: headers, body: ByteBuffer(string: body)) {
            Browser.Page(status: $0.status, headers: $0.headers, html: String(buffer: $0.body))
        }
    }

    @Test func anUploadedReportWithAMismatchingLineShowsItsBreakAndTheOperatorResolvesIt() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await BackOfficeDriver().settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await BackOfficeDriver().get(client, "/settlements/\(batchID)/report.csv")
            // The acquirer's own report, one settled line's gross changed by a cent.
            var lines = try SettlementReportCSV().parse(csv)
            let index = try #require(lines.firstIndex { $0.type == .settled })
            let credit = try #require(lines[index].grossCredit)
            lines[index].grossCredit = Money(minorUnits: credit.minorUnits - 1, currency: credit.currency)
            let altered = SettlementReportCSV.header + (try SettlementReportCSV().rows(lines, firstRow: 2))
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let page = try await browser.request("/console/settlements")
            let csrf = Self.csrf(page.html)
            let before = try await head(services)
            // Refused: no CSRF token, no file, an unknown batch — each nothing appended, the error beside the file field.
            var refused = try await upload(client, browser, [("format", "")], file: altered)
            #expect(refused.status == .forbidden && refused.html.contains("csrf_token_invalid"))
            refused = try await upload(client, browser, [("csrf_token", csrf)], file: nil)
            #expect(refused.status == .badRequest && refused.html.contains("id=\"report-file-error\"><code>missing_report</code>"), "\(refused.html)")
            refused = try await upload(client, browser, [("csrf_token", csrf), ("batch", "no-such-batch")], file: altered)
            #expect(refused.status.code >= 400 && refused.html.contains("id=\"report-file-error\">"), "\(refused.html)")
            #expect(refused.html.contains("value=\"no-such-batch\""), "what was typed stays")
            let auditor = Browser(client)
            try await auditor.signIn(TestApp.auditorKey)
            #expect(try await upload(client, auditor, [("csrf_token", csrf)], file: altered).status == .forbidden)
            #expect(try await head(services) == before)
            // The upload: to the batch, where the uploaded report's break shows beside the acquirer's reconciliation.
            let done = try await upload(client, browser, [("csrf_token", csrf), ("format", "")], file: altered)
            #expect(done.status == .seeOther && done.location == "/console/settlements/\(batchID)?done=reconcile", "\(done.status) \(done.html)")
            var batchPage = try await browser.request(done.location!)
            #expect(batchPage.html.contains("The report was reconciled") && batchPage.html.contains("Uploaded report"))
            #expect(
                batchPage.html.contains("The acquirer&#39;s report") || batchPage.html.contains("The acquirer&#x27;s report"),
                "\(batchPage.html)"
            )
            #expect(batchPage.html.contains("<td class=\"break-class\">amount_mismatch</td>"), "\(batchPage.html)")
            let view = try #require(try await services.settlement.reconciliation(id: batchID))
            let uploaded = try #require(view.reports.first { $0.report != nil })
            let found = try #require(uploaded.breaks.first { $0.found.breakClass == .amountMismatch })
            #expect(found.found.figure(found.found.expected, in: credit.currency) == credit.decimalString)
            let cut = Money(minorUnits: credit.minorUnits - 1, currency: credit.currency).decimalString
            #expect(batchPage.html.contains("<td class=\"num\">\(credit.decimalString)</td><td class=\"num\">\(cut)</td>"), "amounts as decimals")
            // Today counts every report's open breaks, the upload's among them.
            let open = view.reports.flatMap(\.breaks).filter { $0.resolution == nil }.count
            #expect(open >= 1)
            let today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"open-breaks\">\(open)<") && today.html.contains("amount_mismatch"), "\(today.html)")
            // Resolved through the page's form: an event, and the page says who and why.
            let resolved = try await browser.request(
                "/console/breaks/\(found.found.breakID)/resolve",
                method: .post,
                form: [("csrf_token", csrf), ("batch_id", batchID), ("reason", "acquirer corrected the line, ticket 7")]
            )
            #expect(resolved.status == .seeOther, "\(resolved.html)")
            batchPage = try await browser.request("/console/settlements/\(batchID)")
            #expect(batchPage.html.contains("acquirer corrected the line, ticket 7 (operator:env-operator-1)"))
            #expect(try await services.eventCount(type: "ReconciliationBreakResolved") == 1)
        }
    }

    /// Audit reads by the ledger's time of recording (as `?as_of=` and `GET /journal` do): this test runs on the real clock.
    @Test func auditShowsTheCheckpointsAnOrderAsOfAMomentTheDaysJournalAndTheExports() async throws {
        try await TestApp.withApp(seed: true, checkpointKey: CheckpointKey.generate()) { client, services in
            let id = try await storefront.placeOrder(client)
            let authorized = try #require(try await services.store.read(from: 1, limit: 100_000).last).recordedAtMicros
            // The next whole second after the authorization; the capture comes more than a second later.
            let moment = (authorized / 1_000_000 + 1) * 1_000_000
            try await Task.sleep(for: .milliseconds(1_200))
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            let day = String(RFC3339.format(moment).prefix(10))
            let minute = RFC3339.format(moment).prefix(19).replacingOccurrences(of: ":", with: "%3A")
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            var page = try await browser.request("/console/audit")
            #expect(page.html.contains("No checkpoint signed yet.") && page.html.contains("id=\"sign-form\""))
            let signed = try await browser.request("/console/audit/checkpoints", method: .post, form: [("csrf_token", Self.csrf(page.html))])
            let head = try await head(services)
            #expect(signed.status == .seeOther && signed.location == "/console/audit?signed=\(head - 1)", "\(signed.html)")
            page = try await browser.request(signed.location!)
            #expect(page.html.contains("A checkpoint of position \(head - 1) was signed"))
            #expect(page.html.contains("<td class=\"ok\">valid</td><td class=\"ok\">matches</td>"), "\(page.html)")
            // The auditor: the checkpoints, no sign form, and a forged sign refused.
            let auditor = Browser(client)
            try await auditor.signIn(TestApp.auditorKey)
            page = try await auditor.request("/console/audit")
            #expect(page.html.contains("<td class=\"ok\">valid</td>") && !page.html.contains("id=\"sign-form\""))
            let forged = try await auditor.request("/console/audit/checkpoints", method: .post, form: [("csrf_token", Self.csrf(page.html))])
            #expect(forged.status == .forbidden)
            #expect(try await self.head(services) == head)
            // As of 10:30 the order was authorized; as of now it is captured.
            var asOf = try await auditor.request("/console/audit/as-of?order=\(id)&at=\(minute)")
            #expect(asOf.status == .ok && asOf.html.contains("id=\"order-status\">authorized<"), "\(asOf.html)")
            #expect(asOf.html.contains("As it stood at position") && !asOf.html.contains("HoldCaptured"))
            asOf = try await auditor.request("/console/audit/as-of?order=\(id)&position=\(head)")
            #expect(asOf.html.contains("id=\"order-status\">captured<") && asOf.html.contains("HoldCaptured"))
            let bad = try await auditor.request("/console/audit/as-of?order=\(id)&at=yesterday")
            #expect(bad.status == .badRequest && bad.html.contains("id=\"as-of-at-error\"><code>invalid_parameter</code>"))
            // The day's journal: the capture's entry, balanced; the exports as files.
            let journal = try await auditor.request("/console/audit/journal?day=\(day)")
            #expect(
                journal.html.contains("HoldCaptured")
                    && journal.html.contains("<td>USD</td><td class=\"num\">59.00</td><td class=\"num\">59.00</td><td class=\"ok\">balanced</td>"),
                "\(journal.html)"
            )
            let badDay = try await auditor.request("/console/audit/journal?day=2026-02-30")
            #expect(badDay.status == .badRequest && badDay.html.contains("id=\"journal-day-error\""))
            let csv = try await auditor.request("/console/audit/journal.csv?day=\(day)")
            #expect(csv.headers[.contentDisposition] == "attachment; filename=\"journal-\(day).csv\"")
            #expect(csv.html.hasPrefix(JournalExport.csvHeader) && csv.html.contains(",HoldCaptured,"), "\(csv.html)")
            let events = try await auditor.request("/console/audit/events.jsonl?from=2&to=5")
            let exported = events.html.split(separator: "\n")
            #expect(exported.count == 4 && exported.first?.contains("\"position\":2") == true, "\(events.html)")
            let log = try await services.store.read(from: 2, limit: 4)
            #expect(exported.map(String.init) == log.map { EventJSON.render($0) })
            let tooMany = try await auditor.request("/console/audit/events.jsonl?from=1&to=2000001")
            #expect(tooMany.status == .badRequest && tooMany.html.contains("range_too_large"))
            // From the last position there is: an empty file, not an overflow.
            let edge = try await auditor.request("/console/audit/events.jsonl?from=\(Int64.max)")
            #expect(edge.status == .ok && edge.html.isEmpty)
        }
    }

    /// Every input, select and text area on the console's pages has a label (by `for`, or wrapping it): an operator's
    /// pages, which carry every form.
    @Test func everyFieldOnEveryPageHasALabel() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            let id = try await storefront.placeOrder(client)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let paths = [
                "/console/today", "/console/orders", "/console/orders/\(id)", "/console/disputes", "/console/settlements", "/console/audit",
                "/console/audit/as-of", "/console/audit/journal?day=2026-06-17",
            ]
            var fields = 0
            for path in paths {
                let html = try await browser.request(path).html
                for field in Self.fields(html) {
                    fields += 1
                    if field.wrapped { continue }
                    let id = try #require(field.id, "\(path): a field without an id: \(field.tag)")
                    #expect(html.contains("<label for=\"\(id)\""), "\(path): no label for \(id)")
                }
            }
            #expect(fields >= 20, "the pages' fields were read: \(fields)")
            // The sign-in page too.
            let signIn = try await Browser(client).request("/console/sign-in").html
            #expect(signIn.contains("<label for=\"key\">"))
        }
    }

    /// The visible fields of `html` (hidden inputs left out): their tag, id, and whether a `<label>` wraps them.
    static func fields(_ html: String) -> [(tag: String, id: String?, wrapped: Bool)] {
        var found: [(String, String?, Bool)] = []
        var rest = Substring(html)
        while let start = rest.range(of: #"<(input|select|textarea)\b[^>]*>"#, options: .regularExpression) {
            let tag = String(rest[start])
            let before = rest[..<start.lowerBound]
            rest = rest[start.upperBound...]
            if tag.contains("type=\"hidden\"") { continue }
            let wrapped =
                (before.range(of: "<label", options: .backwards).map { label in
                    before.range(of: "</label>", options: .backwards).map { $0.lowerBound < label.lowerBound } ?? true
                }) ?? false
            let id = tag.range(of: #"id="[^"]+""#, options: .regularExpression).map { String(tag[$0].dropFirst(4).dropLast()) }
            found.append((tag, id, wrapped))
        }
        return found
    }
}
