import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerAcquirerClient
import LedgerAcquirerService
import LedgerApp
import LedgerCore
import LedgerTestSupport
import NIOCore
import Synchronization
import Testing

/// The HTTP adapter's circuit breaker against a real server listening on 127.0.0.1 (a small Hummingbird
/// app that answers the status inquiry with 503 or with an answer, and counts what reaches it), and the
/// acquirer metrics on a real daemon's `/metrics`.
@Suite(.machine(.shared)) struct HTTPAcquirerBreakerTests {
    /// The breaker's clock, moved by hand.
    final class ManualClock: Sendable {
        let start = ContinuousClock.now
        let offset = Mutex<Duration>(.zero)
        func now() -> ContinuousClock.Instant { start.advanced(by: offset.withLock { $0 }) }
        func advance(_ duration: Duration) { offset.withLock { $0 += duration } }
    }

    /// The acquirer stand-in: `GET /v1/payments?merchantReference=` answers 503 while `failing`, else "not
    /// found" for that reference; it notes, for each request that reached it, the breaker state the
    /// adapter's gauge showed at that moment.
    final class Server: Sendable {
        let metrics: LedgerMetrics
        let failing = Mutex(true)
        let seen = Mutex<[Int?]>([])

        init(metrics: LedgerMetrics) { self.metrics = metrics }

        var requests: Int { seen.withLock { $0.count } }
        var lastSeenState: Int?? { seen.withLock { $0.last } }

        func answer(_ request: Request) throws -> Response {
            let state = HTTPAcquirerBreakerTests.value(metrics, "ledger_acquirer_breaker_state")
            seen.withLock { $0.append(state) }
            if failing.withLock({ $0 }) {
                return Response(
                    status: .serviceUnavailable,
                    body: .init(byteBuffer: ByteBuffer(string: #"{"error":{"code":"unavailable","message":"down"}}"#))
                )
            }
            let reference = request.uri.queryParameters.get("merchantReference") ?? ""
            let body = try LedgerJSON.encode(PaymentQueryResult.notFound(merchantReference: reference))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
    }

    /// The value of the series `series` (name and labels as exposed) on the metrics page; nil when absent.
    static func value(_ metrics: LedgerMetrics, _ series: String) -> Int? {
        for line in metrics.exposition().split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)).map { Int($0) }
        }
        return nil
    }

    /// Three calls in a row that fail open the breaker: the next calls fail at once without reaching the
    /// server (`breaker_open`), until the cool-down has passed; then one trial goes through (half-open),
    /// a failed trial opens it again, a successful one closes it. The gauge shows 0, 2, 1 in turn (read
    /// by the server while the trial is in flight). Failures must be consecutive: a success in between
    /// starts the count again.
    @Test func opensAfterConsecutiveFailuresFailsFastAndClosesAfterASuccessfulTrial() async throws {
        let metrics = LedgerMetrics()
        let clock = ManualClock()
        let server = Server(metrics: metrics)
        let router = Router()
        router.get("/v1/payments") { request, _ -> Response in try server.answer(request) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: TestCluster.logger)
        try await app.test(.live) { live in
            let acquirer = HTTPAcquirer(
                configuration: HTTPAcquirerConfiguration(
                    baseURL: "http://127.0.0.1:\(try #require(live.port))",
                    apiKey: "breaker-test",
                    readTimeout: .seconds(30),
                    attempts: 1,
                    breakerThreshold: 3,
                    breakerOpenFor: .seconds(5)
                ),
                logger: TestCluster.logger,
                metricsFactory: metrics.factory,
                now: clock.now
            )
            /// One status inquiry: nil when answered, else the error.
            func call() async -> AcquirerError? {
                do {
                    _ = try await acquirer.query(merchantReference: "ord-breaker")
                    return nil
                } catch { return error }
            }
            func state() -> Int? { Self.value(metrics, "ledger_acquirer_breaker_state") }
            func errors(_ kind: String) -> Int? { Self.value(metrics, #"ledger_acquirer_errors_total{operation="query",kind="\#(kind)"}"#) }
            #expect(state() == 0)
            // Closed: each failure reaches the server; the third opens the breaker.
            for attempt in 1...3 {
                #expect(await call()?.code == .unavailable)
                #expect(server.requests == attempt)
                #expect(state() == (attempt < 3 ? 0 : 2), "after failure \(attempt)")
            }
            #expect(errors("5xx") == 3)
            // Open: refused without a request, even just before the cool-down ends.
            for _ in 0..<5 { #expect(await call()?.code == .unavailable) }
            clock.advance(.milliseconds(4_999))
            #expect(await call()?.code == .unavailable)
            #expect(server.requests == 3, "an open breaker let a call through")
            #expect(errors("breaker_open") == 6)
            #expect(state() == 2)
            // Half-open after the cool-down: one trial reaches the server; it fails, so the breaker opens again.
            clock.advance(.milliseconds(1))
            #expect(await call()?.code == .unavailable)
            #expect(server.requests == 4)
            #expect(server.lastSeenState == 1, "the gauge did not show half-open during the trial")
            #expect(state() == 2)
            #expect(await call()?.code == .unavailable)
            #expect(server.requests == 4, "a failed trial did not open the breaker again")
            #expect(errors("breaker_open") == 7)
            // The next trial succeeds: closed, and calls reach the server again.
            clock.advance(.seconds(5))
            server.failing.withLock { $0 = false }
            #expect(await call() == nil)
            #expect(server.requests == 5)
            #expect(server.lastSeenState == 1)
            #expect(state() == 0)
            for _ in 0..<2 { #expect(await call() == nil) }
            #expect(server.requests == 7)
            #expect(server.lastSeenState == 0)
            // Two failures, a success, two failures: never three in a row, so it stays closed.
            for failing in [true, true, false, true, true] {
                server.failing.withLock { $0 = failing }
                #expect((await call() == nil) == !failing)
            }
            #expect(server.requests == 12)
            #expect(state() == 0)
            #expect(errors("5xx") == 8)
            #expect(errors("breaker_open") == 7)
            try await acquirer.shutdown()
        }
    }

    /// A real daemon with its supervised acquirer service (over HTTP) answering 500 to every payment: its
    /// `/metrics` shows the acquirer's latency, errors and breaker state, each with its own `# HELP` (as
    /// every metric on the page), and `promtool check metrics` (when installed) accepts the page.
    @Test(.timeLimit(.minutes(3))) func daemonMetricsDescribeTheAcquirer() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-acqmetrics-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: dataDirectory.path + ".log")
        defer {
            try? FileManager.default.removeItem(at: dataDirectory)
            try? FileManager.default.removeItem(at: log)
        }
        var faults = WireFaults(seed: 3)
        faults.serverErrorBeforeApplying = Rate(numerator: 1, denominator: 1)
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            environment: [
                "LEDGERD_ACQUIRER_WIRE_FAULTS": String(decoding: try LedgerJSON.encode(faults), as: UTF8.self),
                "LEDGERD_ACQUIRER_ATTEMPTS": "1",
                "LEDGERD_LOG_LEVEL": "warning",
            ]
        )
        try #require(daemon.health != nil, "the daemon did not come up:\n\(daemon.output().suffix(3_000))")
        do {
            _ = try await daemon.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self))
            let (status, text) = try await daemon.request("GET", "/metrics")
            #expect(status == 200)
            let lines = text.split(separator: "\n").map(String.init)
            for (index, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
                let name = line.split(separator: " ")[2]
                let help = index > 0 ? lines[index - 1] : ""
                #expect(help.hasPrefix("# HELP \(name) ") && !help.contains("ledgerd metric"), "\(line) has no help: \(help)")
            }
            for name in ["ledger_acquirer_request_seconds", "ledger_acquirer_errors_total", "ledger_acquirer_breaker_state"] {
                let type = try #require(lines.firstIndex { $0.hasPrefix("# TYPE \(name) ") }, "\(name) is not on the page")
                #expect(type > 0 && lines[type - 1].hasPrefix("# HELP \(name) ") && !lines[type - 1].contains("ledgerd metric"), "\(name)")
            }
            #expect(text.contains(#"ledger_acquirer_errors_total{operation="authorize",kind="5xx"} "#), "\(text)")
            #expect(text.contains(#"ledger_acquirer_request_seconds_count{operation="authorize"} "#), "\(text)")
            try await expectPromtoolAccepts(text)
        } catch {
            _ = try? await daemon.terminate()
            throw error
        }
        try await daemon.stop()
    }
}
