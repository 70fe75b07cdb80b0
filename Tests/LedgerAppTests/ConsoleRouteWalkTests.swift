import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerHTTP
import LedgerTestSupport
import NIOCore
import Synchronization
import Testing

/// Every console POST route, found in the router itself (so a page added later is walked too), refused without the
/// session's CSRF token: none, a wrong one, and another session's. And the console's time limits on the application's
/// injected clock: a session ends 8 hours after sign-in, and the sign-in form's own cookie lives 600 s.
@Suite(.machine(.shared)) struct ConsoleRouteWalkTests {
    /// The application's clock, moved by the test.
    final class Clock: Sendable {
        let now = Mutex(Date())
        func advance(_ seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    /// `POST` paths under `/console` in the daemon's router, a capture (`:id`) filled with `id`; sign-in, which has no
    /// session yet and its own double-submit token, apart.
    static func consolePosts(_ services: ServiceContainer, id: String) throws -> [String] {
        let configuration = try LedgerConfiguration.load(environment: ["LEDGERD_OPERATOR_KEYS": TestApp.operatorKey])
        return buildRouter(services: services, configuration: configuration).routes
            .filter { $0.method == .post && $0.path.description.hasPrefix("/console/") && $0.path.description != "/console/sign-in" }
            .map { route in
                route.path.description.split(separator: "/", omittingEmptySubsequences: false)
                    .map { $0.hasPrefix(":") || $0.hasPrefix("{") ? Substring(id) : $0 }
                    .joined(separator: "/")
            }
            .sorted()
    }

    /// A POST of `fields` to `uri` as the console's forms send them: URL-encoded, and multipart for the upload.
    static func post(
        _ browser: ConsoleTests.Browser,
        _ uri: String,
        _ fields: [(String, String)],
        multipart: Bool
    ) async throws -> ConsoleTests.Browser.Page {
        guard multipart else { return try await browser.request(uri, method: .post, form: fields) }
        let boundary = "walk-boundary-7e1f"
        var body = ""
        for (name, value) in fields { body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n" }
        body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"report\"; filename=\"r.csv\"\r\nContent-Type: text/csv\r\n\r\na,b\r\n"
        body += "--\(boundary)--\r\n"
        var headers = HTTPFields()
        headers[.cookie] = browser.cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
        return try await browser.client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
            ConsoleTests.Browser.Page(status: $0.status, headers: $0.headers, html: String(buffer: $0.body))
        }
    }

    @Test func everyConsolePostIsRefusedWithoutThisSessionsCSRFToken() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let browser = ConsoleTests.Browser(client)
            let other = ConsoleTests.Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            try await other.signIn(TestApp.operatorKey)
            let own = ConsoleTests.csrf(try await browser.request("/console/today").html)
            let others = ConsoleTests.csrf(try await other.request("/console/today").html)
            try #require(!own.isEmpty && !others.isEmpty && own != others, "the sessions' CSRF tokens: \(own) \(others)")
            let routes = try Self.consolePosts(services, id: "walk-1")
            // The walk found the console's routes (sign-out, the order actions, the upload…), not an empty list.
            #expect(routes.contains("/console/sign-out") && routes.contains("/console/orders/walk-1/capture") && routes.contains("/console/reports"))
            #expect(routes.count >= 10, "\(routes)")
            let head = try await services.store.head().position
            // A wrong token differs from this session's in its first character (a fixed "x" in its place was this
            // session's own token whenever the random token began with "x": one run in 64 failed).
            let wrong = (own.first == "x" ? "y" : "x") + own.dropFirst()
            let tokens: [(String, String?)] = [("no token", nil), ("a wrong token", wrong), ("another session's token", others)]
            for route in routes {
                for (label, token) in tokens {
                    var fields = [("amount", "1.00"), ("reason", "walk"), ("key", "walk")]
                    if let token { fields.append(("csrf_token", token)) }
                    var page = try await Self.post(browser, route, fields, multipart: false)
                    // The upload reads multipart only: refused 415 as URL-encoded, it must still refuse the token.
                    if page.status == .unsupportedMediaType { page = try await Self.post(browser, route, fields, multipart: true) }
                    #expect(
                        page.status == .forbidden && page.html.contains("csrf_token_invalid"),
                        "POST \(route) with \(label): \(page.status) \(page.html.prefix(300))"
                    )
                }
            }
            #expect(try await services.store.head().position == head, "a refused console POST appended")
            // The session itself still works: the refusals were the token's, not a lost session.
            #expect(try await browser.request("/console/today").status == .ok)
        }
    }

    @Test func aSessionEndsEightHoursAfterSignInOnTheApplicationsClock() async throws {
        let clock = Clock()
        try await TestApp.withApp(seed: true, clock: { clock.now.withLock { $0 } }) { client, services in
            let browser = ConsoleTests.Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            #expect(try await browser.request("/console/today").status == .ok)
            clock.advance(8 * 3600 - 1)
            #expect(try await browser.request("/console/today").status == .ok, "the session ended before 8 h")
            clock.advance(1)
            let after = try await browser.request("/console/today")
            #expect(after.status == .seeOther && after.location == "/console/sign-in", "the session outlived 8 h: \(after.status)")
            // Its POSTs too: no session, so 401, whatever token it carries.
            let post = try await browser.request("/console/sign-out", method: .post, form: [("csrf_token", "anything")])
            #expect(post.status == .unauthorized, "\(post.status)")
            #expect(services.consoleSessions.count == 0, "the expired session is still held")
        }
    }

    /// The sign-in form's token is a double submit: a cookie of its own, scoped to the sign-in path and kept 600 s by the
    /// browser; a sign-in without it (the cookie expired, or another site's form) is refused and opens no session.
    @Test func theSignInFormsCookieLivesTenMinutesAndASignInWithoutItIsRefused() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let browser = ConsoleTests.Browser(client)
            let form = try await browser.request("/console/sign-in")
            let cookie = try #require(form.headers[values: .setCookie].first { $0.hasPrefix("ledgerd_console_sign_in=") })
            #expect(cookie.contains("; Max-Age=600") && cookie.contains("; Path=/console/sign-in") && cookie.contains("; HttpOnly"), "\(cookie)")
            let token = ConsoleTests.csrf(form.html)
            browser.cookies["ledgerd_console_sign_in"] = nil
            let refused = try await browser.request("/console/sign-in", method: .post, form: [("csrf_token", token), ("key", TestApp.operatorKey)])
            #expect(refused.status == .forbidden && refused.html.contains("csrf_token_invalid"), "\(refused.status)")
            #expect(services.consoleSessions.count == 0 && browser.cookies["ledgerd_console"] == nil)
        }
    }
}
