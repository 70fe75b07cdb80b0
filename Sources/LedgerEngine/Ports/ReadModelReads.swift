import LedgerCore

/// The orders recovery looks at (issue 56, a read port): still waiting for their payment's answer, oldest first. On
/// PostgreSQL, LedgerPostgres' `ProjectionOrderReader` (the `orders` read model, today's SQL).
package protocol WaitingOrders: Sendable {
    /// At most `limit` orders pending payment or whose payment is unknown, as recorded (no lapse), oldest first.
    func waitingOrders(limit: Int) async throws -> [OrderID]
}

/// The catalog's names (issue 56, a read port): the key of a product or shipping method by its name. On PostgreSQL,
/// LedgerPostgres' `ProjectionStorefrontReader` (the catalog read models, today's SQL).
package protocol CatalogNames: Sendable {
    /// The key of the read-model row of `projection` whose `field` equals `value` (nil: none).
    func key(in projection: String, where field: String, equals value: String) async throws -> String?
}
