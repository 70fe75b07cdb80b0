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
}
