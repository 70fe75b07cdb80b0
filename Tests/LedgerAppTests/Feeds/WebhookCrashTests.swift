import Foundation
import LedgerPostgres
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Webhook delivery across a daemon's death (docs/feeds.md: a delivery runs inside the transaction that holds its
/// endpoint's row lock, so a daemon that dies mid-delivery commits nothing and the event is delivered again). A real
/// `ledgerd serve` armed with the fault point `webhook.delivered` kills itself (SIGKILL) as soon as a delivery was
/// answered 200, before its cursor commits; the next daemon on the same data directory must deliver that event again,
/// then every later event exactly once, in position order.
@Suite(.serialized, .machine(.shared)) struct WebhookCrashTests {
    let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-hookcrash-\(UUID().uuidString.prefix(8))")
    let port = TestPorts.free()
    var log: URL { URL(fileURLWithPath: "\(dataDirectory.path).log") }

    func start(crashAt point: String? = nil) async throws -> DaemonProcess {
        var environment: [String: String?] = [
            "LEDGERD_WEBHOOK_SECRETS_KEY": TestApp.webhookSecretsKey,
            "LEDGERD_WEBHOOK_ALLOWED_ADDRESSES": "127.0.0.1",
            "LEDGERD_WEBHOOK_RETRY_BASE_MS": "50",
            "LEDGERD_LOG_LEVEL": "warning",
        ]
        environment["LEDGERD_FAULT_CRASH_AT"] = point
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory, port: port, logFile: log, environment: environment)
        try #require(daemon.health != nil, "the daemon did not come up:\n\(daemon.output().suffix(3_000))")
        return daemon
    }

    /// A storefront payment (pens: 50 in stock); its status, nil when the daemon died before answering.
    func pay(_ daemon: DaemonProcess) async -> Int? {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(daemon.port)/payment")!)
        request.httpMethod = "POST"
        request.timeoutInterval = 60
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = StorefrontDriver.paymentBody(amount: 3200, product: "Pen")
        guard let (_, response) = try? await TestHTTP.data(for: request) else { return nil }
        return (response as? HTTPURLResponse)?.statusCode
    }

    /// Every event's position after `cursor` (`GET /events`, one page is plenty here).
    func positions(_ daemon: DaemonProcess, after cursor: Int64) async throws -> [Int64] {
        let (status, text) = try await daemon.request("GET", "/events?after=\(cursor)&limit=1000")
        try #require(status == 200, "\(text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let events = try #require(object["events"] as? [[String: Any]])
        return events.compactMap { ($0["position"] as? Int).map(Int64.init) }
    }

    @Test(.timeLimit(.minutes(6))) func aDeliveryAnsweredBeforeTheDaemonDiedIsDeliveredAgainAndEveryLaterEventOnce() async throws {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        defer {
            try? EmbeddedPostgres(configuration: .init(dataDirectory: dataDirectory), logger: TestCluster.logger).stop()
            try? FileManager.default.removeItem(at: dataDirectory)
            try? FileManager.default.removeItem(at: log)
        }
        let receiver = WebhookReceiver(failures: 0, secrets: [WebhookTests.secret])
        try await receiver.serve { url in
            // First life, armed: the endpoint registered after the catalog's seed, then one payment's events due.
            let doomed = try await start(crashAt: "webhook.delivered")
            let (registered, text) = try await doomed.request(
                "POST",
                "/webhooks",
                #"{"url": "\#(url)", "secret": "\#(WebhookTests.secret)", "types": []}"#
            )
            try #require(registered == 201, "\(text)")
            let hook = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let cursor = Int64(try #require(hook["cursor"] as? Int))
            _ = await pay(doomed)
            // The fault fired: the process died of SIGKILL, after exactly one delivery was answered 200.
            for _ in 0..<240 where doomed.process.isRunning { try await Task.sleep(for: .milliseconds(250)) }
            try #require(
                !doomed.process.isRunning && doomed.process.terminationReason == .uncaughtSignal
                    && doomed.process.terminationStatus == SIGKILL,
                "the daemon did not die at webhook.delivered:\n\(doomed.output().suffix(3_000))"
            )
            let beforeCrash = receiver.delivered
            try #require(beforeCrash.count == 1, "deliveries answered before the crash: \(beforeCrash)")

            // Second life: the same data directory, unarmed; more events after the restart.
            let daemon = try await start()
            for _ in 0..<2 { #expect(await pay(daemon) == 200) }
            let want = try await positions(daemon, after: cursor)
            try #require(want.count >= 6 && want.first == beforeCrash.first, "events after the endpoint's cursor: \(want)")
            let deadline = ContinuousClock.now + .seconds(90)
            while receiver.delivered.count < want.count + 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
            // A little longer: a duplicate of a later event would arrive now.
            try await Task.sleep(for: .seconds(1))
            #expect(
                receiver.delivered == [want[0]] + want,
                "the uncommitted delivery again, then every event once in order; got \(receiver.delivered), want \([want[0]] + want)"
            )
            #expect(receiver.hits.allSatisfy { $0.signatureValid })
            #expect(try await daemon.terminate(), "the daemon did not stop on SIGTERM")
        }
    }
}
