import Foundation
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO

/// The database the daemon uses — its own embedded cluster, or the server `LEDGERD_DATABASE_URL`
/// names — brought to the current schema.
///
/// Embedded: the cluster runs under `LEDGERD_DATA_DIR`, the database is `ledger`, migrations run
/// as the cluster's superuser, and the daemon connects as `ledger_app`. With a URL: migrations
/// run with `LEDGERD_MIGRATION_DATABASE_URL` (else the URL itself; with nothing pending that is
/// a no-op any role may run), and the daemon connects with the URL, which in production names a
/// login role that is a member of `ledger_app` only.
public struct LedgerDatabase: Sendable {
    public static let embeddedDatabaseName = "ledger"

    /// The application's connection (the `ledger_app` role): one host, or several to choose from (a
    /// multi-host URL with `target_session_attrs`).
    public let appConfiguration: DatabaseHosts
    /// The schema owner's connection, for migrations.
    public let ownerConfiguration: DatabaseHosts
    public let embedded: EmbeddedPostgres?
    /// Where the data is, safe to print.
    public let location: String

    /// True when this process started the embedded cluster (or, for the daemon, took it over)
    /// and so must stop it.
    public let ownsEmbedded: Bool
    /// The data directory's lock an offline command took here (released by ``stop()``); nil for the daemon, which
    /// holds its own for its whole run, and for a command beside a running daemon.
    let lock: DataDirectoryLock?

    /// Starts the embedded cluster when configured that way and runs pending migrations.
    ///
    /// `daemonLock`: `serve` takes the data directory's lock (``DataDirectoryLock``) before anything else and passes it;
    /// holding it, the daemon alone manages the cluster, so it owns it and stops it when it exits even if it found it
    /// running (left over by a crash). Offline commands pass nil: a command that can take the lock starts the cluster
    /// if needed and stops only what it started; one that cannot (a daemon, or another command, holds it) uses the
    /// cluster that runs, never starts, reconfigures or stops it, and fails when none runs.
    public static func prepare(
        _ configuration: LedgerConfiguration,
        logger: Logger,
        daemonLock: DataDirectoryLock? = nil,
        migrate: Bool = true
    ) async throws -> LedgerDatabase {
        let migrations = try Migrator.load(from: configuration.resolvedMigrationsDirectory())
        let database: LedgerDatabase
        if let url = configuration.databaseURL {
            let app = try DatabaseURL(url)
            let owner = try configuration.migrationDatabaseURL.map(DatabaseURL.init) ?? app
            database = LedgerDatabase(
                appConfiguration: app.hosts.updating { pool(&$0, configuration) },
                ownerConfiguration: owner.hosts,
                embedded: nil,
                location: app.redacted,
                ownsEmbedded: false,
                lock: nil
            )
        } else {
            let embedded = EmbeddedPostgres(
                configuration: .init(
                    dataDirectory: configuration.dataDirectoryURL,
                    binDirectory: configuration.postgresBinDirectory.map { URL(fileURLWithPath: $0) },
                    osUser: configuration.postgresUser
                ),
                logger: logger
            )
            let (endpoint, owns, lock) = try startOrAttach(embedded, configuration: configuration, daemonLock: daemonLock)
            do {
                try await createDatabaseIfMissing(endpoint: endpoint, logger: logger)
            } catch {
                if owns { try? embedded.stop() }
                throw error
            }
            func socket(_ user: String) -> PostgresClient.Configuration {
                PostgresClient.Configuration(
                    unixSocketPath: endpoint.socketPath,
                    username: user,
                    password: nil,
                    database: embeddedDatabaseName
                )
            }
            database = LedgerDatabase(
                appConfiguration: DatabaseHosts(socket("ledger_app")).updating { pool(&$0, configuration) },
                ownerConfiguration: DatabaseHosts(socket(endpoint.superuser)),
                embedded: embedded,
                location: "embedded cluster in \(configuration.dataDirectoryURL.path)",
                ownsEmbedded: owns,
                lock: lock
            )
        }
        if migrate {
            do {
                try await database.migrate(migrations, logger: logger)
            } catch {
                database.stop()
                throw error
            }
        }
        return database
    }

