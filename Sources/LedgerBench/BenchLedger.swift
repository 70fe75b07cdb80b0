import Foundation
import LedgerEngine
import LedgerPostgres
import Logging
import PostgresNIO

/// The set-up every ledger benchmark shares: its own durable cluster (migrated), a pool as the
/// application role, and a running group-commit writer; `body` gets the pool and the writer.
enum BenchLedger {
    static func withWriter(
        dataDirectory: URL,
        migrations: [Migration],
        logger: Logger,
        _ body: @escaping @Sendable (DatabaseClient, LedgerWriter) async throws -> String
    ) async throws -> String {
        try await withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer, _ in
            try await body(client, writer)
        }
    }

    /// The same, with the cluster's endpoint (a benchmark that starts the acquirer service on it).
    static func withWriter(
        dataDirectory: URL,
        migrations: [Migration],
        logger: Logger,
        _ body: @escaping @Sendable (DatabaseClient, LedgerWriter, EmbeddedPostgres.Endpoint) async throws -> String
    ) async throws -> String {
        let (embedded, alreadyRunning, config) = try await AppendBenchmark.prepareCluster(
            dataDirectory: dataDirectory,
            migrations: migrations,
            poolSize: 20,
            logger: logger
        )
        defer { if !alreadyRunning { try? embedded.stop() } }
        return try await withPostgresClient(configuration: config("ledger_app"), logger: logger) { client in
            let writer = LedgerWriter(client: client, configuration: .init(maximumBatchEvents: 20_000), logger: logger)
            return try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask {
                    try await writer.run()
                    return ""
                }
                defer { group.cancelAll() }
                return try await body(client, writer, embedded.endpoint)
            }
        }
    }
}
