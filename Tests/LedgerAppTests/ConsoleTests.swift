import AsyncHTTPClient
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
import NIOCore
import NIOSSL
import Testing

/// The back-office console (`/console/`, issue 32) through the real router and database: sign-in and its cookie,
/// the security headers, CSRF, the auditor's refusal, an operator's capture, the API's errors next to the field,
/// and a revoked key's session. Each refusal is checked in the ledger too: nothing appended.
@Suite(.machine(.shared)) struct ConsoleTests {
    let storefront = StorefrontDriver()

    /// A browser's view of the console: its cookies, kept across requests.
    final class Browser: @unchecked Sendable {
        let client: any TestClientProtocol
        var cookies: [String: String] = [:]

        init(_ client: any TestClientProtocol) { self.client = client }

        struct Page {
            let status: HTTPResponse.Status
            let headers: HTTPFields
            let html: String
            var location: String? { headers[.location] }
        }

        func request(_ uri: String, method: HTTPRequest.Method = .get, form: [(String, String)]? = nil) async throws -> Page {
            var headers = HTTPFields()
            if !cookies.isEmpty { headers[.cookie] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
            var body: ByteBuffer?
            if let form {
                headers[.contentType] = "application/x-www-form-urlencoded"
                var allowed = CharacterSet.alphanumerics
                allowed.insert(charactersIn: "-._~")
                body = ByteBuffer(
                    string: form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
                )
            }
            let page = try await client.execute(uri: uri, method: method, headers: headers, body: body) {
                Page(status: $0.status, headers: $0.headers, html: String(buffer: $0.body))
            }
            for header in page.headers[values: .setCookie] {
                let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(pair[0])
                let value = pair.count > 1 ? String(pair[1]) : ""
                if value.isEmpty || header.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
            }
            #expect(
                page.headers[.contentSecurityPolicy] == ConsoleMiddleware<LedgerRequestContext>.contentSecurityPolicy,
                "\(method) \(uri) without the console's CSP"
            )
            return page
        }

        /// Signs in with `key`; the answer to the sign-in POST.
        @discardableResult
        func signIn(_ key: String) async throws -> Page {
            let form = try await request("/console/sign-in")
            return try await request("/console/sign-in", method: .post, form: [("csrf_token", ConsoleTests.csrf(form.html)), ("key", key)])
        }
    }

    /// The first form's CSRF token in `html`.
    static func csrf(_ html: String) -> String { value(of: "csrf_token", in: html) ?? "" }

    /// The value of the first hidden input `name` in `html`, after `marker` when given.
    static func value(of name: String, in html: String, after marker: String? = nil) -> String? {
        var text = Substring(html)
        if let marker, let range = text.range(of: marker) { text = text[range.upperBound...] }
        guard let start = text.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = text[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    func head(_ services: ServiceContainer) async throws -> Int64 { try await services.store.head().position }

    @Test func signingInWithAGoodKeyOpensASessionWithSafeCookies() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let browser = Browser(client)
            let start = try await browser.request("/console/")
            #expect(start.status == .seeOther && start.location == "/console/sign-in")
            let form = try await browser.request("/console/sign-in")
            #expect(form.status == .ok && form.html.contains("type=\"password\""))
            #expect(!form.html.contains("<script") && !form.html.contains("style="))
            let answer = try await browser.request(
                "/console/sign-in",
                method: .post,
                form: [("csrf_token", Self.csrf(form.html)), ("key", TestApp.operatorKey)]
            )
            #expect(answer.status == .seeOther && answer.location == "/console/today")
            let cookie = try #require(answer.headers[values: .setCookie].first { $0.hasPrefix("ledgerd_console=") })
            #expect(cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict") && cookie.contains("; Path=/console"))
            #expect(cookie.contains("; Max-Age=28800") && !cookie.contains("Secure"), "plain HTTP: not Secure; \(cookie)")
            #expect(!cookie.contains(TestApp.operatorKey))
            let today = try await browser.request("/console/today")
            #expect(today.status == .ok && today.html.contains("operator:env-operator-1"), "\(today.html)")
            #expect(today.headers[.cacheControl] == "no-store")
            #expect(services.consoleSessions.count == 1)
            // Signing out ends the session: its cookie opens nothing any more.
            let session = try #require(browser.cookies["ledgerd_console"])
            let out = try await browser.request("/console/sign-out", method: .post, form: [("csrf_token", Self.csrf(today.html))])
            #expect(out.status == .seeOther && out.location == "/console/sign-in" && browser.cookies["ledgerd_console"] == nil)
            browser.cookies["ledgerd_console"] = session
            #expect(try await browser.request("/console/today").location == "/console/sign-in")
        }
    }

    /// Under TLS both of the console's cookies are `Secure` (a browser then never sends them over plain HTTP).
    @Test(.timeLimit(.minutes(3))) func underTLSTheCookiesAreSecure() async throws {
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-console-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let (store, _) = try HTTPTimeoutTests.serverAndClientTLS(in: files)
        let ca = try String(contentsOf: files.appendingPathComponent("ca.pem"), encoding: .utf8)
        let environment = [
            "LEDGERD_TLS_CERTIFICATE": files.appendingPathComponent("server.pem").path,
            "LEDGERD_TLS_KEY": files.appendingPathComponent("server.key").path,
        ]
        try await TestApp.withApp(environment: environment, live: true, tls: store) { client, _ in
            let port = try #require(client.port)
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(ca.utf8), format: .pem)])
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.redirectConfiguration = .disallow
            let https = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                let form = try await https.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/console/sign-in"), timeout: .seconds(10))
                let html = String(buffer: try await form.body.collect(upTo: 1 << 20))
                let signInCookie = try #require(form.headers["Set-Cookie"].first { $0.hasPrefix("ledgerd_console_sign_in=") })
                #expect(signInCookie.hasSuffix("; Secure") && signInCookie.contains("; HttpOnly"), "\(signInCookie)")
                var post = HTTPClientRequest(url: "https://127.0.0.1:\(port)/console/sign-in")
                post.method = .POST
                post.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                post.headers.add(name: "Cookie", value: String(signInCookie.split(separator: ";")[0]))
                let key = TestApp.operatorKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                post.body = .bytes(ByteBuffer(string: "csrf_token=\(Self.csrf(html))&key=\(key)"))
                let answer = try await https.execute(post, timeout: .seconds(10))
                #expect(answer.status == .seeOther)
                let session = try #require(answer.headers["Set-Cookie"].first { $0.hasPrefix("ledgerd_console=") })
                #expect(session.hasSuffix("; Secure") && session.contains("; SameSite=Strict") && session.contains("; HttpOnly"), "\(session)")
                #expect(answer.headers["Content-Security-Policy"].first == ConsoleMiddleware<LedgerRequestContext>.contentSecurityPolicy)
            } catch {
                try? await https.shutdown()
                throw error
            }
            try await https.shutdown()
        }
    }

    @Test func aBadKeyIsRefusedAndOpensNoSession() async throws {
        try await TestApp.withApp { client, services in
            let browser = Browser(client)
            for key in ["not-a-key", "olk_nobody.c2VjcmV0", ""] {
                let answer = try await browser.signIn(key)
                #expect(answer.status == .unauthorized && answer.html.contains("the API key is not valid"), "\(answer.html)")
                #expect(answer.headers[values: .setCookie].allSatisfy { !$0.hasPrefix("ledgerd_console=") })
            }
            #expect(services.consoleSessions.count == 0)
            // A sign-in without the form's token (another site posting a key) is refused before the key is looked at.
            browser.cookies = [:]
            let forged = try await browser.request("/console/sign-in", method: .post, form: [("key", TestApp.operatorKey)])
            #expect(forged.status == .forbidden && services.consoleSessions.count == 0)
            #expect(try await browser.request("/console/today").location == "/console/sign-in")
        }
    }

    @Test func everyConsoleReplyCarriesTheContentSecurityPolicy() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            let browser = Browser(client)
            // `Browser.request` checks the header on each of these.
            let css = try await browser.request("/console/console.css")
            #expect(css.status == .ok && css.headers[.contentType] == "text/css; charset=utf-8")
            #expect(try await browser.request("/console/favicon.svg").status == .ok)
            #expect(try await browser.request("/console/no-such-page").status == .notFound)
            #expect(try await browser.request("/console/orders/x/capture", method: .post, form: []).status == .unauthorized)
            try await browser.signIn(TestApp.operatorKey)
            let id = try await storefront.placeOrder(client)
            for path in ["/console/today", "/console/orders", "/console/orders/\(id)", "/console/audit", "/console/audit?verify=1"] {
                let page = try await browser.request(path)
                #expect(page.status == .ok, "\(path)")
                #expect(!page.html.contains("<script") && !page.html.contains("style=\"") && !page.html.contains("<style"), "\(path)")
            }
            #expect(try await browser.request("/console/orders/no-such-order").status == .notFound)
        }
    }

    @Test func aPostWithoutTheSessionsCSRFTokenIsRefusedAndAppendsNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let page = try await browser.request("/console/orders/\(id)")
            let key = try #require(Self.value(of: "idempotency_key", in: page.html, after: "id=\"capture-form\""))
            let before = try await head(services)
            let missing = try await browser.request(
                "/console/orders/\(id)/capture",
                method: .post,
                form: [("idempotency_key", key), ("amount", "10.00")]
            )
            #expect(missing.status == .forbidden && missing.html.contains("csrf_token_invalid"))
            let wrong = try await browser.request(
                "/console/orders/\(id)/capture",
                method: .post,
                form: [("csrf_token", "not-the-token"), ("idempotency_key", key), ("amount", "10.00")]
            )
            #expect(wrong.status == .forbidden)
            // Another session's token is not this session's.
            let other = Browser(client)
            try await other.signIn(TestApp.operatorKey)
            let othersToken = Self.csrf(try await other.request("/console/today").html)
            #expect(othersToken != Self.csrf(page.html))
            let crossed = try await browser.request(
                "/console/orders/\(id)/capture",
                method: .post,
                form: [("csrf_token", othersToken), ("idempotency_key", key), ("amount", "10.00")]
            )
            #expect(crossed.status == .forbidden)
            #expect(try await head(services) == before)
            #expect(try await services.eventCount(type: "HoldCaptured") == 0)
        }
    }

    @Test func anAuditorSeesNoActionAndItsForgedPostIsRefused() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let browser = Browser(client)
            #expect(try await browser.signIn(TestApp.auditorKey).location == "/console/today")
            let page = try await browser.request("/console/orders/\(id)")
            #expect(page.status == .ok && page.html.contains("Timeline"))
            for form in ["capture-form", "void-form", "refund-form", "ship-form", "idempotency_key"] { #expect(!page.html.contains(form)) }
            let before = try await head(services)
            // The auditor's own valid token (from the sign-out form), an operator's form: refused all the same.
            for kind in ["capture", "void", "refund", "ship"] {
                let forged = try await browser.request(
                    "/console/orders/\(id)/\(kind)",
                    method: .post,
                    form: [("csrf_token", Self.csrf(page.html)), ("idempotency_key", "forged-\(kind)"), ("amount", "1.00"), ("reason", "x")]
                )
                #expect(forged.status == .forbidden && forged.html.contains("forbidden"), "\(kind)")
            }
            #expect(try await head(services) == before)
            #expect(try await BackOfficeDriver().order(client, id).status == "authorized")
        }
    }

    @Test func aCaptureThroughTheConsoleFormAppendsItsEventOnce() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let found = try await browser.request("/console/orders?id=\(id)")
            #expect(found.status == .seeOther && found.location == "/console/orders/\(id)")
            let page = try await browser.request("/console/orders/\(id)")
            #expect(page.html.contains("id=\"order-status\">authorized<"))
            let key = try #require(Self.value(of: "idempotency_key", in: page.html, after: "id=\"capture-form\""))
            let form = [("csrf_token", Self.csrf(page.html)), ("idempotency_key", key), ("amount", "20.00")]
            let done = try await browser.request("/console/orders/\(id)/capture", method: .post, form: form)
            #expect(done.status == .seeOther && done.location == "/console/orders/\(id)?done=capture", "\(done.html)")
            // A double submit of the same rendered form is one operation.
            let again = try await browser.request("/console/orders/\(id)/capture", method: .post, form: form)
            #expect(again.status == .seeOther)
            #expect(try await services.eventCount(type: "HoldCaptured") == 1)
            let after = try await browser.request(done.location!)
            #expect(after.html.contains("The capture was recorded.") && after.html.contains("id=\"order-status\">partially_captured<"))
            #expect(after.html.contains("id=\"figure-captured\">20.00<") && after.html.contains("HoldCaptured"))
            #expect(after.html.contains("operator:env-operator-1"), "the timeline says who captured")
            let order = try await BackOfficeDriver().order(client, id)
            #expect(order.status == "partially_captured" && order.payment?.captured == "20.00")
            // The session's secrets are in no event (the actor is the key's id; the idempotency key is the form's own).
            let session = try #require(browser.cookies["ledgerd_console"])
            let csrf = Self.csrf(page.html)
            for event in try await services.store.read(from: 1, limit: 100_000) {
                #expect(!event.data.contains(session) && !event.metadata.contains(session), "\(event.type)")
                #expect(!event.data.contains(csrf) && !event.metadata.contains(csrf), "\(event.type)")
            }
        }
    }

    /// Today: the day's orders with totals by currency and status, holds expiring within 24 h, the last settlement
    /// batch and the chart of the settled gross, each as the services report it at the app's (simulated) clock.
    @Test func todayShowsTheDaysOrdersExpiringHoldsAndTheLastSettlement() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, _ in
            let open = try await storefront.placeOrder(client)
            let captured = try await storefront.placeOrder(client)
            let (status, text) = try await BackOfficeDriver().capture(client, captured)
            #expect(status == .ok, "\(text)")
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            var today = try await browser.request("/console/today")
            // (The day's payments are read by the ledger's time of recording: ConsoleDayTests, on the wall clock.)
            #expect(today.html.contains("2026-06-17"), "\(today.html)")
            #expect(today.html.contains("No settlement batch in the last 30 days."))
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            let (settled, settledText) = try await client.execute(
                uri: "/settlements/run",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"business_date": "2026-06-17"}"#)
            ) { ($0.status, String(buffer: $0.body)) }
            #expect(settled == .ok, "\(settledText)")
            // Six days later the open order's hold (seven days) expires within 24 h; the captured one's is closed.
            clock.set(TestApp.instant("2026-06-23T12:00:00Z"))
            // Six days is past the session's eight hours: it has ended.
            #expect(try await browser.request("/console/today").location == "/console/sign-in")
            try await browser.signIn(TestApp.operatorKey)
            today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"orders-count\">0<") && today.html.contains("No payment yet today."))
            #expect(today.html.contains("<a href=\"/console/orders/\(open)\">") && !today.html.contains("/console/orders/\(captured)\""))
            #expect(
                today.html.contains("for 2026-06-17 (USD, merchant account <code>OrderLedgerStore</code>)") && today.html.contains("gross 59.00"),
                "\(today.html)"
            )
            #expect(today.html.contains("<svg class=\"chart\"") && today.html.contains("<title>2026-06-17 gross: 59.00 USD</title>"))
        }
    }

    @Test func aBadAmountShowsTheAPIsErrorNextToTheFieldAndAppendsNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            // What the API answers for the same input.
            let (apiStatus, apiText) = try await BackOfficeDriver().capture(client, id, #"{"amount": "abc"}"#)
            let apiError = try #require(
                try JSONSerialization.jsonObject(with: Data(apiText.utf8)) as? [String: [String: String]]
            )["error"]
            let code = try #require(apiError?["code"])
            let message = try #require(apiError?["message"])
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let page = try await browser.request("/console/orders/\(id)")
            let key = try #require(Self.value(of: "idempotency_key", in: page.html, after: "id=\"capture-form\""))
            let before = try await head(services)
            let refused = try await browser.request(
                "/console/orders/\(id)/capture",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("idempotency_key", key), ("amount", "abc")]
            )
            #expect(refused.status == apiStatus)
            let escaped = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            #expect(
                refused.html.contains("<p class=\"error\" id=\"capture-amount-error\"><code>\(code)</code> \(escaped)</p>"),
                "\(refused.html)"
            )
            #expect(refused.html.contains("aria-describedby=\"capture-amount-error\"") && refused.html.contains("value=\"abc\""))
            // The form comes back with a fresh key.
            #expect(Self.value(of: "idempotency_key", in: refused.html, after: "id=\"capture-form\"") != key)
            #expect(try await head(services) == before)
        }
    }

    /// Today lists the open reconciliation breaks of the recent batches (the acquirer model alters every line's amount
    /// here), as the batch's reconciliation reads them; the settlement pages show the batch and its breaks, an operator
    /// resolves one with a note through the form (an event; without a note the API's refusal), an auditor cannot; a
    /// resolved break leaves Today's list.
    @Test func todayListsTheOpenReconciliationBreaksAndAnOperatorResolvesOne() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        var faults = FaultConfiguration()
        faults.alterAmount = FaultKnob(probability: Rate(numerator: 1, denominator: 1))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(faults: faults), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            let summary = try await services.settlement.run(businessDate: BusinessDate(year: 2026, month: 6, day: 17)!)
            clock.set(TestApp.instant("2026-06-18T22:00:01Z"))
            _ = try await services.settlement.run(businessDate: BusinessDate(year: 2026, month: 6, day: 18)!)
            let batch = try #require(summary.batches.first?.batch.opened.batchID)
            let view = try #require(try await services.settlement.reconciliation(id: batch))
            #expect(view.openBreaks >= 1)
            let browser = Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            var today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"open-breaks\">\(view.openBreaks)<"), "\(today.html)")
            #expect(today.html.contains("<td class=\"break-class\">amount_mismatch</td>") && today.html.contains("<code>\(batch)</code>"))
            // Settlement: the batches by day, the batch with its breaks; the auditor has no resolve form and is refused one.
            let list = try await browser.request("/console/settlements?from=2026-06-17&to=2026-06-18")
            #expect(list.html.contains("<a href=\"/console/settlements/\(batch)\">"), "\(list.html)")
            var batchPage = try await browser.request("/console/settlements/\(batch)")
            #expect(batchPage.status == .ok && batchPage.html.contains("amount_mismatch") && batchPage.html.contains("<dt>gross</dt>"))
            #expect(!batchPage.html.contains("/resolve\""))
            let breakID = try #require(view.breaks.first { $0.resolution == nil }?.found.breakID)
            var before = try await head(services)
            let forged = try await browser.request(
                "/console/breaks/\(breakID)/resolve",
                method: .post,
                form: [("csrf_token", Self.csrf(batchPage.html)), ("batch_id", batch), ("reason", "forged")]
            )
            #expect(forged.status == .forbidden)
            #expect(try await head(services) == before)
            // The operator: a resolution without a note is the API's refusal beside the form; with one, an event.
            let operatorBrowser = Browser(client)
            try await operatorBrowser.signIn(TestApp.operatorKey)
            batchPage = try await operatorBrowser.request("/console/settlements/\(batch)")
            #expect(batchPage.html.contains("action=\"/console/breaks/\(breakID)/resolve\""))
            let (apiStatus, apiText) = try await client.execute(
                uri: "/reconciliation/breaks/\(breakID)/resolve",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
                body: ByteBuffer(string: "{}")
            ) { ($0.status, String(buffer: $0.body)) }
            let apiError = try #require((try JSONSerialization.jsonObject(with: Data(apiText.utf8)) as? [String: [String: String]])?["error"])
            let refused = try await operatorBrowser.request(
                "/console/breaks/\(breakID)/resolve",
                method: .post,
                form: [("csrf_token", Self.csrf(batchPage.html)), ("batch_id", batch), ("reason", "")]
            )
            #expect(refused.status == apiStatus)
            #expect(
                refused.html.contains("id=\"reason-\(breakID)-error\"><code>\(apiError["code"]!)</code> \(apiError["message"]!)</p>"),
                "\(refused.html)"
            )
            #expect(try await head(services) == before)
            let resolved = try await operatorBrowser.request(
                "/console/breaks/\(breakID)/resolve",
                method: .post,
                form: [("csrf_token", Self.csrf(batchPage.html)), ("batch_id", batch), ("reason", "acquirer ticket 42")]
            )
            #expect(resolved.status == .seeOther && resolved.location == "/console/settlements/\(batch)?done=resolve", "\(resolved.html)")
            before += 1
            #expect(try await head(services) == before)
            batchPage = try await operatorBrowser.request(resolved.location!)
            #expect(batchPage.html.contains("acquirer ticket 42 (operator:env-operator-1)"))
            #expect(!batchPage.html.contains("action=\"/console/breaks/\(breakID)/resolve\""))
            for open in try #require(try await services.settlement.reconciliation(id: batch)).breaks where open.resolution == nil {
                _ = try await services.settlement.resolveBreak(id: open.found.breakID, reason: "checked", actor: "operator:test")
            }
            today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"open-breaks\">0<") && !today.html.contains("amount_mismatch"))
        }
    }

    /// Disputes: the queue by deadline (overdue marked), a dispute's stages, an operator's defence through the form
    /// (a refused one shows the API's error and appends nothing), and an auditor who sees no answer and is refused one.
    @Test func disputesAreQueuedByDeadlineAndDefendedThroughTheForm() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: clock.reading) { client, services in
            let backOffice = BackOfficeDriver()
            var orders: [String] = []
            for _ in 0..<2 {
                let id = try await storefront.placeOrder(client)
                #expect(try await backOffice.ship(client, id).0 == .ok)
                orders.append(id)
            }
            func chargeback(_ id: String, _ order: String) -> DisputeNotification {
                DisputeNotification(
                    disputeID: id,
                    stage: .chargeback,
                    orderID: order,
                    pspReference: "PSP-\(order)",
                    reason: .visaFraudCardAbsent,
                    amount: Money(minorUnits: 5900, currency: .usd)
                )
            }
            _ = try await services.disputes.receive(chargeback("dp-1", orders[0]))
            clock.advance(by: 86_400)
            _ = try await services.disputes.receive(chargeback("dp-2", orders[1]))
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let queue = try await browser.request("/console/disputes")
            let first = try #require(queue.html.range(of: ">dp-1</a>")).lowerBound
            let second = try #require(queue.html.range(of: ">dp-2</a>")).lowerBound
            #expect(first < second && !queue.html.contains("overdue\">"), "the soonest deadline first, none overdue yet")
            // A bad reference: the API's error for the same body, beside the form, nothing appended.
            let (apiStatus, apiText) = try await client.execute(
                uri: "/disputes/dp-1/defend",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"evidence_refs": ["receipt", "bad\u0001"]}"#)
            ) { ($0.status, String(buffer: $0.body)) }
            let apiError = try #require((try JSONSerialization.jsonObject(with: Data(apiText.utf8)) as? [String: [String: String]])?["error"])
            var page = try await browser.request("/console/disputes/dp-1")
            #expect(page.html.contains("id=\"dispute-status\">charged_back") && page.html.contains("id=\"defend-form\""))
            let before = try await head(services)
            let refused = try await browser.request(
                "/console/disputes/dp-1/defend",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("evidence_refs", "receipt\nbad\u{1}")]
            )
            #expect(refused.status == apiStatus)
            #expect(
                refused.html.contains("<p class=\"error\" id=\"defend-error\"><code>\(apiError["code"]!)</code> \(apiError["message"]!)</p>"),
                "\(refused.html)"
            )
            #expect(try await head(services) == before)
            let done = try await browser.request(
                "/console/disputes/dp-1/defend",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("evidence_refs", "evidence://dp-1/receipt\r\nevidence://dp-1/tracking\n")]
            )
            #expect(done.status == .seeOther && done.location == "/console/disputes/dp-1?done=defend", "\(done.html)")
            page = try await browser.request(done.location!)
            #expect(page.html.contains("id=\"dispute-status\">defended") && page.html.contains("<code>evidence://dp-1/tracking</code>"))
            #expect(page.html.contains("operator:env-operator-1"), "the stages say who defended")
            let view = try #require(try await services.disputes.dispute(id: "dp-1"))
            #expect(view.state.status == .defended && view.state.evidenceRefs == ["evidence://dp-1/receipt", "evidence://dp-1/tracking"])
            // Past dp-2's deadline it is marked overdue.
            clock.advance(by: 40 * 86_400)
            try await browser.signIn(TestApp.auditorKey)
            let late = try await browser.request("/console/disputes?status=charged_back")
            #expect(late.html.contains("<tr class=\"overdue\"><td><a href=\"/console/disputes/dp-2\">") && !late.html.contains(">dp-1</a>"))
            // The auditor: no answer on the page, and a forged one refused.
            let auditorPage = try await browser.request("/console/disputes/dp-2")
            #expect(auditorPage.status == .ok && !auditorPage.html.contains("defend-form") && !auditorPage.html.contains("accept-form"))
            let beforeForged = try await head(services)
            for answer in ["defend", "accept"] {
                let forged = try await browser.request(
                    "/console/disputes/dp-2/\(answer)",
                    method: .post,
                    form: [("csrf_token", Self.csrf(auditorPage.html)), ("evidence_refs", "x")]
                )
                #expect(forged.status == .forbidden, "\(answer)")
            }
            #expect(try await head(services) == beforeForged)
            let bad = try await browser.request("/console/disputes?status=nope")
            #expect(bad.status == .badRequest && bad.html.contains("id=\"status-error\"><code>invalid_parameter</code>"))
        }
    }

    /// Orders: the list by status and opening day, through `GET /orders`'s reader, and each filter's error beside it.
    @Test func theOrderListFiltersByStatusAndDay() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, _ in
            let first = try await storefront.placeOrder(client)
            let second = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, second).0 == .ok)
            let browser = Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            let all = try await browser.request("/console/orders")
            #expect(all.status == .ok && all.html.contains(">\(first)</a>") && all.html.contains(">\(second)</a>"))
            let captured = try await browser.request("/console/orders?status=captured&from=2026-06-17&to=2026-06-17")
            #expect(!captured.html.contains(">\(first)</a>") && captured.html.contains(">\(second)</a>"), "\(captured.html)")
            #expect(captured.html.contains("<option value=\"captured\" selected>"))
            let before = try await browser.request("/console/orders?to=2026-06-16")
            #expect(before.html.contains("No order.") && !before.html.contains(">\(first)</a>"))
            let bad = try await browser.request("/console/orders?status=nope&from=2026-13-01")
            #expect(bad.status == .badRequest)
            #expect(bad.html.contains("id=\"status-error\"><code>invalid_parameter</code> status must be one of "))
            #expect(bad.html.contains("id=\"from-error\"><code>invalid_parameter</code> from must be a day, e.g. 2026-11-21</p>"))
            let missing = try await browser.request("/console/orders?id=no-such-order")
            #expect(
                missing.status == .notFound
                    && missing.html.contains(
                        "id=\"id-error\"><code>not_found</code> no order with the id, merchant reference or PSP reference no-such-order</p>"
                    )
            )
        }
    }

    /// Audit: an auditor verifies the chain (what `GET /audit/verify` computes); a bad bound is the API's error next to
    /// its field.
    @Test func anAuditorVerifiesTheChain() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            _ = try await storefront.placeOrder(client)
            let head = try await head(services)
            let browser = Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            let form = try await browser.request("/console/audit")
            #expect(form.status == .ok && !form.html.contains("verify-result"))
            let page = try await browser.request("/console/audit?verify=1")
            #expect(page.status == .ok)
            // Streamed: a line per step as the re-hash goes, then the result.
            #expect(page.html.contains("<ol id=\"verify-progress\" class=\"progress\">"), "\(page.html)")
            #expect(page.html.contains("<li class=\"ok\">positions 1–\(head): intact (\(head) re-hashed so far)</li>"), "\(page.html)")
            #expect(
                page.html.contains("<p id=\"verify-result\" class=\"ok\">The chain is intact: \(head) positions re-hashed from 1.</p>"),
                "\(page.html)"
            )
            let (apiStatus, apiText) = try await client.execute(
                uri: "/audit/verify?from=abc",
                method: .get,
                headers: TestApp.bearer(TestApp.auditorKey)
            ) { ($0.status, String(buffer: $0.body)) }
            let apiError = try #require((try JSONSerialization.jsonObject(with: Data(apiText.utf8)) as? [String: [String: String]])?["error"])
            let bad = try await browser.request("/console/audit?verify=1&from=abc")
            #expect(bad.status == apiStatus)
            #expect(
                bad.html.contains("<p class=\"error\" id=\"from-error\"><code>\(apiError["code"]!)</code> \(apiError["message"]!)</p>"),
                "\(bad.html)"
            )
            #expect(!bad.html.contains("verify-result"))
        }
    }

    @Test func aRevokedKeysSessionIsRefused() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let id = try await storefront.placeOrder(client)
            let token = APIKeyToken.generate(id: "console-op")
            let verifier = APIKeyVerifier.make(id: token.id, role: .operator, key: token.text, createdAt: Date())
            try services.keyring.replace(fileVerifiers: [verifier])
            let browser = Browser(client)
            #expect(try await browser.signIn(token.text).location == "/console/today")
            let page = try await browser.request("/console/orders/\(id)")
            #expect(page.status == .ok && page.html.contains("operator:console-op"))
            var revoked = verifier
            revoked.revokedAt = Date()
            try services.keyring.replace(fileVerifiers: [revoked])
            #expect(try await browser.request("/console/today").location == "/console/sign-in")
            let key = try #require(Self.value(of: "idempotency_key", in: page.html, after: "id=\"capture-form\""))
            let before = try await head(services)
            let post = try await browser.request(
                "/console/orders/\(id)/capture",
                method: .post,
                form: [("csrf_token", Self.csrf(page.html)), ("idempotency_key", key)]
            )
            #expect(post.status == .unauthorized)
            #expect(try await head(services) == before)
            #expect(services.consoleSessions.count == 0)
            #expect(try await browser.signIn(token.text).status == .unauthorized)
        }
    }
}
