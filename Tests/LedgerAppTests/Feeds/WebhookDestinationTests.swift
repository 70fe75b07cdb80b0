import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Synchronization
import Testing

/// Security review 3, N2 (webhook SSRF), N9 (a URL's upper-case scheme reached the table's CHECK as a 500) and N12
/// (credentials shown to auditors): every internal address is refused in every spelling, at registration and again
/// after DNS at connection time, redirects are not followed, and a failure records no network detail.
@Suite(.machine(.shared)) struct WebhookDestinationTests {
    /// The probe's URLs, and more spellings of the same places.
    static let internalURLs = [
        "http://127.0.0.1:5432/", "http://127.1/", "http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/",
        "http://169.254.169.254/latest/meta-data/", "http://2852039166/", "http://0xA9FEA9FE/", "http://0251.0376.0251.0376/",
        "http://169.16689662/", "http://[::ffff:169.254.169.254]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:a9fe:a9fe::1]/", "http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://100.64.0.1/",
        "http://[fd00::1]/", "http://[fe80::1]/", "http://[::1]:12345/", "http://[::]/", "http://0.0.0.0/", "http://0/",
        "http://255.255.255.255/", "http://224.0.0.1/", "http://localhost:12345/payment", "http://api.localhost/",
    ]

    @Test func everySpellingOfAnInternalAddressIsRefusedAndPublicOnesPass() throws {
        let rule = WebhookDestinations()
        for url in Self.internalURLs {
            #expect(throws: WebhookDestinations.Refusal.self, "\(url) was accepted") { try rule.check(url: url) }
        }
        for url in ["http://user:pw@example.com/", "http://user@example.com/", "https://a:b@93.184.216.34/", "HTTP://EXAMPLE.invalid/", "ftp://x/"] {
            #expect(throws: WebhookDestinations.Refusal.self, "\(url) was accepted") { try rule.check(url: url) }
        }
        for url in ["https://example.com/hook", "http://93.184.216.34:8080/x", "http://[2606:2800:220:1::1]/", "http://8.8.8.8/"] {
            #expect(throws: Never.self, "\(url) was refused") { _ = try rule.check(url: url) }
        }
        // The operator's allow-list admits what it names, and only that.
        let allowing = try #require(WebhookDestinations(allowList: "127.0.0.1, 10.1.0.0/16"))
        #expect(throws: Never.self) { _ = try allowing.check(url: "http://127.0.0.1:9/hook") }
        #expect(throws: Never.self) { _ = try allowing.check(url: "http://10.1.200.3/hook") }
        #expect(throws: WebhookDestinations.Refusal.self) { try allowing.check(url: "http://127.0.0.2/") }
        #expect(throws: WebhookDestinations.Refusal.self) { try allowing.check(url: "http://10.2.0.1/") }
        #expect(WebhookDestinations(allowList: "127.0.0.1/33") == nil && WebhookDestinations(allowList: "example.com") == nil)
    }

    /// Through the API, with no allow-list: each is a 422 (none a 500), nothing is stored, nothing appended.
    @Test func registrationRefusesInternalDestinationsCredentialsAndUpperCaseSchemes() async throws {
        try await TestApp.withApp(environment: ["LEDGERD_WEBHOOK_ALLOWED_ADDRESSES": ""]) { client, services in
            let head = try await services.store.head().position
            for url in Self.internalURLs + ["http://user:pw@example.com/", "HTTP://EXAMPLE.invalid/"] {
                let body = #"{"url": "\#(url)", "secret": "whsec_test_0123456789abcdef", "types": ["CheckpointSigned"]}"#
                let (status, text) = try await call(client, .post, "/webhooks", body)
                #expect(status == 422 && text.contains(#""field":"url""#), "\(url): \(status) \(text)")
            }
            #expect(try await call(client, .get, "/webhooks").1.contains(#""webhooks":[]"#))
            // N9's other 500: a subscription name with a trailing newline.
            let (status, text) = try await call(client, .post, "/subscriptions", #"{"name": "a\n"}"#)
            #expect(status == 422 && text.contains("invalid_name"), "\(status) \(text)")
            #expect(try await services.store.head().position == head)
            #expect(try await WebhookTests.rows(services, "ledger.webhook_endpoints") == 0)
            #expect(try await WebhookTests.rows(services, "ledger.subscriptions") == 0)
        }
    }

    /// At connection time: a host name that resolves to the loopback (from /etc/hosts) is refused before any byte is
    /// sent; with the loopback allowed, a redirect is not followed (its status is the failure) and a closed port
    /// records "connection failed", not the system's error, at once.
    @Test(.timeLimit(.minutes(3))) func deliveriesCheckResolvedAddressesFollowNoRedirectAndRecordNoNetworkDetail() async throws {
        let receiver = RedirectingReceiver()
        try await receiver.serve { port in
            let body = Array(#"{"position": 1}"#.utf8)
            let strict = HTTPWebhookTransport(destinations: WebhookDestinations())
            let name = try #require(Self.loopbackHostName(), "no name in /etc/hosts resolves to the loopback")
            let inward = await strict.post(url: "http://\(name):\(port)/hook", body: body, headers: [], timeout: .seconds(10))
            #expect(inward == WebhookTransportResult(statusCode: nil, error: HTTPWebhookTransport.Failure.refused), "\(inward)")
            #expect(receiver.hits == [], "\(name) reached the receiver: \(receiver.hits)")

            let allowing = HTTPWebhookTransport(destinations: try #require(WebhookDestinations(allowList: "127.0.0.1")))
            let redirected = await allowing.post(url: "http://127.0.0.1:\(port)/redirect", body: body, headers: [], timeout: .seconds(10))
            #expect(redirected == WebhookTransportResult(statusCode: 307, error: nil) && !redirected.delivered, "\(redirected)")
            #expect(receiver.hits == ["/redirect"], "the redirect was followed: \(receiver.hits)")

            // A closed port fails the attempt at once: AsyncHTTPClient's default reconnects for its whole connect
            // timeout (10 s), holding the endpoint's claim and its transaction. Not a speed figure: milliseconds against
            // ten seconds, with room for a loaded machine.
            let started = ContinuousClock.now
            let closed = await allowing.post(url: "http://127.0.0.1:9/hook", body: body, headers: [], timeout: .seconds(60))
            #expect(closed.error == HTTPWebhookTransport.Failure.connection, "\(closed)")
            #expect(ContinuousClock.now - started < .seconds(5), "a refused connection was retried until the connect timeout")
        }
    }

    /// A name other than `localhost` that /etc/hosts maps to a loopback address (a registration passes it: names are
    /// checked when they are resolved).
    static func loopbackHostName() -> String? {
        guard let hosts = try? String(contentsOfFile: "/etc/hosts", encoding: .utf8) else { return nil }
        for line in hosts.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let address = fields.first, address == "127.0.0.1" || address.hasPrefix("127.") else { continue }
            if let name = fields.dropFirst().first(where: { !$0.hasPrefix("#") && !$0.lowercased().contains("localhost") }) {
                return String(name)
            }
        }
        return nil
    }
}

/// A receiver on 127.0.0.1 whose `/redirect` answers 307 to its own `/hook`: it records the paths it was sent.
final class RedirectingReceiver: Sendable {
    private let paths = Mutex<[String]>([])
    var hits: [String] { paths.withLock { $0 } }

    func serve(_ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        let router = Router()
        router.post("/redirect") { request, _ -> Response in
            self.paths.withLock { $0.append("/redirect") }
            var headers = HTTPFields()
            headers[.location] = "/hook"
            return Response(status: .temporaryRedirect, headers: headers)
        }
        router.post("/hook") { _, _ -> Response in
            self.paths.withLock { $0.append("/hook") }
            return Response(status: .ok)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await body(try #require(client.port)) }
    }
}
