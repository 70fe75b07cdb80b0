import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The lapse in SQL (sql/0010), on read-model rows written here: `ledger.order_rows_at` and
/// `ledger.inventory_rows_at` show a hold past its expiry as the sweeper will record it, from the
/// expiry instant itself (not a microsecond before), and change nothing else. That the rows agree
/// with the Swift fold for the as-of reads is checked end to end in LedgerAppTests (AsOfTests).
@Suite(.machine(.shared)) struct HoldLapseSQLTests {
    static let expiry = "2030-06-26T10:00:00.000000Z"
    static var expiryMicros: Int64 { RFC3339.micros(expiry)! }

    func insert(_ client: DatabaseClient, _ projection: String, _ key: String, _ row: String, position: Int64) async throws {
        try await client.query(
            """
            INSERT INTO ledger.projection_rows (projection, key, version, row, created_position)
            VALUES (\(projection), \(key), 1, \(row)::jsonb, \(position))
            """
        )
    }

    /// The function's rows at `micros` (key → row as JSON), in the function's order.
    func rows(_ client: DatabaseClient, _ function: String, at micros: Int64) async throws -> [(String, [String: JSONValue])] {
        let query: PostgresQuery = """
            SELECT key, row::text FROM \(unescaped: function)(timestamptz 'epoch' + \(micros) * interval '1 microsecond')
            ORDER BY created_position
            """
        var result: [(String, [String: JSONValue])] = []
        for try await (key, json) in try await client.query(query).decode((String, String).self) {
            result.append((key, try JSONDecoder().decode([String: JSONValue].self, from: Data(json.utf8))))
        }
        return result
    }

    func order(_ status: String, hold: String?, expiresAt: String = expiry) -> String {
        let hold = hold.map { #", "hold": {"state": "\#($0)", "expires_at": "\#(expiresAt)", "open": "59.00"}"# } ?? ""
        return #"{"id": "x", "status": "\#(status)", "total": "59.00", "payment": {"captured": "20.00"}\#(hold)}"#
    }

    @Test func ordersWithAnOpenHoldPastItsExpiryReadAsExpiredOrCaptured() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withOwner { client in
            let rows: [(String, String)] = [
                ("authorized", order("authorized", hold: "open")),
                ("partlyCaptured", order("partially_captured", hold: "open")),
                // Money still open after a refund: reads show it as recorded until the sweeper records it.
                ("partlyRefunded", order("partially_refunded", hold: "open")),
                ("closedHold", order("authorized", hold: "closed")),
                ("laterExpiry", order("authorized", hold: "open", expiresAt: "2030-06-26T10:00:00.000001Z")),
                ("declined", order("declined", hold: nil)),
            ]
            for (n, (key, row)) in rows.enumerated() { try await insert(client, "orders", key, row, position: Int64(n + 1)) }
            try await insert(client, "inventory", "authorized", #"{"reserved": 1, "available": 1}"#, position: 99)

            let recorded = Dictionary(
                uniqueKeysWithValues: try rows.map {
                    ($0.0, try JSONDecoder().decode([String: JSONValue].self, from: Data($0.1.utf8)))
                }
            )
            // A microsecond before the expiry every row is as recorded; other projections never show.
            let before = try await self.rows(client, "ledger.order_rows_at", at: Self.expiryMicros - 1)
            #expect(before.map(\.0) == rows.map(\.0))
            for (key, row) in before { #expect(row == recorded[key], "\(key)") }

            for micros in [Self.expiryMicros, Self.expiryMicros + 1, Self.expiryMicros + 86_400_000_000] {
                let after = Dictionary(uniqueKeysWithValues: try await self.rows(client, "ledger.order_rows_at", at: micros))
                func lapsed(_ key: String, _ status: String) -> [String: JSONValue] {
                    var row = recorded[key]!
                    row["status"] = .string(status)
                    if case .object(var hold) = row["hold"] {
                        hold["state"] = .string("closed")
                        row["hold"] = .object(hold)
                    }
                    return row
                }
                #expect(after["authorized"] == lapsed("authorized", "expired"))
                #expect(after["partlyCaptured"] == lapsed("partlyCaptured", "captured"))
                for key in ["partlyRefunded", "closedHold", "declined"] { #expect(after[key] == recorded[key], "\(key)") }
                #expect(after["laterExpiry"] == (micros > Self.expiryMicros ? lapsed("laterExpiry", "expired") : recorded["laterExpiry"]))
            }
        }
    }

    @Test func anOpenHoldPastItsExpiryReturnsTheStockItsExpiryWouldRelease() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withOwner { client in
            try await insert(client, "inventory", "clock", #"{"id": "clock", "on_hand": 10, "reserved": 6, "available": 4}"#, position: 1)
            try await insert(client, "inventory", "pen", #"{"id": "pen", "on_hand": 1, "reserved": 1, "available": 0}"#, position: 2)
            try await insert(client, "inventory", "lamp", #"{"id": "lamp", "on_hand": 3, "reserved": 1, "available": 2}"#, position: 3)
            func hold(_ state: String, _ expiresAt: String, _ lines: [(String, Int)]) -> String {
                let released = lines.map { #"{"product_id": "\#($0.0)", "quantity": \#($0.1)}"# }.joined(separator: ", ")
                return #"{"state": "\#(state)", "expires_at": "\#(expiresAt)", "released_on_expiry": [\#(released)]}"#
            }
            try await insert(client, "holds", "h1", hold("open", Self.expiry, [("clock", 2), ("pen", 1)]), position: 4)
            try await insert(client, "holds", "h2", hold("open", "2030-06-26T11:00:00.000000Z", [("clock", 3)]), position: 5)
            // Closed (the sweeper or a capture recorded it) or releasing nothing (e.g. shipped): no change.
            try await insert(client, "holds", "h3", hold("closed", "2030-06-01T00:00:00.000000Z", [("clock", 1), ("lamp", 1)]), position: 6)
            try await insert(client, "holds", "h4", hold("open", "2030-06-01T00:00:00.000000Z", []), position: 7)

            func figures(_ micros: Int64) async throws -> [String: [Int64]] {
                var result: [String: [Int64]] = [:]
                for (key, row) in try await rows(client, "ledger.inventory_rows_at", at: micros) {
                    guard case .int(let reserved) = row["reserved"], case .int(let available) = row["available"],
                        case .int(let onHand) = row["on_hand"]
                    else {
                        Issue.record("\(key): \(row)")
                        continue
                    }
                    result[key] = [onHand, reserved, available]
                }
                return result
            }
            #expect(try await rows(client, "ledger.inventory_rows_at", at: 0).map(\.0) == ["clock", "pen", "lamp"])
            let recorded: [String: [Int64]] = ["clock": [10, 6, 4], "pen": [1, 1, 0], "lamp": [3, 1, 2]]
            #expect(try await figures(Self.expiryMicros - 1) == recorded)
            #expect(try await figures(Self.expiryMicros) == ["clock": [10, 4, 6], "pen": [1, 0, 1], "lamp": [3, 1, 2]])
            #expect(try await figures(RFC3339.micros("2030-06-26T11:00:00Z")!) == ["clock": [10, 1, 9], "pen": [1, 0, 1], "lamp": [3, 1, 2]])
        }
    }

    @Test func theTimeFormatIsTheReadModelsOwn() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            // Text order is time order only if SQL and Swift (RFC3339.format) write instants alike.
            for micros: Int64 in [0, 1, 999_999, 1_000_000, Self.expiryMicros, Self.expiryMicros - 1, 4_102_444_799_999_999] {
                let sql = try await column(
                    client,
                    """
                    SELECT ledger.read_model_timestamp(timestamptz 'epoch' + \(micros) * interval '1 microsecond')
                    """,
                    as: String.self
                )
                #expect(sql == [RFC3339.format(micros)], "\(micros)")
            }
        }
    }
}
