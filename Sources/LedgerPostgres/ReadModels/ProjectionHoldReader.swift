import Foundation
import LedgerCore
import LedgerEngine
import Logging
import PostgresNIO

/// The `holds` read model's queries: `GET /authorizations` (oldest first), one hold's row, and the
/// holds the expiry sweeper has to look at.
public struct ProjectionHoldReader: PostgresStore, DueHolds {
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

    /// Where a page of due holds ends: its last hold's expiry (read-model text) and key.
    package typealias DueCursor = DueHoldCursor

    /// Orders whose hold has lapsed at `now` (`ledger.hold_lapsed`, sql/0010), soonest first (the `holds` read model's index),
    /// after `cursor` when given: the expiry sweeper's work, a keyset page at a time. A sweep pages on from where the last
    /// page ended, so the index entries of the holds it already closed (dead until vacuumed) are not walked again for
    /// every page; returns the page and the cursor after it.
    package func dueHolds(now: Date, limit: Int, after cursor: DueCursor? = nil) async throws -> (ids: [OrderID], next: DueCursor?) {
        // The row comparison is an index condition (the index is on exactly that pair), so a page starts where the
        // cursor points instead of filtering its way there; the first page starts before every row.
        let after = cursor ?? DueCursor(expiresAt: "", key: "")
        let rows = try await client.query(
            """
            SELECT key, row ->> 'expires_at' FROM ledger.projection_rows
            WHERE projection = \(HoldReadModel.projection) AND ledger.hold_lapsed(row, \(OrderReadModel.timestamp(now)))
              AND (row ->> 'expires_at', key) > (\(after.expiresAt), \(after.key))
            ORDER BY row ->> 'expires_at', key LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var ids: [OrderID] = []
        var next = cursor
        for try await (key, expiresAt) in rows.decode((String, String).self) {
            if let id = OrderID(key) { ids.append(id) }
            next = DueCursor(expiresAt: expiresAt, key: key)
        }
        return (ids, next)
    }
}
