import Foundation
import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Security review 3, N5: after PostgreSQL was killed mid-load, one `POST /payment` was never answered and a later
/// SIGTERM never finished. The daemon (a real process, its embedded cluster) takes payments from four workers while,
/// round after round, PostgreSQL is stopped at once (`pg_ctl stop -m immediate`, then started again) or every one of
/// the daemon's backends is terminated mid-statement (`pg_terminate_backend`). Every request must be answered (its
/// outcome or 503) within the writer's deadline (the statement timeout, 5 s here, plus 2 s) and a generous margin for
/// a loaded machine; afterwards SIGTERM must finish within the 30 s graceful bound and stop the embedded cluster.
/// `LEDGER_OUTAGE_ROUNDS` sets the rounds (default 6); the figure is printed. The cause of N5: a statement sent at the
/// moment its connection died was never answered by PostgresNIO (a payment's read of its shipping method, seen with
/// markers on every step), so its request waited for ever and the HTTP server's drain with it; the daemon's pool now
/// bounds every statement (``DatabaseClient/statementDeadline``), and this failed before it, every run.
@Suite(.machine(.shared)) struct OutageLoopTests {
    /// Set once a round's workers are to stop.
    final class Flag: Sendable {
        let value = Mutex(false)
    }

    /// What the workers saw.
    final class Tally: Sendable {
        let counts = Mutex<(answered: [Int: Int], unanswered: Int, slowest: Duration)>(([:], 0, .zero))
        func record(status: Int?, took: Duration) {
            counts.withLock { counts in
                if let status { counts.answered[status, default: 0] += 1 } else { counts.unanswered += 1 }
                counts.slowest = max(counts.slowest, took)
            }
        }
    }

    /// `method path` with a JSON `body`: the status; throws when no answer came within `timeout` seconds.
    static func request(port: Int, _ method: String, _ path: String, _ body: String? = nil, timeout: TimeInterval) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (_, response) = try await TestHTTP.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// What each round's recovery check buys: a product of 50 (the load's ten clocks are sold out early) and its total.
    static let recoveryProducts = [("Pen", 3_200), ("Stapler", 2_120), ("Cup", 2_660), ("Catpad", 1_796), ("T-Ruler", 2_012), ("Hammer", 1_256)]

    // No root needed: as root the embedded cluster runs as its `postgres` OS user, otherwise as this process's own.
    @Test(.timeLimit(.minutes(10)))
    func everyPaymentInFlightIsAnsweredAcrossRepeatedOutagesAndSIGTERMStopsTheCluster() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-loop-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            try? FileManager.default.removeItem(at: dataDirectory)
            try? FileManager.default.removeItem(at: log)
        }
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            environment: ["LEDGERD_DB_STATEMENT_TIMEOUT_SECONDS": "5", "LEDGERD_LOG_LEVEL": "notice"]
        )
        guard daemon.health != nil else {
            daemon.process.terminate()
            Issue.record("no /health answer; daemon output:\n\(daemon.output())")
            return
        }
        let cluster = EmbeddedPostgres(
            configuration: .init(dataDirectory: dataDirectory, binDirectory: nil, osUser: "postgres"),
            logger: TestCluster.logger
        )
        let superuser = PostgresClient.Configuration(
            unixSocketPath: cluster.endpoint.socketPath,
            username: cluster.endpoint.superuser,
            password: nil,
            database: "ledger"
        )
        let payment = String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self)
        let port = daemon.port
        let rounds = ProcessInfo.processInfo.environment["LEDGER_OUTAGE_ROUNDS"].flatMap(Int.init) ?? 6
        // The writer's deadline (5 s + 2 s) and then some: a request not answered by then is the hang.
        let clientTimeout: TimeInterval = 7 + 23
        let tally = Tally()
        // After each round: how long until a payment was approved again (nil: none within the minute).
        var approvedAgain: [Duration?] = []
        for round in 0..<rounds {
            let stop = Flag()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        while !stop.value.withLock({ $0 }) {
                            let started = ContinuousClock.now
                            let status = try? await Self.request(port: port, "POST", "/payment", payment, timeout: clientTimeout)
                            tally.record(status: status, took: ContinuousClock.now - started)
                        }
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(800))
                    if round.isMultiple(of: 2) {
                        try? await cluster.stopOffPool(mode: "immediate")
                        try? await Task.sleep(for: .milliseconds(1_500))
                        _ = try? await cluster.startOffPool()
                    } else {
                        // Every backend of the daemon's pool and of its acquirer service's dropped, mid-append for some.
                        _ = try? await withPostgresClient(configuration: superuser, logger: TestCluster.logger) { client -> Bool in
                            try await client.query(
                                """
                                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                WHERE usename IN ('ledger_app', 'acquirer_app') AND pid <> pg_backend_pid()
                                """
                            )
                            return true
                        }
                    }
                    // Serving again (bounded), then a little more load before the round ends.
                    let back = ContinuousClock.now
                    while ContinuousClock.now - back < .seconds(60) {
                        if let status = try? await Self.request(port: port, "GET", "/health", timeout: 2), status == 200 { break }
                        try? await Task.sleep(for: .milliseconds(200))
                    }
                    try? await Task.sleep(for: .milliseconds(500))
                    stop.value.withLock { $0 = true }
                }
            }
            // Payments are approved again (200: a 502 or 503 is an answer, not a recovery) within a minute: a product of
            // 50 for each round (price + 8 % tax + 5.00 standard shipping), the load's ten clocks being long sold.
            let (product, amount) = Self.recoveryProducts[round % Self.recoveryProducts.count]
            let probe = String(decoding: StorefrontDriver.paymentBody(amount: amount, product: product), as: UTF8.self)
            let back = ContinuousClock.now
            var approved: Duration?
            while approved == nil, ContinuousClock.now - back < .seconds(60) {
                if let status = try? await Self.request(port: port, "POST", "/payment", probe, timeout: clientTimeout), status == 200 {
                    approved = ContinuousClock.now - back
                } else {
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            approvedAgain.append(approved)
        }
        let counts = tally.counts.withLock { $0 }
        let total = counts.answered.values.reduce(0, +) + counts.unanswered
        print(
            "outage loop: \(rounds) rounds, \(total) payments: \(counts.answered.sorted { $0.key < $1.key }) answered, \(counts.unanswered) unanswered, slowest \(counts.slowest)"
        )
        #expect(
            counts.unanswered == 0,
            "\(counts.unanswered) payments got no answer within \(Int(clientTimeout)) s:\n\(daemon.output().suffix(4_000))"
        )
        #expect(counts.answered[500, default: 0] == 0, "500s: \(counts.answered)")
        print("outage loop: a payment approved again after each round in \(approvedAgain.map { $0.map(String.init(describing:)) ?? "never" })")
        #expect(!approvedAgain.contains { $0 == nil }, "no payment approved within a minute after a round: \(approvedAgain)")
        // SIGTERM: finished within the graceful bound (30 s) and a margin, and the embedded cluster is stopped.
        daemon.process.terminate()
        let exited = try await daemon.exited(attempts: (30 + 30) * 4)
        let postmaster = DaemonProcess.processes(mentioning: dataDirectory.appendingPathComponent("pg").path)
        #expect(exited, "the daemon did not finish on SIGTERM:\n\(daemon.output().suffix(4_000))")
        #expect(exited && postmaster.isEmpty, "the embedded cluster still runs:\n\(DaemonProcess.describe(postmaster))")
        if !exited { kill(daemon.process.processIdentifier, SIGKILL) }
        if !postmaster.isEmpty { try? await cluster.stopOffPool(mode: "immediate") }
    }
}
