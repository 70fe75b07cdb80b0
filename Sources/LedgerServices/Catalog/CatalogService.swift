import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPostgres
import Logging

/// Catalog commands: the demo catalog for a new ledger, and the pictures that go with it.
@MemberwiseInit
public struct CatalogService: Sendable {
    let writer: LedgerWriter
    let store: EventStore
    let logger: Logger

    /// On the first start of an empty ledger, lists the demo catalog (12 products with their
    /// stock, 3 shipping methods) as one atomic append. Returns false when the ledger already has
    /// events, or when another daemon seeded it first (its streams then exist: a version conflict).
    @discardableResult
    public func seedDemoCatalogIfEmpty(now: Date) async throws -> Bool {
        guard try await store.head().position == 0 else { return false }
        let plan = DemoCatalog.seedAppends(context: DecisionContext(now: now))
        do {
            _ = try await writer.append(
                try AggregateStates().appendRequest(
                    for: plan,
                    now: now,
                    metadata: EventMetadata(
                        correlationID: "seed-demo-catalog",
                        actor: "system:seed",
                        command: "SeedDemoCatalog"
                    )
                ).request
            )
            logger.info(
                "demo catalog seeded",
                metadata: [
                    "products": "\(DemoCatalog.products.count)",
                    "shipping_methods": "\(DemoCatalog.shippingMethods.count)",
                ]
            )
            return true
        } catch let error as AppendError where error == .versionConflict {
            return false
        }
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
