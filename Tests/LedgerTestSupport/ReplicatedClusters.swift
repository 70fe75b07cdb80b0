import Foundation
import LedgerPostgres
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// A primary and a streaming standby made from it (`pg_basebackup`), both real local clusters of their own (not the
/// shared test cluster), with the database `ledger` migrated on the primary and `ledger_app` allowed to log in.
/// `synchronous`: the primary's `synchronous_standby_names` names the standby, so every commit it acknowledges is on
/// the standby (flushed); the standby runs without one, so that once promoted it does not wait for a standby it lacks.
public struct ReplicatedClusters: Sendable {
    public static let database = "ledger"
    public let root: URL
    public let primary: EmbeddedPostgres
    public let standby: EmbeddedPostgres
    public let primaryEndpoint: EmbeddedPostgres.Endpoint
    public let standbyEndpoint: EmbeddedPostgres.Endpoint

    /// The primary's `ledger` database.
    public var primaryDatabase: TestDatabase { TestDatabase(name: Self.database, endpoint: primaryEndpoint) }
    /// The standby's `ledger` database (read-only while it is a standby).
    public var standbyDatabase: TestDatabase { TestDatabase(name: Self.database, endpoint: standbyEndpoint) }

    /// Starts both clusters under a fresh directory in /tmp and waits until the standby streams (synchronously when
    /// asked), then creates and migrates `ledger` on the primary.
    public static func start(synchronous: Bool = true) async throws -> ReplicatedClusters {
        let root = URL(fileURLWithPath: "/tmp/ledgerd-ha-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        chmod(root.path, 0o755)
        let primary = EmbeddedPostgres(
            configuration: .init(
                dataDirectory: root.appendingPathComponent("primary"),
                durable: false,
                settings: ["synchronous_commit": "on", "synchronous_standby_names": synchronous ? "'standby'" : "''"]
            ),
            logger: TestCluster.logger
        )
        let primaryEndpoint = try await primary.startOffPool().endpoint
        let standby = EmbeddedPostgres(
            configuration: .init(
                dataDirectory: root.appendingPathComponent("standby"),
                durable: false,
                settings: EmbeddedPostgres.standbySettings(of: primaryEndpoint, applicationName: "standby")
                    .merging(["synchronous_commit": "on", "synchronous_standby_names": "''"]) { $1 }
            ),
            logger: TestCluster.logger
        )
        let clusters: ReplicatedClusters
        do {
            try await standby.createStandbyOffPool(of: primaryEndpoint)
            let standbyEndpoint = try await standby.startOffPool().endpoint
            clusters = ReplicatedClusters(
                root: root,
                primary: primary,
                standby: standby,
                primaryEndpoint: primaryEndpoint,
                standbyEndpoint: standbyEndpoint
            )
        } catch {
            try? primary.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        do {
            let wanted = synchronous ? "sync" : "async"
            let streaming = try await withPostgresClient(configuration: clusters.superuser(primaryEndpoint, "postgres"), logger: TestCluster.logger) {
                client in
                for _ in 0..<240 {
                    let rows = try await client.query("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")
                    for try await state in rows.decode(String.self) where state == wanted { return true }
                    try await Task.sleep(for: .milliseconds(250))
                }
                return false
            }
            guard streaming else { throw ReplicationSetupError(message: "the standby never streamed (\(wanted))") }
            _ = try await withPostgresClient(configuration: clusters.superuser(primaryEndpoint, "postgres"), logger: TestCluster.logger) {
                client in
                try await client.query("CREATE DATABASE ledger")
            }
            try await withPostgresClient(configuration: clusters.superuser(primaryEndpoint, Self.database), logger: TestCluster.logger) { client in
                try await Migrator(migrations: try Migrator.load(from: TestCluster.migrationsDirectory), logger: TestCluster.logger)
                    .migrate(client: client)
                try await client.query("ALTER ROLE ledger_app LOGIN")
                try await client.query("ALTER ROLE ledger_auditor LOGIN")
            }
        } catch {
            clusters.stop()
            throw error
        }
        return clusters
    }

    /// The superuser's connection to `database` on the cluster at `endpoint`.
    public func superuser(_ endpoint: EmbeddedPostgres.Endpoint, _ database: String) -> PostgresClient.Configuration {
        PostgresClient.Configuration(unixSocketPath: endpoint.socketPath, username: endpoint.superuser, password: nil, database: database)
    }

    /// The ledger's head position on the cluster at `endpoint`.
    public func head(on endpoint: EmbeddedPostgres.Endpoint) async throws -> Int64 {
        try await withPostgresClient(configuration: superuser(endpoint, Self.database), logger: TestCluster.logger) { client in
            var position: Int64 = -1
            for try await value in try await client.query("SELECT position FROM ledger.head WHERE singleton").decode(Int64.self) {
                position = value
            }
            return position
        }
    }

    /// Waits (up to 20 s, looking every 100 ms) for a backend on the primary whose commit waits for the synchronous
    /// standby (`wait_event = 'SyncRep'`) and terminates every such backend, as a demotion or a pool reset does: the
    /// commits stay on the primary alone. How many it terminated (0: none waited in that time).
    public func terminateCommitsWaitingForTheStandby() async throws -> Int64 {
        for _ in 0..<200 {
            try await Task.sleep(for: .milliseconds(100))
            let terminated = try await withPostgresClient(
                configuration: superuser(primaryEndpoint, Self.database),
                logger: TestCluster.logger
            ) { client in
                let rows = try await client.query(
                    "SELECT count(pg_terminate_backend(pid))::bigint FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
                    logger: TestCluster.logger
                )
                for try await count in rows.decode(Int64.self) { return count }
                return 0
            }
            if terminated > 0 { return terminated }
        }
        return 0
    }

    /// Stops both clusters (immediately) and removes their files.
    public func stop() {
        try? standby.stop(mode: "immediate")
        try? primary.stop(mode: "immediate")
        try? FileManager.default.removeItem(at: root)
    }
}

/// The standby of ``ReplicatedClusters`` did not come up as asked.
public struct ReplicationSetupError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
