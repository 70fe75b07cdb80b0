import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import Logging
import PostgresNIO

/// The `orders` read model's queries: the order endpoints' reads and recovery's waiting orders. `opened_at` is stored as RFC 3339
/// UTC with microseconds (fixed width), so time filters compare it as text. An order whose open
/// hold passed its expiry reads as the sweeper will record it (expired, or captured when part was).
public struct ProjectionOrderReader: Sendable, WaitingOrders {
    let client: DatabaseClient
    let clock: @Sendable () -> Date
    let logger: Logger
    public init(client: DatabaseClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.clock = clock
        self.logger = logger
    }

    /// The rows with the lapse applied at the reader's clock (`ledger.order_rows_at`, sql/0010), as a
    /// FROM item to alias `o` (`o.row`, `o.created_position`, `o.key`).
    package func lapsed() -> PostgresQuery {
        "ledger.order_rows_at(timestamptz 'epoch' + \(clock().epochMicroseconds) * interval '1 microsecond')"
    }

    public func orderJSON(id: String) async throws -> String? {
        var query = lapsed()
        query.sql = "SELECT o.row::text FROM \(query.sql) o WHERE o.key = $\(query.binds.count + 1)"
        query.binds.append(id)
        let rows = try await client.query(query, logger: logger)
        for try await json in rows.decode(String.self) { return json }
        return nil
    }

    public func orders(_ query: OrderQuery) async throws -> OrderPage {
        let from = query.from.map(OrderReadModel.timestamp) ?? ""
        let to = query.to.map(OrderReadModel.timestamp) ?? "9999"
        var sql = lapsed()
        let n = sql.binds.count
        sql.sql = """
            SELECT row::text, created_position FROM \(sql.sql) o
            WHERE created_position > $\(n + 1)
              AND ($\(n + 2)::text IS NULL OR row ->> 'status' = $\(n + 2)::text)
              AND row ->> 'opened_at' >= $\(n + 3) AND row ->> 'opened_at' < $\(n + 4)
            ORDER BY created_position LIMIT $\(n + 5)
            """
        sql.binds.append(query.cursor)
        sql.binds.append(query.status)
        sql.binds.append(from)
        sql.binds.append(to)
        sql.binds.append(Int64(query.limit))
        let rows = try await client.query(sql, logger: logger)
        var orders: [String] = []
        var last: Int64 = 0
        for try await (json, position) in rows.decode((String, Int64).self) {
            orders.append(json)
            last = position
        }
        return OrderPage(ordersJSON: orders, nextCursor: orders.count == query.limit ? last : nil)
    }

    /// The orders whose row carries the acquirer's reference `pspReference` (the order's own, of its last attempt,
    /// or its hold's), oldest first, at most `limit`. A scan of the orders' rows, without an index (none is kept on
    /// the hot path for a back-office search; measured in docs/performance.md).
    public func orderIDs(pspReference: String, limit: Int) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT key FROM ledger.projection_rows
            WHERE projection = \(OrderReadModel.projection)
              AND (row ->> 'psp_reference' = \(pspReference) OR row -> 'hold' ->> 'psp_reference' = \(pspReference))
            ORDER BY created_position LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var ids: [String] = []
        for try await key in rows.decode(String.self) { ids.append(key) }
        return ids
    }

    /// Orders still waiting for payment, oldest first (recovery's candidates; as recorded, no lapse).
    package func waitingOrders(limit: Int) async throws -> [OrderID] {
        let rows = try await client.query(
            """
            SELECT key FROM ledger.projection_rows
            WHERE projection = \(OrderReadModel.projection) AND row ->> 'status' IN ('pending_payment', 'payment_unknown')
            ORDER BY created_position LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var ids: [OrderID] = []
        for try await key in rows.decode(String.self) { if let id = OrderID(key) { ids.append(id) } }
        return ids
    }
}
