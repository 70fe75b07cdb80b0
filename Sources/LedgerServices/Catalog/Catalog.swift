import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import PostgresNIO

/// The catalog's read models, `inventory` and `shipping_methods` in `ledger.projection_rows`: one
/// row per product / shipping method in the storefront app's field names (`price` as a decimal
/// string), computed from the aggregate's state after its events and written with them.
public enum CatalogReadModel {
    public static let inventory = "inventory"
    public static let shippingMethods = "shipping_methods"

    public static func row(_ state: ProductState) throws -> ProjectionRow {
        struct Row: Encodable {
            let id, name, description, image_uri, price, currency: String
            let quantity_on_hand, reserved, available: Int64
        }
        let row = Row(
            id: state.id.rawValue, name: state.name, description: state.description, image_uri: state.imageFile,
            price: state.price.decimalString, currency: state.price.currency.code,
            quantity_on_hand: state.onHand, reserved: state.reserved, available: state.available)
        return ProjectionRow(projection: inventory, key: state.id.rawValue, stream: state.id.streamID,
                             version: state.version, json: try json(row))
    }

    public static func row(_ state: ShippingMethodState) throws -> ProjectionRow {
        struct Row: Encodable {
            let id, name, description, price, currency: String
            let transit_days: Int
        }
        let row = Row(
            id: state.id.rawValue, name: state.name, description: state.description, price: state.price.decimalString,
            currency: state.price.currency.code, transit_days: state.transitDays)
        return ProjectionRow(projection: shippingMethods, key: state.id.rawValue, stream: state.id.streamID,
                             version: state.version, json: try json(row))
    }

    static func json(_ value: some Encodable) throws -> String { try LedgerJSON.string(value) }

    /// The read model's rows as a JSON array, in listing order.
    public static func rows(_ projection: String, client: PostgresClient, logger: Logger) async throws -> String {
        let rows = try await client.query(
            """
            SELECT coalesce(json_agg(row ORDER BY created_position, key), '[]')::text
            FROM ledger.projection_rows WHERE projection = \(projection)
            """, logger: logger)
        for try await json in rows.decode(String.self) { return json }
        return "[]"
    }
}

/// Catalog commands: the demo catalog for a new ledger, and the pictures that go with it.
public struct CatalogService: Sendable {
    let writer: LedgerWriter
    let store: EventStore
    let logger: Logger

    public init(writer: LedgerWriter, store: EventStore, logger: Logger) {
        self.writer = writer
        self.store = store
        self.logger = logger
    }

    /// On the first start of an empty ledger, lists the demo catalog (12 products with their
    /// stock, 3 shipping methods) as one atomic append. Returns false when the ledger already has
    /// events, or when another daemon seeded it first (its streams then exist: a version conflict).
    @discardableResult
    public func seedDemoCatalogIfEmpty(now: Date) async throws -> Bool {
        guard try await store.head().position == 0 else { return false }
        let plan = DemoCatalog.seedAppends(context: DecisionContext(now: now))
        do {
            _ = try await writer.append(try AggregateStates().appendRequest(for: plan, now: now, metadata: EventMetadata(
                correlationID: "seed-demo-catalog", actor: "system:seed", command: "SeedDemoCatalog")).request)
            logger.info("demo catalog seeded", metadata: ["products": "\(DemoCatalog.products.count)",
                                                         "shipping_methods": "\(DemoCatalog.shippingMethods.count)"])
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
