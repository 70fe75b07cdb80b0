import Foundation
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite(.machine(.shared)) struct MigratorTests {
    let migrations: [Migration]
    init() throws { migrations = try Migrator.load(from: TestCluster.migrationsDirectory) }

    @Test func aFreshDatabaseMigratesAndARerunIsANoOp() async throws {
        let db = try await TestDatabase.empty()
        try await db.withOwner { client in
            let migrator = Migrator(migrations: migrations, logger: TestCluster.logger)
            let first = try await migrator.migrate(client: client)
            #expect(first.applied == migrations.map(\.name))
            #expect(first.alreadyApplied == 0)
            let second = try await migrator.migrate(client: client)
            #expect(second.applied.isEmpty && second.alreadyApplied == migrations.count)
            let recorded = try await column(client, "SELECT checksum FROM ledger.schema_migrations ORDER BY version", as: String.self)
            #expect(recorded == migrations.map(\.checksum))
            try await migrator.verifyApplied(client: client)
        }
    }

    @Test func anEditedAppliedMigrationIsRefused() async throws {
        let db = try await TestDatabase.empty()
        try await db.withOwner { client in
            try await Migrator(migrations: migrations, logger: TestCluster.logger).migrate(client: client)
            let edited =
                [Migration(version: migrations[0].version, name: migrations[0].name, sql: migrations[0].sql + "\n-- sneaky edit\n")]
                + migrations.dropFirst()
            let migrator = Migrator(migrations: edited, logger: TestCluster.logger)
            let error = await #expect(throws: MigrationError.self) { try await migrator.migrate(client: client) }
            #expect(error?.message.contains("was changed after it was applied") == true)
            #expect(error?.message.contains(migrations[0].name) == true)
            await #expect(throws: MigrationError.self) { try await migrator.verifyApplied(client: client) }
        }
    }

    @Test func aPendingMigrationIsReportedToTheAppRole() async throws {
        let db = try await TestDatabase.fresh()
        let more = migrations + [Migration(version: 9999, name: "9999_add_nothing.sql", sql: "SELECT 1;")]
        try await db.withApp { client in
            let error = await #expect(throws: MigrationError.self) {
                try await Migrator(migrations: more, logger: TestCluster.logger).verifyApplied(client: client)
            }
            #expect(error?.message.contains("9999_add_nothing.sql") == true)
        }
    }

    @Test func aFailingMigrationRollsBackCompletely() async throws {
        let db = try await TestDatabase.fresh()
        let more =
            migrations + [Migration(version: 9998, name: "9998_broken.sql", sql: "CREATE TABLE ledger.half (x int); SELECT no_such_function();")]
        try await db.withOwner { client in
            await #expect(throws: MigrationError.self) {
                try await Migrator(migrations: more, logger: TestCluster.logger).migrate(client: client)
            }
            let halfTableGone = try await column(client, "SELECT to_regclass('ledger.half') IS NULL", as: Bool.self)
            let recorded = try await column(client, "SELECT count(*) FROM ledger.schema_migrations WHERE version = 9998", as: Int64.self)
            #expect(halfTableGone == [true])
            #expect(recorded == [0])
        }
    }

    @Test func loadingRefusesDuplicateVersions() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "SELECT 1;".write(to: dir.appendingPathComponent("0001_a.sql"), atomically: true, encoding: .utf8)
        try "SELECT 2;".write(to: dir.appendingPathComponent("0001_b.sql"), atomically: true, encoding: .utf8)
        #expect(throws: MigrationError.self) { try Migrator.load(from: dir) }
    }
}
