import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerCoreTestSupport
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

@testable import LedgerHTTP

/// Text formats on bytes (security review 4, M1, M3, L1) through the real router and database: a capture key with a
/// quote and a combining mark settles and reconciles, a stored report that does not read back is a recorded break (not
/// a 500), an uploaded reference that would re-aim a console form is refused, and the console escapes every echoed
/// input per byte and percent-encodes ids in its URLs.
@Suite(.machine(.shared)) struct TextFormatTests {
    let storefront = StorefrontDriver()
    typealias Browser = ConsoleTests.Browser

    /// `k,"́x` from its bytes: a quote followed by U+0301 is one `Character` that is not `"`.
    static let captureKey = String(decoding: [0x6B, 0x2C, 0x22, 0xCC, 0x81, 0x78], as: UTF8.self)

    func runSettlement(_ client: any TestClientProtocol, _ day: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(
            uri: "/settlements/run",
            method: .post,
            headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"business_date":"\#(day)"}"#)
        ) { ($0.status, String(buffer: $0.body)) }
    }

    func reconciliation(_ client: any TestClientProtocol, _ batch: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(uri: "/settlements/\(batch)/reconciliation", method: .get, headers: TestApp.bearer(TestApp.auditorKey)) {
            ($0.status, String(buffer: $0.body))
        }
    }

    @Test("M1: a capture whose Idempotency-Key holds a quote and a combining mark settles, reconciles, and later runs still settle")
    func aCaptureKeyWithAQuoteAndACombiningMarkSettles() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            let (captured, text) = try await BackOfficeDriver().capture(client, id, key: .given(Self.captureKey))
            // The key is refused outright where keys are printable ASCII only (review 4, L7); either way no 500 follows.
            #expect(captured == .ok || captured == .badRequest, "\(text)")
            if captured == .badRequest { _ = try await BackOfficeDriver().capture(client, id) }
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            let (first, firstText) = try await runSettlement(client, "2026-06-17")
            #expect(first == .ok, "\(firstText)")
            let batch = try #require(try await services.settlement.batches(from: "2026-06-17", to: "2026-06-17").first?.opened.batchID)
            let (found, view) = try await reconciliation(client, batch)
            #expect(found == .ok, "\(view)")
            #expect(!view.contains("cannot be read"), "\(view)")
            // The next day's run reconciles this batch again (its window closes): still 200.
            clock.set(TestApp.instant("2026-06-18T22:00:01Z"))
            let (second, secondText) = try await runSettlement(client, "2026-06-18")
            #expect(second == .ok, "\(secondText)")
        }
    }

    @Test("a stored report that does not read back is a recorded break with the reason, and later runs still settle")
    func anUnreadableStoredReportIsARecordedBreak() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let database = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: database, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            #expect(try await runSettlement(client, "2026-06-17").0 == .ok)
            let batch = try #require(try await services.settlement.batches(from: "2026-06-17", to: "2026-06-17").first?.opened.batchID)
            // What a writer quoting by Character stored: a quote, a combining mark, then text after the closing quote.
            try await database.tamper(
                "UPDATE ledger.settlement_report_parts SET csv = csv || E'\"k,\"\\xcc\\x81x\"\\r\\n' WHERE batch_id = '\(batch)'"
            )
            let second = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, second).0 == .ok)
            clock.set(TestApp.instant("2026-06-18T22:00:01Z"))
            let (status, text) = try await runSettlement(client, "2026-06-18")
            #expect(status == .ok, "\(text)")
            let (found, view) = try await reconciliation(client, batch)
            #expect(found == .ok && view.contains("the acquirer's report cannot be read") && view.contains("unmapped_record"), "\(view)")
            clock.set(TestApp.instant("2026-06-19T22:00:01Z"))
            #expect(try await runSettlement(client, "2026-06-19").0 == .ok)
        }
    }

    @Test("M3: an uploaded report whose reference holds a path is refused (422 naming row and column), nothing appended")
    func anUploadedReferenceWithAPathIsRefused() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let before = try await services.store.head().position
            var line = SettlementReportLine.sample
            line.modificationMerchantReference = "x/../../audit/checkpoints?"
            let csv = try SettlementReportCSV().write([line])
            let (status, text) = try await client.execute(
                uri: "/reconciliation/reports?format=ledger",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "text/csv"],
                body: ByteBuffer(string: csv)
            ) { ($0.status, String(buffer: $0.body)) }
            #expect(status == .unprocessableContent, "\(text)")
            #expect(text.contains("row 2") && text.contains("Modification Merchant Reference"), "\(text)")
            #expect(try await services.store.head().position == before)
        }
    }

    /// The seven inputs the console echoes into `value="…"` (review 4, L1), each with a quote, a less-than and an
    /// ampersand followed by a combining mark: none is written raw.
    @Test("L1: every echoed input is escaped per byte, a quote with a combining mark included")
    func echoedInputsAreEscapedPerByte() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            // `"́ type=image src=/console/favicon.svg formaction=/console/sign-out <́ &́ '́`, percent-encoded.
            let payload = "%22%CC%81%20type=image%20src=/console/favicon.svg%20formaction=/console/sign-out%20%3C%CC%81%26%CC%81%27%CC%81"
            let pages = [
                "/console/orders?q=\(payload)", "/console/orders?from=\(payload)", "/console/orders?to=\(payload)",
                "/console/settlements?from=\(payload)", "/console/audit/as-of?order=\(payload)", "/console/audit/journal?day=\(payload)",
                "/console/audit?verify=1&from=\(payload)",
            ]
            for uri in pages {
                let page = try await browser.request(uri)
                let bytes = Array(page.html.utf8)
                for special in [UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: "&"), UInt8(ascii: "'")] {
                    #expect(!Self.contains(bytes, [special, 0xCC, 0x81]), "\(uri): a raw \(UnicodeScalar(special)) before U+0301")
                }
                #expect(page.html.contains("value=\"&quot;\u{301} type=image src=/console/favicon.svg"), "\(uri): \(page.html)")
            }
        }
    }

    @Test("M3: a break id with / and ? is percent-encoded in its form's action, and the route decodes it")
    func aBreakIDIsOnePathSegment() async throws {
        let breakID = "settlement-1.missing_in_ledger.x/../../audit/checkpoints?"
        let view = ConsoleRoutes.BreakView(
            id: breakID,
            path: ConsoleRoutes.path("breaks", breakID),
            breakClass: "missing_in_ledger",
            reference: "x/../../audit/checkpoints?",
            expected: "—",
            actual: "1.00",
            detail: "",
            resolved: false,
            resolution: "",
            form: ConsoleRoutes.ResolveForm(reason: "", error: nil)
        )
        let report = ConsoleRoutes.ReportSection(
            heading: "The acquirer's report",
            recordedAt: "",
            counts: [],
            breaks: [view],
            breakCount: 1,
            shownFrom: 1,
            shownTo: 1,
            morePages: false,
            next: nil,
            previous: nil
        )
        let page = ConsoleRoutes.BatchPage(
            title: "Batch settlement-1",
            session: .init(actor: "operator:test", csrfToken: "token"),
            csrfToken: "token",
            id: "settlement-1",
            batchID: "settlement-1",
            notice: nil,
            figures: [],
            reconciled: true,
            reports: [report]
        )
        let html = try #require(ConsoleTemplates.library.render(page, withTemplate: "settlement"))
        #expect(html.contains("action=\"/console/breaks/settlement-1.missing_in_ledger.x%2F..%2F..%2Faudit%2Fcheckpoints%3F/resolve\""), "\(html)")
        #expect(!html.contains("checkpoints?/resolve"))
        try await TestApp.withApp(seed: true) { client, services in
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let form = try await browser.request("/console/today")
            let before = try await services.store.head().position
            let answer = try await browser.request(
                ConsoleRoutes.path("breaks", breakID) + "/resolve",
                method: .post,
                form: [("csrf_token", ConsoleTests.csrf(form.html)), ("batch_id", "settlement-1"), ("reason", "checked")]
            )
            // The break does not exist: the decoded id is named, nothing appended, no checkpoint signed.
            #expect(answer.status == .notFound && answer.html.contains("no break \(breakID)"), "\(answer.html)")
            #expect(try await services.store.head().position == before)
        }
    }

    /// The console percent-decodes its `:id` routes (M3's fix), so `%00` became a NUL that PostgreSQL refuses
    /// (`invalid byte sequence for encoding "UTF8": 0x00`): an order, batch or break URL, a resolve or capture form,
    /// and the order search answered 500 for what is only an id nothing carries.
    @Test("an id or search holding NUL is not found (no 500), nothing appended")
    func anIDHoldingNULIsNotFound() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let form = try await browser.request("/console/today")
            let before = try await services.store.head().position
            for uri in [
                "/console/orders/a%00b", "/console/settlements/%00", "/console/disputes/%00", "/console/orders?q=%00", "/console/orders?q=a%00b@x",
            ] {
                let page = try await browser.request(uri)
                #expect(page.status == .notFound, "\(uri): \(page.status)")
            }
            let posts: [(String, [(String, String)])] = [
                ("/console/breaks/a%00b/resolve", [("batch_id", "settlement-1"), ("reason", "checked")]),
                ("/console/orders/%00/capture", [("amount", "1.00")]),
                ("/console/orders/%00/void", []),
                ("/console/disputes/%00/accept", []),
            ]
            for (uri, fields) in posts {
                let answer = try await browser.request(uri, method: .post, form: [("csrf_token", ConsoleTests.csrf(form.html))] + fields)
                #expect(answer.status == .notFound, "\(uri): \(answer.status)")
            }
            #expect(try await services.store.head().position == before)
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
    }
}

