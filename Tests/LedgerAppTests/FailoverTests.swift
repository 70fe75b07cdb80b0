import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A primary and a synchronous streaming standby (pg_basebackup, `synchronous_standby_names`), both real local
/// clusters, under a real `ledgerd serve` whose URL lists the standby first and the primary second with
/// `target_session_attrs=read-write`: the daemon picks the writable host, answers 503 while no host is writable
/// (primary stopped, standby not yet promoted), and after `pg_ctl promote` serves from the new primary, where every
/// payment it acknowledged is, on a chain that verifies. (Deadlines are the client's bounds, not measurements.)
@Suite(.machine(.shared)) struct FailoverTests {
    @Test(.timeLimit(.minutes(4))) func theDaemonFindsThePrimaryAnswers503WithoutOneAndFollowsThePromotedStandby() async throws {
        let clusters = try await ReplicatedClusters.start(synchronous: true)
        defer { clusters.stop() }
        let (primary, standby) = (clusters.primary, clusters.standby)
        let (primaryEndpoint, standbyEndpoint) = (clusters.primaryEndpoint, clusters.standbyEndpoint)
        let log = clusters.root.appendingPathComponent("daemon.log")
        func superuser(_ endpoint: EmbeddedPostgres.Endpoint, _ database: String) -> PostgresClient.Configuration {
            clusters.superuser(endpoint, database)
        }

        func url(_ user: String) -> String {
            "postgres://\(user)@/ledger?host=\(standbyEndpoint.socketDirectory),\(primaryEndpoint.socketDirectory)&target_session_attrs=read-write"
        }
        // The owner's pool on the same URL skips the standby listed first and settles on the primary.
        let inRecovery = try await withPostgresClient(hosts: try DatabaseURL(url("postgres")).hosts, logger: TestCluster.logger) { client in
            var answer = true
            for try await value in try await client.query("SELECT pg_is_in_recovery()").decode(Bool.self) { answer = value }
            return (answer, client.currentHost)
        }
        #expect(inRecovery.0 == false && inRecovery.1 == 1)
        let daemon = try await DaemonProcess.start(
            dataDirectory: clusters.root.appendingPathComponent("daemon"),
            port: TestPorts.free(),
            logFile: log,
            environment: [
                "LEDGERD_DATABASE_URL": url("ledger_app"), "LEDGERD_MIGRATION_DATABASE_URL": url("postgres"),
                "LEDGERD_OPERATOR_KEYS": "op-failover", "LEDGERD_SEED_DEMO_CATALOG": "true", "LEDGERD_LOG_LEVEL": "info",
            ]
        )
        defer { daemon.process.terminate() }
        guard daemon.health != nil else {
            Issue.record("no /health answer; daemon output:\n\(daemon.output())")
            return
        }
        // 60 s per request: a bound for a broken run (a loaded machine answers a 503 in seconds, not at once).
        func call(_ method: String, _ path: String, _ body: String? = nil, timeout: TimeInterval = 60) async throws -> (Int, String) {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(daemon.port)\(path)")!)
            request.httpMethod = method
            request.timeoutInterval = timeout
            request.setValue("Bearer op-failover", forHTTPHeaderField: "Authorization")
            if let body {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(body.utf8)
            }
            let (data, response) = try await TestHTTP.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
        }
        let payment = String(decoding: StorefrontDriver.paymentBody(amount: 3200, product: "Pen"), as: UTF8.self)
        var acknowledged: [String] = []
        func pay() async throws -> (Int, String) {
            let (status, body) = try await call("POST", "/payment", payment)
            if status == 200, case .string(let id)? = JSONValue.parse(body)?["order_id"] { acknowledged.append(id) }
            return (status, body)
        }
        for _ in 0..<3 {
            let (status, body) = try await pay()
            #expect(status == 200, "\(body)")
        }
        // Each acknowledged commit was confirmed by the standby: it is there before any failover.
        let onStandby = try await withPostgresClient(configuration: superuser(standbyEndpoint, "ledger"), logger: TestCluster.logger) {
            client in
            // Confirmed (flushed) on the standby; replayed there soon after, which is awaited (60 s at most).
            var found = 0
            _ = try await eventually {
                for try await n in try await client.query("SELECT count(*)::int FROM ledger.events WHERE type = 'OrderAuthorized'")
                    .decode(Int.self)
                {
                    found = n
                }
                return found >= 3
            }
            return found
        }
        #expect(onStandby >= 3)

        // The primary goes; nothing is writable until the standby is promoted: 503, never 500.
        try await primary.stopOffPool(mode: "immediate")
        for round in 0..<2 {
            let (paid, body) = try await pay()
            #expect(paid == 503 && body.contains("database_unavailable"), "round \(round): \(paid) \(body)")
            try await Task.sleep(for: .seconds(1))
        }
        try await Task.detached { try standby.promote() }.value
        let resumed = try await eventually {
            guard let (status, _) = try? await pay() else { return false }
            return status == 200
        }
        #expect(resumed, "no payment accepted within 60 s of the promotion:\n\(daemon.output())")
        #expect(acknowledged.count == 4)
        for id in acknowledged {
            let (status, body) = try await call("GET", "/orders/\(id)")
            #expect(status == 200 && body.contains(id), "acknowledged order \(id): \(status) \(body)")
        }
        let (verified, report) = try await call("GET", "/audit/verify", timeout: 30)
        #expect(verified == 200, "\(report)")
        let chain = try JSONDecoder().decode(ChainReport.self, from: Data(report.utf8))
        #expect(chain.ok && chain.checked > 0, "\(report)")
        // Where the daemon writes now is the promoted standby (the old primary is down).
        let count = try await withPostgresClient(configuration: superuser(standbyEndpoint, "ledger"), logger: TestCluster.logger) { client in
            var n = -1
            for try await value in try await client.query("SELECT count(*)::int FROM ledger.events WHERE type = 'OrderAuthorized'")
                .decode(Int.self)
            {
                n = value
            }
            return n
        }
        #expect(count == 4)
        #expect(!daemon.output().contains("internal_error"))
        try await daemon.stop()
    }
}
