import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// What the hot reads cost in the database, as a count: every statement the stores send for a stream read
/// (unbounded, as of a position, as of a time), an aggregate load, the due holds, an idempotency probe and the
/// read models' point reads runs under `EXPLAIN (ANALYZE, BUFFERS)` (``StatementPlans``) on a ledger of 120,000
/// events, and the shared buffers it touched must stay within a small multiple of what it returns and the index
/// look-ups it has to make — a bound that does not grow with the log. A timing would flake on a busy machine; a
/// buffer count does not, and a "behaviour unchanged" edit that makes a read walk the log fails here at once (the
/// stream read that combined the stream index with a bitmap of every position at or below its bound touched
/// about 300 buffers per stream here, whatever it returned).
///
/// The reads are checked on fresh statistics (ANALYZE after the load, every row sampled), and a second test shows
/// the guard failing on the stream reads once their index is gone. Not yet guarded: statistics older than the log
/// (ANALYZE when the ledger held 240 events, then the rest appended) still make the planner read a long stream
/// whole through its version index when the bound is early (3,365 buffers for 83 rows here) — open in the
/// stream-read issue's note.
@Suite(.machine(.shared)) struct StatementCostTests {
    /// Orders 0 ..< 20,000; order k owns positions 6k … 6k+5: its `order-o<k>` stream has 6k+1 and 6k+4, its
    /// `hold-o<k>` stream 6k+2 and 6k+5, and 6k and 6k+3 go to one of 12 product streams (3,333 or 3,334 events each).
    static let orders = 20_000
    static let events = orders * 6
    /// Holds o0 ..< o100 are open and past their expiry at ``now``; o100 ..< o10,000 open, not yet due; the rest closed.
    static let due = 100
    static let open = 10_000
    static let base = "2027-01-01 00:00:00+00"
    static let now = Date(timeIntervalSince1970: 1_798_848_000)  // 2027-01-02T00:00:00Z

    /// The load, as the database owner: events with their stream versions, the head, the read models' rows and
    /// idempotency keys. Autovacuum stays off for these tables, so statistics exist only when the test says.
    static func load(_ db: TestDatabase) async throws {
        try await db.withOwner { client in
            for table in ["events", "projection_rows", "idempotency_keys"] {
                try await client.query("ALTER TABLE ledger.\(unescaped: table) SET (autovacuum_enabled = false)")
            }
            // ANALYZE samples 300 rows per unit of a column's statistics target: at 1,000 it reads all 120,000
            // events, so the statistics — and the plans they choose — are the same on every run (a random sample
            // made the guard flake).
            for column in ["stream_id", "position", "stream_version", "recorded_at"] {
                try await client.query("ALTER TABLE ledger.events ALTER COLUMN \(unescaped: column) SET STATISTICS 1000")
            }
            for (table, column) in [("projection_rows", "key"), ("projection_rows", "projection"), ("idempotency_keys", "key")] {
                try await client.query("ALTER TABLE ledger.\(unescaped: table) ALTER COLUMN \(unescaped: column) SET STATISTICS 1000")
            }
            try await client.query(Self.eventRows(1...events))
            try await client.query(
                """
                UPDATE ledger.head SET position = \(Int64(events)), hash = sha256(int8send(\(Int64(events))::bigint)),
                       recorded_at = timestamptz '\(unescaped: base)' + \(Int64(events)) * interval '1 second'
                """
            )
            try await client.query(
                """
                INSERT INTO ledger.projection_rows (projection, key, version, row, created_position)
                SELECT 'holds', 'o' || k, 2,
                       jsonb_build_object('state', CASE WHEN k < \(Int64(open)) THEN 'open' ELSE 'closed' END,
                                          'expires_at', ledger.read_model_timestamp(
                                              timestamptz '\(unescaped: base)' + CASE WHEN k < \(Int64(due)) THEN interval '1 hour' ELSE interval '30 days' END
                                              + k * interval '1 second'),
                                          'released_on_expiry', jsonb_build_array(jsonb_build_object('product_id', 'p' || k % 12, 'quantity', 1))),
                       6 * k + 2
                FROM generate_series(0, \(Int64(orders - 1))::bigint) k
                UNION ALL
                SELECT 'orders', 'o' || k, 2,
                       jsonb_build_object('status', 'authorized', 'opened_at', ledger.read_model_timestamp(timestamptz '\(unescaped: base)' + 6 * k * interval '1 second'),
                                          'hold', jsonb_build_object('state', 'open', 'expires_at', '2027-02-01T00:00:00.000000Z')),
                       6 * k + 1
                FROM generate_series(0, \(Int64(orders - 1))::bigint) k
                UNION ALL
                SELECT 'inventory', 'p' || p, 1000, jsonb_build_object('reserved', 10, 'available', 100), p
                FROM generate_series(0, 11) p
                """
            )
            try await client.query(
                """
                INSERT INTO ledger.idempotency_keys (key, request_hash, first_position, last_position, result, recorded_at)
                SELECT 'key-' || k, sha256(int8send(k)), 6 * k + 1, 6 * k + 2, '{}', timestamptz '\(unescaped: base)'
                FROM generate_series(0, \(Int64(orders - 1))::bigint) k
                """
            )
        }
    }

    /// Fresh statistics for the tables the hot reads use (every row sampled: see ``load(_:)``).
    static func analyze(_ client: DatabaseClient) async throws {
        for table in ["events", "projection_rows", "idempotency_keys"] {
            try await client.query("ANALYZE ledger.\(unescaped: table)")
        }
    }

    /// The events at `positions`, each stream's versions computed from the layout above.
    static func eventRows(_ positions: ClosedRange<Int>) -> PostgresQuery {
        """
        INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version, data, metadata,
                                   data_text, metadata_text, effective_at, recorded_at, prev_hash, hash)
        SELECT g, s.stream, s.version, md5('guard-' || g)::uuid, s.type, 1,
               s.data::jsonb, '{}'::jsonb, s.data, '{}', s.at, s.at, sha256(int8send(g - 1)), sha256(int8send(g))
        FROM generate_series(\(Int64(positions.lowerBound)), \(Int64(positions.upperBound))) g
        CROSS JOIN LATERAL (
            SELECT timestamptz '\(unescaped: base)' + g * interval '1 second' AS at,
                   CASE g % 3 WHEN 0 THEN 'product-p' || (g / 3) % 12 WHEN 1 THEN 'order-o' || g / 6 ELSE 'hold-o' || g / 6 END AS stream,
                   CASE g % 3 WHEN 0 THEN (g / 3) / 12 + CASE WHEN (g / 3) % 12 = 0 THEN 0 ELSE 1 END
                              ELSE CASE WHEN g % 6 < 3 THEN 1 ELSE 2 END END AS version,
                   CASE g % 3 WHEN 0 THEN 'StockGuarded' WHEN 1 THEN 'OrderGuarded' ELSE 'HoldGuarded' END AS type,
                   '{"order_id": "o' || g / 6 || '"}' AS data
        ) s
        """
    }

    /// A statement's cost as EXPLAIN ANALYZE counted it.
    struct Cost: CustomStringConvertible {
        let sql: String
        let rows: Int
        let buffers: Int
        let nodes: String
        var description: String { "\(buffers) buffers for \(rows) rows: \(nodes)\n\(sql)" }

        init(_ plan: StatementPlans.Plan) throws {
            let top = try #require(
                (try JSONSerialization.jsonObject(with: Data(plan.json.utf8)) as? [[String: Any]])?.first?["Plan"] as? [String: Any]
            )
            sql = plan.sql
            rows = ((top["Actual Rows"] as? Int) ?? 0) * ((top["Actual Loops"] as? Int) ?? 1)
            buffers = ((top["Shared Hit Blocks"] as? Int) ?? 0) + ((top["Shared Read Blocks"] as? Int) ?? 0)
            nodes = Self.outline(top)
        }

        /// The plan's node types, children in brackets: enough to see which indexes a plan used.
        static func outline(_ node: [String: Any]) -> String {
            var text = (node["Node Type"] as? String) ?? "?"
            if let index = node["Index Name"] as? String { text += " on \(index)" }
            if let children = node["Plans"] as? [[String: Any]], !children.isEmpty {
                text += " [" + children.map(outline).joined(separator: ", ") + "]"
            }
            return text
        }
    }

    /// Runs `read` with its statements explained, and expects each to touch at most `perItem` buffers per row
    /// returned and per index look-up it must make (`lookups`), plus `fixed` (a descent of a few indexes). Returns
    /// what the read returned.
    @discardableResult
    func expectBounded<T: Sendable>(
        _ label: String,
        lookups: Int,
        perItem: Int = 5,
        fixed: Int = 40,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ read: @Sendable () async throws -> T
    ) async throws -> T {
        let plans = StatementPlans()
        let value = try await StatementPlans.$recording.withValue(plans) { try await read() }
        let costs = try plans.all.map(Cost.init)
        #expect(!costs.isEmpty, "\(label): no statement was explained", sourceLocation: sourceLocation)
        for cost in costs {
            let bound = perItem * (cost.rows + lookups) + fixed
            #expect(cost.buffers <= bound, "\(label): more than \(bound) buffers — \(cost)", sourceLocation: sourceLocation)
        }
        return value
    }

    @Test func hotReadsTouchBuffersInProportionToWhatTheyReturnNotToTheLog() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.load(db)
        try await db.withOwner { try await Self.analyze($0) }
        try await checkEveryRead(db, phase: "after ANALYZE")
    }

    /// The guard catches the regression it was written for: without `events_by_stream_position` (sql/0020) the
    /// stream reads go back to the plans that walk far more of the log than they return, and the buffer bound fails.
    @Test func withoutTheStreamPositionIndexTheStreamReadsExceedTheirBound() async throws {
        try await expectBoundFails(without: "events_by_stream_position", "the stream reads without their index touch more buffers than their bound") {
            db in try await checkEveryRead(db, phase: "without the stream-position index")
        }
    }

    /// The guard catches the order list's regression: without `projection_rows_orders_by_created_position`
    /// (sql/0026) a page of `GET /orders` reads every order's row, applies the lapse to each and sorts them all (in a
    /// day run at the machine's maximum, 5.2 s a page at 88,000 orders and growing).
    @Test func withoutTheOrdersIndexAPageOfTheOrderListExceedsItsBound() async throws {
        try await expectBoundFails(
            without: "projection_rows_orders_by_created_position",
            "a page of the order list without its index reads every order"
        ) {
            db in try await db.withApp { try await checkOrderList($0, phase: "without the orders' index") }
        }
    }

    /// On the loaded ledger without `index` (fresh statistics), `check` must exceed a buffer bound: a known issue.
    func expectBoundFails(
        without index: String,
        _ comment: Comment,
        _ check: (TestDatabase) async throws -> Void
    ) async throws {
        let db = try await TestDatabase.fresh()
        try await Self.load(db)
        try await db.withOwner { client in
            try await client.query("DROP INDEX ledger.\(unescaped: index)")
            try await Self.analyze(client)
        }
        try await withKnownIssue(comment) {
            try await check(db)
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("buffers for") }
        }
    }

    /// `GET /orders`' unfiltered pages (ProjectionOrderReader.orders), the back office's and the console's: the first
    /// and one from a cursor deep in the list, each one ordered range of the orders' index, 50 rows long. (A page
    /// filtered by status or by instant is not guarded: it reads from the cursor until it has its rows, and the
    /// planner may sort every order for it — docs/performance.md.)
    func checkOrderList(_ client: DatabaseClient, phase: String) async throws {
        let orders = ProjectionOrderReader(client: client, clock: { Self.now }, logger: TestCluster.logger)
        let first = try await expectBounded("\(phase): the first page of the order list", lookups: 1) {
            try await orders.orders(OrderQuery(status: nil, from: nil, to: nil, limit: 50, cursor: 0))
        }
        #expect(first.ordersJSON.count == 50 && first.nextCursor == 6 * 49 + 1)
        let deep = try await expectBounded("\(phase): a page of the order list from a cursor", lookups: 1) {
            try await orders.orders(OrderQuery(status: nil, from: nil, to: nil, limit: 50, cursor: 6 * 15_000 + 1))
        }
        #expect(deep.ordersJSON.count == 50 && deep.nextCursor == 6 * 15_050 + 1)
    }

    func checkEveryRead(_ db: TestDatabase, phase: String) async throws {
        try await db.withApp { client in
            let logger = TestCluster.logger
            let store = EventStore(client: client, logger: logger)
            let holdStreams = (0..<250).flatMap { [stream("order-o\($0)"), stream("hold-o\($0)")] }

            // Stream reads: the loader's and the sweeper's (unbounded), as of a position, as of a time.
            let all = try await expectBounded("\(phase): 500 streams, unbounded", lookups: 500) {
                try await store.readStreams(holdStreams)
            }
            #expect(all.count == 1_000)
            let one = try await expectBounded("\(phase): an order as of its first event", lookups: 2) {
                try await store.readStreams([stream("order-o500"), stream("hold-o500")], through: 3_001)
            }
            #expect(one.map(\.position) == [3_001])
            let early = try await expectBounded("\(phase): a long product stream as of an early position", lookups: 1) {
                try await store.readStreams([stream("product-p0")], through: 3_000)
            }
            #expect(early.count == 83 && early.allSatisfy { $0.position <= 3_000 && $0.streamID.rawValue == "product-p0" })
            let instant = Int64(1_798_761_600 + 60_000) * 1_000_000  // base + 60,000 s: position 60,000
            let position = try await expectBounded("\(phase): the position of a time", lookups: 40) {
                try await store.position(atMicros: instant)
            }
            #expect(position == 60_000)
            let asOfTime = try await expectBounded("\(phase): an order as of a time", lookups: 2) {
                try await store.readStreams([stream("order-o9999"), stream("hold-o9999")], through: position)
            }
            #expect(asOfTime.map(\.position) == [59_995, 59_996, 59_998, 59_999])
            try await expectBounded("\(phase): a whole stream", lookups: 1) { try await store.readStream(stream("hold-o77")) }
            try await expectBounded("\(phase): a stream's tail", lookups: 1) { try await store.readStream(stream("product-p3"), after: 3_300) }
            try await expectBounded("\(phase): the event at a position", lookups: 1) { try await store.event(at: 77_777) }
            let history = try await expectBounded("\(phase): an order's history", lookups: 6) { try await store.orderHistory("o600") }
            #expect(history.count == 6)

            // The expiry sweeper's pages, an idempotency probe, the read models' point reads.
            let holds = ProjectionHoldReader(client: client, logger: logger)
            let first = try await expectBounded("\(phase): the first page of due holds", lookups: 1) {
                try await holds.dueHolds(now: Self.now, limit: 60)
            }
            #expect(first.ids.count == 60)
            let second = try await expectBounded("\(phase): the next page of due holds", lookups: 1) {
                try await holds.dueHolds(now: Self.now, limit: 60, after: first.next)
            }
            #expect(second.ids.count == Self.due - 60)
            try await expectBounded("\(phase): one hold's row", lookups: 1) { try await holds.holdJSON(id: OrderID("o4242")!) }
            let keys = IdempotencyStore(client: client, logger: logger)
            let hash = try await expectBounded("\(phase): an idempotency probe", lookups: 1) { try await keys.requestHash(forKey: "key-4242") }
            #expect(hash != nil)
            let none = try await expectBounded("\(phase): an idempotency probe of a new key", lookups: 1) {
                try await keys.requestHash(forKey: "key-new")
            }
            #expect(none == nil)
            let orders = ProjectionOrderReader(client: client, clock: { Self.now }, logger: logger)
            let order = try await expectBounded("\(phase): one order's row", lookups: 1) { try await orders.orderJSON(id: "o4242") }
            #expect(order != nil)
            try await checkOrderList(client, phase: phase)
            let storefront = ProjectionStorefrontReader(client: client, clock: { Self.now }, logger: logger)
            // The inventory's lapse sums the releases of every due hold: a look-up each.
            try await expectBounded("\(phase): the inventory", lookups: 12 + Self.due) { try await storefront.inventoryJSON() }
            try await expectBounded("\(phase): one product", lookups: 1 + Self.due) { try await storefront.productJSON(id: "p7") }
        }
    }
}