/// The console's HTML escaping against 100,000 seeded random strings (``TextSamples``): no raw `"`, `<`, `>`, `&` or
/// `'` byte survives outside an entity, and unescaping gives the string back byte for byte.
@Suite struct ConsoleHTMLPropertyTests {
    static func unescape(_ html: String) -> [UInt8] {
        var out: [UInt8] = []
        let bytes = Array(html.utf8)
        let entities: [(String, UInt8)] = [("&amp;", 0x26), ("&lt;", 0x3C), ("&gt;", 0x3E), ("&quot;", 0x22), ("&#39;", 0x27)]
        var i = 0
        outer: while i < bytes.count {
            if bytes[i] == 0x26 {
                for (entity, byte) in entities {
                    let e = Array(entity.utf8)
                    if i + e.count <= bytes.count, Array(bytes[i..<i + e.count]) == e {
                        out.append(byte)
                        i += e.count
                        continue outer
                    }
                }
            }
            out.append(bytes[i])
            i += 1
        }
        return out
    }

    @Test("escape → unescape gives every string back, byte for byte, with no raw special byte", .seeded())
    func escapingRoundTrips() throws {
        var random = PropertySeed.generator()
        for _ in 0..<100_000 {
            let text = TextSamples.string(&random)
            let html = ConsoleHTML.escape(text)
            try #require(!html.utf8.contains { $0 == 0x22 || $0 == 0x3C || $0 == 0x3E || $0 == 0x27 }, "\(text.debugDescription)")
            // Every `&` left starts an entity.
            let bytes = Array(html.utf8)
            for (index, byte) in bytes.enumerated() where byte == 0x26 {
                // On bytes: `&gt;` then a combining mark is `&gt` and one `Character` `;́` (what the bug was made of).
                let entities = ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].map { Array($0.utf8) }
                try #require(entities.contains { bytes[index...].starts(with: $0) }, "\(text.debugDescription)")
            }
            try #require(Self.unescape(html) == Array(text.utf8), "\(text.debugDescription)")
        }
    }

    @Test("the console's templates render with it: a quote with a combining mark is an entity")
    func templatesUseIt() throws {
        let view = ConsoleRoutes.FindPage(session: .init(actor: "a", csrfToken: "t"), query: "\"\u{301}")
        let html = try #require(ConsoleTemplates.library.render(view, withTemplate: "orders"))
        #expect(html.contains("value=\"&quot;\u{301}\""), "\(html)")
        #expect(!html.hasPrefix("\n") && html.hasPrefix("<!doctype html>"))
    }
}

