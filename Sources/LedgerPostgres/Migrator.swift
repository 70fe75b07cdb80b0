import Crypto
import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// One numbered SQL file from `sql/`: `NNNN_verb_object.sql`.
public struct Migration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String
    /// Lower-case hex SHA-256 of the file's bytes.
    public var checksum: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = Hex.encode(SHA256.hash(data: Array(sql.utf8)))
    }
}

/// Why migrating stopped. The message says what to do.
public struct MigrationError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
}

/// Applies `sql/NNNN_*.sql` in order, each in its own transaction together with its record in
/// `ledger.schema_migrations` (version, name, checksum). An applied file whose checksum changed,
/// or an applied version whose file is gone, stops everything: history is not rewritten, a new
/// migration is added instead. Concurrent migrators (several daemons starting) serialise on an
/// advisory lock.
public struct Migrator: Sendable {
    public let migrations: [Migration]
    /// The schema whose `schema_migrations` table records what is applied: `ledger` for the ledger's
    /// set (sql/), `acquirer` for the acquirer service's own set (sql/acquirer/), which may live in
    /// another database.
    public let schema: String
    private let logger: Logger

    /// Arbitrary, fixed key for `pg_advisory_lock`.
    static let lockKey: Int64 = 0x4C45_4447_4D49_4752  // "LEDGMIGR"

    public init(migrations: [Migration], schema: String = "ledger", logger: Logger) {
        precondition(schema.allSatisfy { $0.isASCII && ($0.isLowercase || $0 == "_") }, "a schema name is a constant identifier")
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.schema = schema
        self.logger = logger
    }

    /// One advisory lock per migration set, so the ledger's and the acquirer's may run side by side.
    private var lock: Int64 { schema == "ledger" ? Self.lockKey : Self.lockKey &+ 1 }

    /// Loads `NNNN_name.sql` files from a directory; other files are ignored.
    public static func load(from directory: URL) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError("cannot read migrations directory \(directory.path): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        var seen: [Int: String] = [:]
        for name in names.sorted() where name.hasSuffix(".sql") {
            let digits = name.prefix { $0.isASCII && $0.isNumber }
            guard digits.count == 4, name.dropFirst(4).first == "_", let version = Int(digits) else { continue }
            if let other = seen[version] {
                throw MigrationError("two migrations have version \(version): \(other) and \(name)")
            }
            seen[version] = name
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            guard let sql = String(data: data, encoding: .utf8) else {
                throw MigrationError("migration \(name) is not UTF-8")
            }
            migrations.append(Migration(version: version, name: name, sql: sql))
        }
        guard !migrations.isEmpty else { throw MigrationError("no migrations (NNNN_name.sql) found in \(directory.path)") }
        return migrations
    }

    /// What `migrate` did.
    public struct Report: Sendable, Hashable {
        public var applied: [String]
        public var alreadyApplied: Int
    }

    /// Applies every pending migration. Run with a role that owns the schema (not `ledger_app`).
    @discardableResult
    public func migrate(client: DatabaseClient) async throws -> Report {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(lock))", logger: logger)
            do {
                let applied = try await Self.applied(schema: schema, connection: connection, logger: logger)
                try check(applied: applied)
                var report = Report(applied: [], alreadyApplied: applied.count)
                let pending = migrations.filter { applied[$0.version] == nil }
                // Nothing pending: no DDL at all, so a role without DDL rights (ledger_app) may run this.
                if !pending.isEmpty { try await Self.ensureTable(schema: schema, connection: connection, logger: logger) }
                for migration in pending {
                    logger.info("applying migration", metadata: ["migration": "\(migration.name)"])
                    try await apply(migration, connection: connection)
                    report.applied.append(migration.name)
                }
                try await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger)
                return report
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(lock))", logger: logger).collect()
                throw error
            }
        }
    }

    /// Checks, without changing anything, that every migration is applied and unchanged: what a
    /// daemon connected as `ledger_app` (which may not run DDL) does at start.
    public func verifyApplied(client: DatabaseClient) async throws {
        let logger = self.logger
        let applied = try await client.withConnection { connection in
            try await Self.applied(schema: schema, connection: connection, logger: logger)
        }
        try check(applied: applied)
        let pending = migrations.filter { applied[$0.version] == nil }.map(\.name)
        if !pending.isEmpty {
            throw MigrationError(
                "the database lacks migrations \(pending.joined(separator: ", ")): run `ledgerd migrate` with the owner's connection"
            )
        }
    }

    private func check(applied: [Int: (name: String, checksum: String)]) throws {
        let byVersion = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, record) in applied.sorted(by: { $0.key < $1.key }) {
            guard let migration = byVersion[version] else {
                throw MigrationError("migration \(record.name) is applied in the database but its file is missing; refusing to continue")
            }
            guard migration.checksum == record.checksum else {
                throw MigrationError(
                    """
                    migration \(migration.name) was changed after it was applied \
                    (applied checksum \(record.checksum), file checksum \(migration.checksum)); \
                    restore the file and add a new migration instead
                    """
                )
            }
        }
    }

    private func apply(_ migration: Migration, connection: PostgresConnection) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await Self.run(script: migration.sql, connection: connection, logger: logger)
            try await connection.query(
                """
                INSERT INTO \(unescaped: schema).schema_migrations (version, name, checksum, applied_at)
                VALUES (\(migration.version), \(migration.name), \(migration.checksum), now())
                """,
                logger: logger
            )
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            let detail = PostgresErrorMapping.serverError(in: error)?.serverInfo?[.message] ?? String(reflecting: error)
            throw MigrationError("migration \(migration.name) failed and was rolled back: \(detail)")
        }
    }

    /// Runs a multi-statement script, one statement at a time, on one connection.
    public static func run(script: String, connection: PostgresConnection, logger: Logger) async throws {
        for statement in SQLScript.statements(script) {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    private static func ensureTable(schema: String, connection: PostgresConnection, logger: Logger) async throws {
        try await run(
            script:
                """
                CREATE SCHEMA IF NOT EXISTS \(schema);
                CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (
                    version    integer     PRIMARY KEY,
                    name       text        NOT NULL,
                    checksum   text        NOT NULL,
                    applied_at timestamptz NOT NULL
                );
                """,
            connection: connection,
            logger: logger
        )
    }

    private static func applied(
        schema: String,
        connection: PostgresConnection,
        logger: Logger
    ) async throws -> [Int: (name: String, checksum: String)] {
        let exists = try await connection.query(
            "SELECT to_regclass(\(schema + ".schema_migrations")) IS NOT NULL",
            logger: logger
        )
        for try await present in exists.decode(Bool.self) where !present { return [:] }
        var applied: [Int: (name: String, checksum: String)] = [:]
        let rows = try await connection.query(
            "SELECT version, name, checksum FROM \(unescaped: schema).schema_migrations ORDER BY version",
            logger: logger
        )
        for try await (version, name, checksum) in rows.decode((Int, String, String).self) {
            applied[version] = (name, checksum)
        }
        return applied
    }
}
