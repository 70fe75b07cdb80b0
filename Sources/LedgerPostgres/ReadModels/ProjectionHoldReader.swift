import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The `holds` read model's queries: `GET /authorizations` (oldest first), one hold's row, and the
/// holds the expiry sweeper has to look at.
public struct ProjectionHoldReader: PostgresStore {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    public func holds(_ query: HoldQuery) async throws -> OrderPage {
        let before = query.expiringBefore.map(OrderReadModel.timestamp) ?? "9999"
        let rows = try await client.query(
            """
            SELECT row::text, created_position FROM ledger.projection_rows
            WHERE projection = \(HoldReadModel.projection) AND created_position > \(query.cursor)
              AND (\(query.state)::text IS NULL OR row ->> 'state' = \(query.state)::text)
              AND row ->> 'expires_at' < \(before)
            ORDER BY created_position LIMIT \(Int64(query.limit))
            """,
            logger: logger
        )
        var holds: [String] = []
        var last: Int64 = 0
        for try await (json, position) in rows.decode((String, Int64).self) {
            holds.append(json)
            last = position
        }
        return OrderPage(ordersJSON: holds, nextCursor: holds.count == query.limit ? last : nil)
    }

    /// One hold's row as recorded (no lapse applied, as `GET /authorizations` shows holds), or nil.
    package func holdJSON(id: OrderID) async throws -> String? {
        let rows = try await client.query(
            "SELECT row::text FROM ledger.projection_rows WHERE projection = \(HoldReadModel.projection) AND key = \(id.rawValue)",
            logger: logger
        )
        for try await json in rows.decode(String.self) { return json }
        return nil
    }

    /// Orders whose hold has lapsed at `now` (`ledger.hold_lapsed`, sql/0010), soonest first (the `holds` read model's index):
    /// the expiry sweeper's work.
    package func dueHolds(now: Date, limit: Int) async throws -> [OrderID] {
        let rows = try await client.query(
            """
            SELECT key FROM ledger.projection_rows
            WHERE projection = \(HoldReadModel.projection) AND ledger.hold_lapsed(row, \(OrderReadModel.timestamp(now)))
            ORDER BY row ->> 'expires_at', key LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var ids: [OrderID] = []
        for try await key in rows.decode(String.self) { if let id = OrderID(key) { ids.append(id) } }
        return ids
    }
}
