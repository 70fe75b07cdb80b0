import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import Logging

/// The catalog import on PostgreSQL (issue 56: LedgerServices runs it on the engine's runner; the writer on today's SQL
/// is built here).
extension CatalogImport {
    /// Imports into a ledger through a writer of its own (for the `ledgerd catalog import` command).
    public func run(client: DatabaseClient, now: Date, logger: Logger) async throws -> Report {
        let writer = LedgerWriter(client: client, logger: logger)
        let aggregates = AggregateStore(writer: writer, store: EventStore(client: client, logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await writer.run() }
            defer { group.cancelAll() }
            return try await run(aggregates: aggregates, now: now, logger: logger)
        }
    }
}
