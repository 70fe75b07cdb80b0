import Foundation
import LedgerCore
import LedgerEngine
import Logging

/// Catalog commands: the demo catalog for a new ledger, and the pictures that go with it.
public struct CatalogService: Sendable {
    let writer: LedgerWriter
    /// The event store (on PostgreSQL, LedgerPostgres' `EventStore`).
    let store: any StreamReads & HeadReads
    let logger: Logger

    package init(writer: LedgerWriter, store: any StreamReads & HeadReads, logger: Logger) {
        self.writer = writer
        self.store = store
        self.logger = logger
    }

    /// On the first start of an empty ledger, lists the demo catalog (12 products with their
    /// stock, 3 shipping methods) as one atomic append: a command on the runner, which reads the demo streams and
    /// appends only where none exists. Returns false when the ledger already has events, or when another daemon
    /// seeded it first (then its streams exist: the runner decides again on them, and appends nothing).
    @discardableResult
    public func seedDemoCatalogIfEmpty(now: Date) async throws -> Bool {
        guard try await store.head().position == 0 else { return false }
        let reads = AggregateKeys(products: DemoCatalog.products.map(\.id), shippingMethods: DemoCatalog.shippingMethods.map(\.id))
        let seed = Signalled<Bool>(
            reads: reads,
            now: now,
            metadata: EventMetadata(correlationID: "seed-demo-catalog", actor: "system:seed", command: "SeedDemoCatalog")
        ) { states in
            guard states.products.isEmpty && states.shippingMethods.isEmpty else { return .nothing(false) }
            return .append(CommandPlan(plan: AppendPlan(DemoCatalog.seedAppends(context: DecisionContext(now: now)))), true)
        }
        // A runner of its own: the seed runs once, before any service, and its states are not worth caching.
        guard try await AggregateStore(writer: writer, store: store).run(seed).signal else { return false }
        logger.info(
            "demo catalog seeded",
            metadata: [
                "products": "\(DemoCatalog.products.count)",
                "shipping_methods": "\(DemoCatalog.shippingMethods.count)",
            ]
        )
        return true
    }

    /// Writes our generated placeholder picture for every demo product that has none yet.
    public static func writeDemoPictures(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for product in DemoCatalog.products {
            let url = directory.appendingPathComponent(product.imageFile)
            if !FileManager.default.fileExists(atPath: url.path) {
                try Data(PlaceholderImage.png(for: product.name)).write(to: url, options: .atomic)
            }
        }
    }
}
