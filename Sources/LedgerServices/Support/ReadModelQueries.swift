import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import PostgresNIO

/// The catalog endpoints' reads, from `ledger.projection_rows`. A hold past its expiry that the
/// sweeper has not recorded yet no longer reserves stock: its reservation counts as available.
public struct ProjectionStorefrontReader: Sendable {
    let client: PostgresClient
    let clock: @Sendable () -> Date
    let logger: Logger
    public init(client: PostgresClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
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
        try await CatalogReadModel.rows(CatalogReadModel.shippingMethods, client: client, logger: logger)
    }
}

/// The order endpoints' reads, from the `orders` read model. `opened_at` is stored as RFC 3339
/// UTC with microseconds (fixed width), so time filters compare it as text. An order whose open
/// hold passed its expiry reads as the sweeper will record it (expired, or captured when part was).
public struct ProjectionOrderReader: Sendable {
    let client: PostgresClient
    let clock: @Sendable () -> Date
    let logger: Logger
    public init(client: PostgresClient, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.client = client
        self.clock = clock
        self.logger = logger
    }

    /// The rows with the lapse applied at the reader's clock (`ledger.order_rows_at`, sql/0010), as a
    /// FROM item to alias `o` (`o.row`, `o.created_position`, `o.key`).
    func lapsed() -> PostgresQuery {
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
}

/// `GET /authorizations`, from the `holds` read model, oldest first.
public struct ProjectionHoldReader: Sendable {
    let client: PostgresClient
    let logger: Logger
    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func holds(_ query: HoldQuery) async throws -> OrderPage {
        let before = query.expiringBefore.map(OrderReadModel.timestamp) ?? "9999"
        let rows = try await client.query(
            """
            SELECT row::text, created_position FROM ledger.projection_rows
            WHERE projection = \(HoldReadModel.projection) AND created_position > \(query.cursor)
              AND (\(query.state)::text IS NULL OR row ->> 'state' = \(query.state)::text)
              AND row ->> 'expires_at' < \(before)
            ORDER BY created_position LIMIT \(Int64(query.limit))
            """, logger: logger)
        var holds: [String] = []
        var last: Int64 = 0
        for try await (json, position) in rows.decode((String, Int64).self) {
            holds.append(json)
            last = position
        }
        return OrderPage(ordersJSON: holds, nextCursor: holds.count == query.limit ? last : nil)
    }
}

/// The history endpoints' reads, served by the event store and the Swift chain verifier.
public struct EventStoreReader: Sendable {
    let store: EventStore
    let verifier: ChainVerifier
    public init(store: EventStore, verifier: ChainVerifier) {
        self.store = store
        self.verifier = verifier
    }
    public func events(stream: StreamID) async throws -> [RecordedEvent] { try await store.readStream(stream) }
    public func events(after position: Int64, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent] {
        try await store.events(after: position, matching: filter, limit: limit)
    }
    public func orderHistory(_ orderID: String) async throws -> [RecordedEvent] { try await store.orderHistory(orderID) }
    public func verifyChain(from: Int64, to: Int64?) async throws -> ChainReport { try await verifier.verify(from: from, to: to) }
}

public struct EventStoreHealthProbe: Sendable {
    let store: EventStore
    public init(store: EventStore) { self.store = store }
    public func lastPosition() async throws -> Int64 { try await store.head().position }
}


/// A page of orders from the orders read model.
public struct OrderPage: Sendable {
    public let ordersJSON: [String]
    public let nextCursor: Int64?

    public init(ordersJSON: [String], nextCursor: Int64?) {
        self.ordersJSON = ordersJSON
        self.nextCursor = nextCursor
    }
}

/// A filter on the order list.
public struct OrderQuery: Sendable, Hashable {
    public var status: String?
    /// Orders opened at or after this instant (RFC 3339).
    public var from: Date?
    /// Orders opened before this instant.
    public var to: Date?
    public var limit: Int
    /// Continue after this cursor (from the previous page's `next_cursor`).
    public var cursor: Int64

    public init(status: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int, cursor: Int64) {
        self.status = status
        self.from = from
        self.to = to
        self.limit = limit
        self.cursor = cursor
    }
}

/// A filter on the open-holds list.
public struct HoldQuery: Sendable, Hashable {
    /// `open` or `closed`; nil for both.
    public var state: String?
    /// Holds whose expiry is before this instant.
    public var expiringBefore: Date?
    public var limit: Int
    public var cursor: Int64

    public init(state: String? = nil, expiringBefore: Date? = nil, limit: Int, cursor: Int64) {
        self.state = state
        self.expiringBefore = expiringBefore
        self.limit = limit
        self.cursor = cursor
    }
}

