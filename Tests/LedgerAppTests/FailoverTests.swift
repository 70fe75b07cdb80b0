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
@Suite struct FailoverTests {
    @Test(.timeLimit(.minutes(4))) func theDaemonFindsThePrimaryAnswers503WithoutOneAndFollowsThePromotedStandby() async throws {
        let root = URL(fileURLWithPath: "/tmp/ledgerd-ha-\(UUID().uuidString.prefix(8).lowercased())")
        let log = root.appendingPathComponent("daemon.log")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        chmod(root.path, 0o755)
        defer { try? FileManager.default.removeItem(at: root) }
        let primary = EmbeddedPostgres(
            configuration: .init(
                dataDirectory: root.appendingPathComponent("primary"),
                durable: false,
                settings: ["synchronous_commit": "on", "synchronous_standby_names": "'standby'"]
            ),
            logger: TestCluster.logger
        )
        let primaryEndpoint = try await primary.startOffPool().endpoint
        defer { try? primary.stop(mode: "immediate") }
        let standby = EmbeddedPostgres(
            configuration: .init(
                dataDirectory: root.appendingPathComponent("standby"),
                durable: false,
                settings: EmbeddedPostgres.standbySettings(of: primaryEndpoint, applicationName: "standby")
                    .merging(["synchronous_commit": "on"]) { $1 }
            ),
            logger: TestCluster.logger
        )
        try await Task.detached { try standby.createStandby(of: primaryEndpoint) }.value
        let standbyEndpoint = try await standby.startOffPool().endpoint
        defer { try? standby.stop(mode: "immediate") }

        func superuser(_ endpoint: EmbeddedPostgres.Endpoint, _ database: String) -> PostgresClient.Configuration {
            PostgresClient.Configuration(unixSocketPath: endpoint.socketPath, username: "postgres", password: nil, database: database)
        }
        // The standby streams synchronously before anything is written (else every commit would wait).
        let synchronous = try await withPostgresClient(configuration: superuser(primaryEndpoint, "postgres"), logger: TestCluster.logger) {
            client in
            for _ in 0..<240 {
                for try await state in try await client.query("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")
                    .decode(String.self)
                where state == "sync" {
                    try await client.query("CREATE DATABASE ledger")
                    return true
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            return false
        }
        try #require(synchronous, "the standby never became synchronous")

        func url(_ user: String) -> String {
            "postgres://\(user)@/ledger?host=\(standbyEndpoint.socketDirectory),\(primaryEndpoint.socketDirectory)&target_session_attrs=read-write"
        }
        // Migrations as the owner through the same multi-host URL (they too must find the primary).
        try await withPostgresClient(hosts: try DatabaseURL(url("postgres")).hosts, logger: TestCluster.logger) { client in
            try await Migrator(migrations: try Migrator.load(from: TestCluster.migrationsDirectory), logger: TestCluster.logger)
                .migrate(client: client)
            try await client.query("ALTER ROLE ledger_app LOGIN")
        }
        let daemon = try await DaemonProcess.start(
            dataDirectory: root.appendingPathComponent("daemon"),
            port: Int.random(in: 20_000..<40_000),
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
        func call(_ method: String, _ path: String, _ body: String? = nil, timeout: TimeInterval = 5) async throws -> (Int, String) {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(daemon.port)\(path)")!)
            request.httpMethod = method
            request.timeoutInterval = timeout
            request.setValue("Bearer op-failover", forHTTPHeaderField: "Authorization")
            if let body {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(body.utf8)
            }
            let (data, response) = try await URLSession.shared.data(for: request)
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
            var found = 0
            for _ in 0..<40 {
                found = 0
                for try await n in try await client.query("SELECT count(*)::int FROM ledger.events WHERE type = 'OrderAuthorized'")
                    .decode(Int.self)
                {
                    found = n
                }
                if found >= 3 { break }
                try await Task.sleep(for: .milliseconds(100))
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
        var resumed = false
        for _ in 0..<100 {
            if let (status, _) = try? await pay(), status == 200 {
                resumed = true
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(resumed, "no payment accepted within 10 s of the promotion:\n\(daemon.output())")
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
