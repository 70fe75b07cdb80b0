import Foundation
import LedgerEngine
import LedgerPostgres
import Logging
import PostgresNIO

/// A fresh, migrated database for one test, with clients for the roles a test needs.
public struct TestDatabase: Sendable {
    public let name: String
    public let endpoint: EmbeddedPostgres.Endpoint

    /// Connects as the superuser (owner of the schema).
    public func withOwner<T: Sendable>(_ body: @Sendable (DatabaseClient) async throws -> T) async throws -> T {
        try await TestCluster.withClient(endpoint: endpoint, database: name, user: endpoint.superuser, body)
    }

    /// Connects as the application role (INSERT and SELECT on the log).
    public func withApp<T: Sendable>(_ body: @Sendable (DatabaseClient) async throws -> T) async throws -> T {
        try await TestCluster.withClient(endpoint: endpoint, database: name, user: "ledger_app", body)
    }

    /// Connects as the auditor role (SELECT only).
    public func withAuditor<T: Sendable>(_ body: @Sendable (DatabaseClient) async throws -> T) async throws -> T {
        try await TestCluster.withClient(endpoint: endpoint, database: name, user: "ledger_auditor", body)
    }

    /// Runs `body` with a running writer connected as `ledger_app`, as the daemon runs it.
    public func withWriter<T: Sendable>(
        configuration: LedgerWriter.Configuration = .init(),
        _ body: @Sendable (LedgerWriter, DatabaseClient) async throws -> T
    ) async throws -> T {
        try await withApp { client in
            let writer = LedgerWriter(client: client, configuration: configuration, logger: TestCluster.logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await writer.run() }
                defer { group.cancelAll() }
                return try await body(writer, client)
            }
        }
    }

    /// A new migrated database named after the calling test.
    public static func fresh(_ hint: String = #function) async throws -> TestDatabase {
        let endpoint = try await TestCluster.shared.endpoint()
        let name = try await TestCluster.shared.createDatabase(hint, migrated: true)
        return TestDatabase(name: name, endpoint: endpoint)
    }

    /// A new empty database (for migration tests).
    public static func empty(_ hint: String = #function) async throws -> TestDatabase {
        let endpoint = try await TestCluster.shared.endpoint()
        let name = try await TestCluster.shared.createDatabase(hint, migrated: false)
        return TestDatabase(name: name, endpoint: endpoint)
    }
}

extension TestDatabase {
    /// Runs `sql` as the owner with the log's triggers off (`session_replication_role = replica`): how a
    /// test forges the tampering the chain verifiers must catch.
    public func tamper(_ sql: String) async throws {
        try await withOwner { client in
            try await client.withConnection { connection in
                try await Migrator.run(
                    script: "SET session_replication_role = replica; \(sql); RESET session_replication_role;",
                    connection: connection,
                    logger: TestCluster.logger
                )
            }
        }
    }
}
