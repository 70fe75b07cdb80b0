import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import Logging
import PostgresNIO

/// The catalog read models' queries (`inventory` and `shipping_methods` in `ledger.projection_rows`):
/// the storefront's reads, and the look-up of a product or shipping method by its name. A hold past
/// its expiry that the sweeper has not recorded yet no longer reserves stock: its reservation counts
/// as available.
public struct ProjectionStorefrontReader: Sendable, CatalogNames {
    let client: DatabaseClient
    let clock: @Sendable () -> Date
    let logger: Logger
    public init(client: DatabaseClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.clock = clock
        self.logger = logger
    }
    public func inventoryJSON() async throws -> String {
        let rows = try await client.query(inventoryQuery(key: nil), logger: logger)
        for try await json in rows.decode(String.self) { return json }
        return "[]"
    }

    /// One product's inventory row (`GET /products/{id}`), or nil.
    public func productJSON(id: String) async throws -> String? {
        let rows = try await client.query(inventoryQuery(key: id), logger: logger)
        for try await json in rows.decode(String.self) where json != "[]" { return String(json.dropFirst().dropLast()) }
        return nil
    }

    /// The inventory rows (all, or the one with `key`) as a JSON array, lapsed holds' units available
    /// (`ledger.inventory_rows_at`, sql/0010, at the reader's clock).
    private func inventoryQuery(key: String?) -> PostgresQuery {
        """
        SELECT coalesce(json_agg(p.row ORDER BY p.created_position, p.key), '[]')::text
        FROM ledger.inventory_rows_at(timestamptz 'epoch' + \(clock().epochMicroseconds) * interval '1 microsecond') p
        WHERE \(key)::text IS NULL OR p.key = \(key)::text
        """
    }
    public func shippingMethodsJSON() async throws -> String {
        try await rowsJSON(CatalogReadModel.shippingMethods)
    }

    /// The read model's rows as a JSON array, in listing order.
    func rowsJSON(_ projection: String) async throws -> String {
        let rows = try await client.query(
            """
            SELECT coalesce(json_agg(row ORDER BY created_position, key), '[]')::text
            FROM ledger.projection_rows WHERE projection = \(projection)
            """,
            logger: logger
        )
        for try await json in rows.decode(String.self) { return json }
        return "[]"
    }

    /// The key of the read-model row whose `field` equals `value` (e.g. a product by its name).
    package func key(in projection: String, where field: String, equals value: String) async throws -> String? {
        let rows = try await client.query(
            """
            SELECT key FROM ledger.projection_rows
            WHERE projection = \(projection) AND row ->> \(field) = \(value) ORDER BY created_position LIMIT 1
            """,
            logger: logger
        )
        for try await key in rows.decode(String.self) { return key }
        return nil
    }
}
