import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import Logging
import PostgresNIO

/// Rebuilds the read models (`ledger.projection_rows`) by replaying the whole log through the same
/// functions the inline writes use (aggregate state → row), so a rebuild and the live tables cannot
/// disagree. The swap is one transaction that holds the head lock: no append interleaves, and
/// readers see the old rows until the new ones are committed.
public struct ProjectionRebuilder: Sendable {
    /// One read-model row as a replay computes it.
    @MemberwiseInit
    public struct Row: Sendable, Hashable {
        public let projection: String
        public let key: String
        public let version: Int64
        public let json: String
        public let createdPosition: Int64
    }

    /// The rows a replay of `events` (in position order) produces. Events of types the domain does
    /// not know (e.g. from tests or benchmarks) have no read model and are skipped.
    public static func replay(_ events: [RecordedEvent]) throws -> [Row] {
        var states = AggregateStates()
        var created: [String: Int64] = [:]
        let known = Set(DomainEvent.knownTypes.map(\.type))
        for recorded in events where known.contains(recorded.type) {
            let event = try DomainEvent.decode(recorded)
            states.apply(event)
            switch event {
            case .product(let e):
                created[CatalogReadModel.inventory + "/" + e.productID.rawValue] =
                    created[CatalogReadModel.inventory + "/" + e.productID.rawValue] ?? recorded.position
            case .shippingMethod(let e):
                created[CatalogReadModel.shippingMethods + "/" + e.shippingMethodID.rawValue] =
                    created[CatalogReadModel.shippingMethods + "/" + e.shippingMethodID.rawValue] ?? recorded.position
            case .order(let e):
                created[OrderReadModel.projection + "/" + e.orderID.rawValue] =
                    created[OrderReadModel.projection + "/" + e.orderID.rawValue] ?? recorded.position
            case .hold(let e):
                created[HoldReadModel.projection + "/" + e.orderID.rawValue] =
                    created[HoldReadModel.projection + "/" + e.orderID.rawValue] ?? recorded.position
            }
        }
        var rows: [ProjectionRow] = []
        for state in states.products.values { rows.append(try CatalogReadModel.row(state)) }
        for state in states.shippingMethods.values { rows.append(try CatalogReadModel.row(state)) }
        for (id, state) in states.orders { rows.append(try OrderReadModel.row(state, hold: states.holds[id])) }
        for (id, hold) in states.holds {
            if let order = states.orders[id] { rows.append(try HoldReadModel.row(hold, order: order)) }
        }
        return rows.map { row in
            Row(
                projection: row.projection,
                key: row.key,
                version: row.version,
                json: row.json,
                createdPosition: created[row.projection + "/" + row.key] ?? 0
            )
        }.sorted { ($0.projection, $0.createdPosition, $0.key) < ($1.projection, $1.createdPosition, $1.key) }
    }

    /// Replays the log and swaps the read models; returns the number of rows written. Run as the
    /// schema owner (the application role may not delete read-model rows).
    @discardableResult
    public static func rebuild(client: DatabaseClient, logger: Logger) async throws -> Int {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT position FROM ledger.head WHERE singleton FOR UPDATE", logger: logger)
            var events: [RecordedEvent] = []
            var next: Int64 = 1
            while true {
                let page = try await EventStore.read(connection: connection, from: next, limit: 10_000, logger: logger)
                guard let last = page.last else { break }
                events += page
                next = last.position + 1
            }
            let rows = try replay(events)
            try await connection.query("SELECT ledger.rebuild_settlement_items()", logger: logger)
            try await connection.query("DELETE FROM ledger.projection_rows", logger: logger)
            if !rows.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO ledger.projection_rows (projection, key, version, row, created_position)
                    SELECT p, k, v, r::jsonb, c FROM unnest(\(rows.map(\.projection))::text[], \(rows.map(\.key))::text[],
                        \(rows.map(\.version))::bigint[], \(rows.map(\.json))::text[], \(rows.map(\.createdPosition))::bigint[])
                        AS u(p, k, v, r, c)
                    """,
                    logger: logger
                )
            }
            return rows.count
        }
    }
}
