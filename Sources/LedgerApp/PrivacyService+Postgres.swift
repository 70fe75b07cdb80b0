import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import Logging

/// The privacy service on PostgreSQL (issue 56: LedgerServices reads its ports, the composition root gives it today's SQL).
extension PrivacyService {
    /// On `client`: the contacts table (`ContactsStore`) and the event store.
    public init(client: DatabaseClient, writer: LedgerWriter, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.init(
            contacts: ContactsStore(client: client, logger: logger),
            writer: writer,
            store: EventStore(client: client, logger: logger),
            clock: clock,
            logger: logger
        )
    }

    /// `ledgerd privacy erase`: the erasure on an offline client, with a writer of its own.
    public static func eraseOffline(customer: String, client: DatabaseClient, logger: Logger) async throws -> [Erasure] {
        let writer = LedgerWriter(client: client, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await writer.run() }
            defer { group.cancelAll() }
            return try await PrivacyService(client: client, writer: writer, clock: { Date() }, logger: logger)
                .eraseContacts(customer: customer, actor: "cli:privacy-erase")
        }
    }
}
