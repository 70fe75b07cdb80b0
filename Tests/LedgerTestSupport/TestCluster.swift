import Foundation
import LedgerPostgres
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// One embedded PostgreSQL cluster per test run (the same launcher `ledgerd serve` uses), with a
/// migrated template database; every test gets a fresh database cloned from it.
public actor TestCluster {
    public static let shared = TestCluster()

    /// The tests' logger: quiet unless `LEDGERD_TEST_LOG` is set (see ``TestLog``).
    public static let logger = TestLog.logger(label: "ledger.tests")

    /// The repository's root, found from this file's path (tests run from the source tree).
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static var migrationsDirectory: URL { repositoryRoot.appendingPathComponent("sql") }

    static let dataDirectory: URL = repositoryRoot.appendingPathComponent(".build/test-postgres")

    private var started: Task<EmbeddedPostgres.Endpoint, any Error>?
    private var counter = 0

    /// Starts the cluster once (and registers its shutdown at process exit), migrates the template.
    public func endpoint() async throws -> EmbeddedPostgres.Endpoint {
        if let started { return try await started.value }
        let task = Task { try await Self.startCluster() }
        started = task
        return try await task.value
    }

    func nextDatabaseName(_ hint: String) -> String {
        counter += 1
        let cleaned = hint.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
        return "t_\(getpid())_\(counter)_\(String(cleaned.prefix(30)))"
    }

    /// Tests run in parallel, each with its own pools (two daemons in some): room for all of them.
    static let embedded = EmbeddedPostgres(
        configuration: .init(dataDirectory: dataDirectory, durable: false, settings: ["max_connections": "1500"]),
        logger: logger
    )

    private static func startCluster() async throws -> EmbeddedPostgres.Endpoint {
        // An earlier run's cluster goes whole (its hundreds of databases, gigabytes): a new cluster takes seconds, where
        // dropping them one by one took every test that needs the cluster minutes beside two CPU burners, all of it
        // counted against their time limits. The template is built from the current sql/.
        if FileManager.default.fileExists(atPath: dataDirectory.path) {
            try? await embedded.stopOffPool(mode: "immediate")
            try FileManager.default.removeItem(at: dataDirectory)
        }
        let endpoint = try await embedded.startOffPool().endpoint
        atexit { try? TestCluster.embedded.stop() }
        _ = try await withClient(endpoint: endpoint, database: "postgres", user: endpoint.superuser) { client in
            try await client.query("CREATE DATABASE ledger_template")
        }
        try await withClient(endpoint: endpoint, database: "ledger_template", user: endpoint.superuser) { client in
            let migrations = try Migrator.load(from: migrationsDirectory)
            try await Migrator(migrations: migrations, logger: logger).migrate(client: client)
            try await client.query("ALTER ROLE ledger_app LOGIN")
            try await client.query("ALTER ROLE ledger_auditor LOGIN")
        }
        return endpoint
    }

    /// Creates a database: a clone of the migrated template, or empty (for migration tests).
    public func createDatabase(_ hint: String, migrated: Bool) async throws -> String {
        let endpoint = try await endpoint()
        let name = nextDatabaseName(hint)
        let template = migrated ? " TEMPLATE ledger_template" : ""
        _ = try await Self.withClient(endpoint: endpoint, database: "postgres", user: endpoint.superuser) { client in
            try await client.query("CREATE DATABASE \(unescaped: quoteIdentifier(name))\(unescaped: template)")
        }
        return name
    }

    public static func configuration(
        endpoint: EmbeddedPostgres.Endpoint,
        database: String,
        user: String
    ) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            unixSocketPath: endpoint.socketPath,
            username: user,
            password: nil,
            database: database
        )
        // Hundreds of apps run side by side in one test process, each with background services (feeds,
        // snapshots, sweeps) on its pool: at most 8 connections each, and connections opened for a burst go back
        // after 5 s idle rather than PostgresNIO's 60 s (the cluster has 1500 slots). HTTP goes through
        // ``TestHTTP``, not URLSession, which cannot use a descriptor above 1024.
        configuration.options.maximumConnections = 8
        configuration.options.connectionIdleTimeout = .seconds(5)
        return configuration
    }

    /// Runs `body` with a running client; the client stops when `body` returns.
    public static func withClient<T: Sendable>(
        endpoint: EmbeddedPostgres.Endpoint,
        database: String,
        user: String,
        _ body: @Sendable (DatabaseClient) async throws -> T
    ) async throws -> T {
        try await withPostgresClient(
            configuration: configuration(endpoint: endpoint, database: database, user: user),
            logger: logger,
            body
        )
    }
}

/// Double-quotes an SQL identifier.
public func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
