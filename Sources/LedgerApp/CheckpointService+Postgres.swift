import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import Logging

/// Checkpoints on PostgreSQL (issue 56: LedgerServices signs through its ports; today's SQL is given here).
extension CheckpointService {
    /// `ledgerd audit checkpoint`: signs on an offline client, with a writer of its own.
    public static func signOffline(
        key: CheckpointKey,
        client: DatabaseClient,
        directory: URL,
        logger: Logger
    ) async throws
        -> (checkpoint: Checkpoint, file: URL)
    {
        let writer = LedgerWriter(client: client, logger: logger)
        let store = EventStore(client: client, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await writer.run() }
            defer { group.cancelAll() }
            return try await CheckpointService(
                key: key,
                writer: writer,
                store: store,
                head: StoreServableHead(watcher: HeadWatcher(client: client, pollInterval: .seconds(1), logger: logger), store: store),
                directory: directory,
                clock: { Date() },
                logger: logger
            ).sign(actor: "cli:audit-checkpoint")
        }
    }
}
