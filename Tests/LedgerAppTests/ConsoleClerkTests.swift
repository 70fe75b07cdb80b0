import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerServices
import LedgerTestSupport
import Testing

/// What a reconciliation clerk and an auditor work from (issue 55): a batch's items, downloads and early close; an
/// order's references and its timeline in sentences, the raw JSON one click away.
extension ConsoleTests {
    @Test func aBatchPageListsItsItemsByPageOffersItsDownloadsAndSaysWhoClosedItEarly() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            let second = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, first).0 == .ok)
            #expect(try await BackOfficeDriver().capture(client, second).0 == .ok)
            #expect(try await BackOfficeDriver().refund(client, second, #"{"amount": "5.00", "reason": "=HYPERLINK(\"x\")"}"#).0 == .ok)
            clock.set(TestApp.instant("2026-06-17T10:05:00Z"))
            #expect(try await BackOfficeDriver().runSettlement(client, #"{"close_now": true}"#).0 == .ok)
            let batch = try #require(try await services.settlement.batches(from: nil, to: nil).first)
            let id = batch.opened.batchID
            let browser = Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            let page = try await browser.request("/console/settlements/\(id)")
            #expect(page.status == .ok)
            #expect(
                page.html.contains("id=\"closed-early\">The day was closed early by operator:env-operator-1 at 2026-06-17T10:05:00Z"),
                "\(page.html)"
            )
            // The three items, each linked to its order, in ledger order.
            let rows = page.html.components(separatedBy: "<tr><td class=\"num\">").dropFirst().filter { $0.contains("/console/orders/") }
            #expect(rows.count == 3, "\(page.html)")
            #expect(rows.map { $0.contains("<td>capture</td>") } == [true, true, false] && rows.last?.contains("<td>refund</td>") == true)
            #expect(page.html.contains("<a href=\"/console/orders/\(first)\">") && page.html.contains("5.00 USD"))
            // The next page after the first item holds the other two, with a way back.
            let firstPosition = try #require(rows.first?.split(separator: "<").first.map(String.init))
            let later = try await browser.request("/console/settlements/\(id)?items_after=\(firstPosition)")
            #expect(later.html.components(separatedBy: "<tr><td class=\"num\">").dropFirst().filter { $0.contains("/console/orders/") }.count == 2)
            #expect(later.html.contains("id=\"items-first\""))
            // Downloads: the acquirer's report as stored, and the items as spreadsheet-safe CSV.
            #expect(
                page.html.contains("href=\"/console/settlements/\(id)/report.csv\"")
                    && page.html.contains("href=\"/console/settlements/\(id)/items.csv\"")
            )
            let report = try await browser.request("/console/settlements/\(id)/report.csv")
            #expect(report.status == .ok && report.headers[.contentType] == "text/csv; charset=utf-8")
            let (_, stored) = try await BackOfficeDriver().get(client, "/settlements/\(id)/report.csv")
            #expect(report.html == stored && !stored.isEmpty)
            let items = try await browser.request("/console/settlements/\(id)/items.csv")
            #expect(items.status == .ok && items.headers[.contentDisposition] == "attachment; filename=\"items-\(id).csv\"")
            let lines = items.html.split(separator: "\r\n")
            #expect(lines.first == "position,kind,order_id,modification_reference,psp_modification_reference,amount,currency,recorded_at")
            #expect(lines.count == 4 && lines.dropFirst().allSatisfy { $0.contains(",USD,2026-06-17T10:0") }, "\(items.html)")
            #expect(lines.last?.contains(",refund,\(second),") == true && lines.last?.contains(",5.00,USD,") == true, "\(items.html)")
            // Signed out: no file.
            let stranger = try await Browser(client).request("/console/settlements/\(id)/items.csv")
            #expect(stranger.status == .seeOther && stranger.location == "/console/sign-in")
            #expect(try await browser.request("/console/settlements/no-such-batch/items.csv").status == .notFound)
        }
    }

    @Test func anOrderPageShowsItsReferencesAndATimelineInSentencesWithTheRawEventsOneClickAway() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id, #"{"amount": "20.00"}"#).0 == .ok)
            #expect(try await BackOfficeDriver().ship(client, id, #"{"carrier": "UPS", "tracking": "1Z999AA10123456784"}"#).0 == .ok)
            let (_, text) = try await BackOfficeDriver().get(client, "/orders/\(id)")
            let row = try #require((try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["order"] as? [String: Any])
            let psp = try #require(row["psp_reference"] as? String)
            let authCode = try #require((row["hold"] as? [String: Any])?["auth_code"] as? String)
            let browser = Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            let page = try await browser.request("/console/orders/\(id)")
            #expect(page.html.contains("<dt>PSP reference</dt><dd id=\"ref-psp\"><code>\(psp)</code></dd>"), "\(page.html)")
            #expect(page.html.contains("<dt>Authorization code</dt><dd id=\"ref-auth-code\"><code>\(authCode)</code></dd>"))
            #expect(page.html.contains("<dt>Tracking</dt><dd id=\"ref-tracking\"><code>UPS 1Z999AA10123456784</code></dd>"))
            #expect(page.html.contains("<td class=\"sentence\">captured 20.00 USD by operator:env-operator-1<details class=\"raw\">"), "\(page.html)")
            #expect(page.html.contains("<td class=\"sentence\">payment authorized 59.00 USD (PSP reference \(psp)) by storefront"))
            #expect(page.html.contains("shipped (now shipped, carrier UPS, tracking 1Z999AA10123456784) by operator:env-operator-1"))
            // The raw event is still there for an auditor, inside its toggle.
            #expect(page.html.contains("<summary>raw</summary><code class=\"data\">{&quot;amount&quot;"), "\(page.html)")
            _ = services
        }
    }

    /// Every event type of the catalogue has its own sentence: a clerk never reads a bare type name or JSON.
    @Test func everyEventTypeInTheCatalogueHasASentence() {
        var phrases: [String: EventKind] = [:]
        for entry in EventCatalogue.entries {
            let phrase = EventSentences.phrase(entry.kind)
            #expect(!phrase.isEmpty && phrase != entry.type, "\(entry.type)")
            #expect(phrases.updateValue(entry.kind, forKey: phrase) == nil, "\(entry.type) shares its sentence with another type")
            #expect(EventSentences.sentence(type: entry.type, data: "{}", actor: "operator:op-1") == "\(phrase) by operator:op-1")
        }
        #expect(phrases.count == EventKind.allCases.count)
        let captured = #"{"amount":{"amount":"20.00","currency":"USD"},"final":false,"order_id":"x"}"#
        #expect(EventSentences.sentence(type: "HoldCaptured", data: captured, actor: "operator:op-1") == "captured 20.00 USD by operator:op-1")
        #expect(EventSentences.sentence(type: "SomethingNew", data: "{}", actor: "") == "SomethingNew")
    }

    /// The hidden fields of the confirmation page's form, as a browser posts them.
    static func confirmFields(_ html: String) -> [(String, String)] {
        guard let start = html.range(of: "id=\"confirm-form\""), let end = html.range(of: "</form>", range: start.upperBound..<html.endIndex) else {
            return []
        }
        let form = html[start.upperBound..<end.lowerBound]
        return form.components(separatedBy: "<input type=\"hidden\" name=\"").dropFirst().compactMap { part in
            let pieces = part.components(separatedBy: "\" value=\"")
            guard pieces.count >= 2, let value = pieces[1].components(separatedBy: "\">").first else { return nil }
            return (pieces[0], value.replacingOccurrences(of: "&amp;", with: "&"))
        }
    }

    /// A refund through the console: its form is checked (a bad amount refused beside the field), then a page says what
    /// will happen with the amounts; Cancel appends nothing; the confirmed POST appends exactly what the API's refund
    /// appends, and a double submit of it nothing more.
    @Test func aRefundIsConfirmedOnAPageOfItsOwnAndACancelledOneAppendsNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let reference = try await storefront.placeOrder(client)
            let id = try await storefront.placeOrder(client)
            for order in [reference, id] { #expect(try await BackOfficeDriver().capture(client, order, #"{"amount": "20.00"}"#).0 == .ok) }
            // What one refund appends through the API.
            var before = try await head(services)
            #expect(try await BackOfficeDriver().refund(client, reference, #"{"amount": "5.00", "reason": "scratched"}"#).0 == .ok)
            let apiEvents = try await head(services) - before
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let page = try await browser.request("/console/orders/\(id)")
            let key = try #require(Self.value(of: "idempotency_key", in: page.html.components(separatedBy: "id=\"refund-form\"").last ?? ""))
            before = try await head(services)
            let bad = try await browser.request(
                "/console/orders/\(id)/refund",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("idempotency_key", key), ("amount", "abc"), ("reason", "scratched")]
            )
            #expect((400..<500).contains(bad.status.code) && bad.html.contains("id=\"refund-amount-error\"") && !bad.html.contains("confirm-form"))
            let confirm = try await browser.request(
                "/console/orders/\(id)/refund",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("idempotency_key", key), ("amount", "5.00"), ("reason", "scratched")]
            )
            #expect(confirm.status == .ok, "\(confirm.html)")
            #expect(confirm.html.contains("id=\"confirm-what\">Refund 5.00 USD of order \(id) to the shopper&#39;s card."), "\(confirm.html)")
            #expect(confirm.html.contains("<dt>captured so far</dt><dd>20.00 USD</dd>") && confirm.html.contains("<dt>reason</dt><dd>scratched</dd>"))
            #expect(confirm.html.contains("<a href=\"/console/orders/\(id)\" id=\"confirm-cancel\">"))
            let fields = Self.confirmFields(confirm.html)
            #expect(fields.map(\.0) == ["csrf_token", "idempotency_key", "amount", "reason", "confirmed"], "\(fields)")
            #expect(fields.first { $0.0 == "idempotency_key" }?.1 == key)
            // Nothing yet, and Cancel (a GET back to the order) appends nothing either.
            #expect(try await head(services) == before)
            #expect(try await browser.request("/console/orders/\(id)").status == .ok)
            #expect(try await head(services) == before)
            let done = try await browser.request("/console/orders/\(id)/refund", method: .post, form: fields)
            #expect(done.status == .seeOther && done.location == "/console/orders/\(id)?done=refund", "\(done.html)")
            #expect(try await head(services) - before == apiEvents && apiEvents > 0)
            #expect(try await services.eventCount(type: "HoldRefunded") == 2)
            // The confirmed form posted twice (a double click): its idempotency key replays, nothing more is appended.
            let again = try await browser.request("/console/orders/\(id)/refund", method: .post, form: fields)
            #expect(again.status == .seeOther)
            #expect(try await head(services) - before == apiEvents)
        }
    }

    /// Accepting a chargeback and closing the day now: each a page saying what will happen first; cancelled, nothing;
    /// confirmed, exactly the action's events.
    @Test func acceptingAChargebackAndClosingTheDayNowAreConfirmedFirst() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let order = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, order).0 == .ok)
            _ = try await services.disputes.receive(
                DisputeNotification(
                    disputeID: "dp-9",
                    stage: .chargeback,
                    orderID: order,
                    pspReference: "PSP-\(order)",
                    reason: .visaFraudCardAbsent,
                    amount: Money(minorUnits: 5900, currency: .usd)
                )
            )
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let dispute = try await browser.request("/console/disputes/dp-9")
            var before = try await head(services)
            let confirm = try await browser.request("/console/disputes/dp-9/accept", method: .post, form: [("csrf_token", Self.csrf(dispute.html))])
            #expect(
                confirm.status == .ok && confirm.html.contains("id=\"confirm-what\">Accept dispute dp-9 on order \(order): the 59.00 USD"),
                "\(confirm.html)"
            )
            #expect(confirm.html.contains("<a href=\"/console/disputes/dp-9\" id=\"confirm-cancel\">"))
            #expect(try await head(services) == before)
            let accepted = try await browser.request("/console/disputes/dp-9/accept", method: .post, form: Self.confirmFields(confirm.html))
            #expect(accepted.status == .seeOther && accepted.location == "/console/disputes/dp-9?done=accept", "\(accepted.html)")
            #expect(try await services.disputes.dispute(id: "dp-9")?.state.status.isClosed == true)
            let dp9 = try await services.store.readStream(try #require(StreamID("dispute-dp-9")))
            #expect(try await head(services) - before == Int64(dp9.filter { $0.position > before }.count), "only the dispute's events")

            clock.set(TestApp.instant("2026-06-17T10:05:00Z"))
            let settlements = try await browser.request("/console/settlements")
            before = try await head(services)
            let close = try await browser.request(
                "/console/settlements/run",
                method: .post,
                form: [("csrf_token", Self.csrf(settlements.html)), ("close_now", "true")]
            )
            #expect(close.status == .ok && close.html.contains("id=\"confirm-what\">Close the open business day 2026-06-17 now"), "\(close.html)")
            #expect(close.html.contains("<dt>scheduled cut-off</dt><dd>2026-06-17T22:00:00Z</dd>"))
            let opened = try await services.eventCount(type: "SettlementBatchOpened")
            #expect(try await head(services) == before && opened == 0)
            let run = try await browser.request("/console/settlements/run", method: .post, form: Self.confirmFields(close.html))
            #expect(run.status == .ok && run.html.contains("closed early by operator:env-operator-1"), "\(run.html)")
            #expect(try await services.eventCount(type: "SettlementBatchOpened") == 1)
        }
    }

    /// Every list as CSV (orders with the list's filters, disputes, a batch's breaks): the expected rows, the list page
    /// links its file, and a bad filter is the API's 400.
    @Test func everyListExportsAsCSVWithTheExpectedRows() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            let second = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, first).0 == .ok)
            _ = try await services.disputes.receive(
                DisputeNotification(
                    disputeID: "dp-7",
                    stage: .chargeback,
                    orderID: first,
                    pspReference: "PSP-\(first)",
                    reason: .visaFraudCardAbsent,
                    amount: Money(minorUnits: 5900, currency: .usd)
                )
            )
            let browser = Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            let list = try await browser.request("/console/orders?status=authorized")
            #expect(list.html.contains("id=\"export-csv\" href=\"/console/orders.csv?status=authorized\""), "\(list.html)")
            let all = try await browser.request("/console/orders.csv")
            #expect(all.status == .ok && all.headers[.contentType] == "text/csv; charset=utf-8")
            var lines = all.html.split(separator: "\r\n")
            #expect(lines.first == "order_id,opened_at,status,total,currency" && lines.count == 3, "\(all.html)")
            #expect(Set(lines.dropFirst().map { String($0.prefix(36)) }) == [first, second])
            let authorized = try await browser.request("/console/orders.csv?status=authorized")
            lines = authorized.html.split(separator: "\r\n")
            #expect(lines.count == 2 && lines[1].hasPrefix("\(second),") && lines[1].hasSuffix(",authorized,59.00,USD"), "\(authorized.html)")
            #expect(try await browser.request("/console/orders.csv?status=nope").status == .badRequest)
            let queue = try await browser.request("/console/disputes")
            #expect(queue.html.contains("id=\"export-csv\" href=\"/console/disputes.csv\""))
            let disputes = try await browser.request("/console/disputes.csv")
            lines = disputes.html.split(separator: "\r\n")
            #expect(lines.first == "dispute_id,order_id,status,reason,due_at,amount,currency" && lines.count == 2, "\(disputes.html)")
            #expect(lines.last?.hasPrefix("dp-7,\(first),charged_back,") == true && lines.last?.hasSuffix(",59.00,USD") == true)
            #expect(try await browser.request("/console/disputes.csv?status=nope").status == .badRequest)
            clock.set(TestApp.instant("2026-06-17T10:05:00Z"))
            #expect(try await BackOfficeDriver().runSettlement(client, #"{"close_now": true}"#).0 == .ok)
            let batch = try #require(try await services.settlement.batches(from: nil, to: nil).first).opened.batchID
            let breaks = try await browser.request("/console/settlements/\(batch)/breaks.csv")
            #expect(
                breaks.status == .ok && breaks.html == "report,break_id,class,reference,expected,actual,state,resolution,detail\r\n",
                "\(breaks.html)"
            )
            #expect(try await browser.request("/console/settlements/\(batch)").html.contains("href=\"/console/settlements/\(batch)/breaks.csv\""))
        }
    }
}