extension SettlementReportLine {
    /// A capture line of the model's layout, for uploads.
    static var sample: SettlementReportLine {
        SettlementReportLine(
            companyAccount: "Company",
            merchantAccount: "Merchant",
            pspReference: "psp-1",
            merchantReference: "order-1",
            paymentMethod: "visa",
            creationDate: nil,
            timeZone: "UTC",
            type: .settled,
            modificationReference: "psp-mod-1",
            grossCurrency: .usd,
            grossDebit: nil,
            grossCredit: Money(minorUnits: 500, currency: .usd),
            exchangeRate: nil,
            netCurrency: nil,
            netDebit: nil,
            netCredit: nil,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: "visa",
            modificationMerchantReference: "order-1-capture-1",
            batchNumber: 1
        )
    }
}

/// `ledgerd audit history|export --format csv` (``AuditExport``): the payment key of review 4, M2 stays one cell of a
/// 12-column row, and 100,000 seeded events with random text read back cell for cell (spreadsheet-safe).
@Suite struct AuditCSVPropertyTests {
    static func event(_ position: Int64, type: String, data: String, metadata: String) -> RecordedEvent {
        RecordedEvent(
            position: position,
            streamID: StreamID("order-1")!,
            streamVersion: 1,
            eventID: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!,
            type: type,
            schemaVersion: 1,
            data: data,
            metadata: metadata,
            effectiveAtMicros: 0,
            recordedAtMicros: 0,
            prevHash: [UInt8](repeating: 0, count: 32),
            hash: [UInt8](repeating: 1, count: 32)
        )
    }