    /// The embedded cluster's endpoint, whether this process must stop the cluster, and the lock an offline command
    /// took (see ``prepare(_:logger:daemonLock:migrate:)``).
    private static func startOrAttach(
        _ embedded: EmbeddedPostgres,
        configuration: LedgerConfiguration,
        daemonLock: DataDirectoryLock?
    ) throws -> (EmbeddedPostgres.Endpoint, owns: Bool, lock: DataDirectoryLock?) {
        if daemonLock != nil { return (try embedded.start().endpoint, true, nil) }
        switch try DataDirectoryLock.acquire(in: configuration.dataDirectoryURL, command: DataDirectoryLock.currentCommand) {
        case .acquired(let lock):
            let (endpoint, alreadyRunning) = try embedded.start()
            return (endpoint, !alreadyRunning, lock)
        case .held(let holder):
            do {
                return (try embedded.attach(), false, nil)
            } catch {
                throw DataDirectoryLockError(
                    "\(holder) manages \(configuration.dataDirectoryURL.path) and its database is not running; try again once it is up or has stopped"
                )
            }
        }
    }

    /// Applies pending migrations as the owner; in embedded mode also lets the roles log in.
    public func migrate(_ migrations: [Migration], logger: Logger) async throws {
        let embedded = self.embedded != nil
        try await withPostgresClient(hosts: ownerConfiguration, logger: logger) { client in
            let report = try await Migrator(migrations: migrations, logger: logger).migrate(client: client)
            if !report.applied.isEmpty {
                logger.info("migrations applied", metadata: ["applied": "\(report.applied.joined(separator: ", "))"])
            }
            if embedded {
                try await client.query("ALTER ROLE ledger_app LOGIN", logger: logger)
                try await client.query("ALTER ROLE ledger_auditor LOGIN", logger: logger)
                // The login the README's auditor psql lines use (`user=auditor`): a member of ledger_auditor, so SELECT
                // only and no shipping contacts. The embedded cluster listens on its socket directory only (no TCP),
                // whose permissions guard it, so the role needs no password.
                try await client.query(
                    """
                    DO $$ BEGIN
                        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'auditor') THEN
                            CREATE ROLE auditor LOGIN IN ROLE ledger_auditor;
                        END IF;
                    END $$
                    """,
                    logger: logger
                )
            }
        }
    }

    /// Stops the embedded cluster, if there is one and this process owns it, then lets go of the lock a command took.
    public func stop() {
        defer { lock?.release() }
        guard let embedded, ownsEmbedded else { return }
        do {
            try embedded.stop()
        } catch {
            FileHandle.standardError.write(Data("ledgerd: stopping the embedded PostgreSQL failed: \(error)\n".utf8))
        }
    }

    private static func pool(_ configuration: inout PostgresClient.Configuration, _ ledger: LedgerConfiguration) {
        configuration.options.maximumConnections = ledger.databasePoolSize
        configuration.options.connectTimeout = ledger.databaseConnectTimeout
    }

    private static func createDatabaseIfMissing(endpoint: EmbeddedPostgres.Endpoint, logger: Logger) async throws {
        let admin = PostgresClient.Configuration(
            unixSocketPath: endpoint.socketPath,
            username: endpoint.superuser,
            password: nil,
            database: "postgres"
        )
        try await withPostgresClient(configuration: admin, logger: logger) { client in
            let rows = try await client.query(
                "SELECT count(*) FROM pg_database WHERE datname = \(embeddedDatabaseName)",
                logger: logger
            )
            var exists = false
            for try await count in rows.decode(Int64.self) { exists = count > 0 }
            if !exists {
                try await client.query("CREATE DATABASE \(unescaped: embeddedDatabaseName)", logger: logger)
            }
        }
    }
}