    @Test("M2: an Idempotency-Key with quotes, combining marks and a formula stays in its cell")
    func thePaymentKeyStaysInItsCell() throws {
        let key = "anon\"\u{301},=HYPERLINK(1),\"\u{301}x"
        let metadata = #"{"idempotency_key":"# + key + #""}"#
        let records = try CSVReader.records(
            AuditExport.header(.csv)! + AuditExport.line(Self.event(1, type: "OrderOpened", data: "{}", metadata: metadata), .csv)
        )
        #expect(records.map(\.count) == [12, 12])
        #expect(Array(records[1][7].utf8) == Array(metadata.utf8))
        #expect(records.joined().allSatisfy { !$0.hasPrefix("=") })
    }

    @Test("random text in type, data and metadata reads back as CSVWriter.spreadsheetSafe writes it", .seeded())
    func auditCSVRoundTrips() throws {
        var random = PropertySeed.generator()
        for position in 1...Int64(100_000) {
            let event = Self.event(
                position,
                type: TextSamples.string(&random),
                data: TextSamples.string(&random),
                metadata: TextSamples.string(&random)
            )
            let read = try CSVReader.records(AuditExport.line(event, .csv))
            try #require(read.count == 1 && read[0].count == 12, "\(event.metadata.debugDescription)")
            for (cell, value) in zip([read[0][4], read[0][6], read[0][7]], [event.type, event.data, event.metadata]) {
                try #require(Array(cell.utf8) == Array(CSVWriter.spreadsheetSafe(value).utf8), "\(value.debugDescription)")
            }
        }
    }
}
