import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

/// Back-office order reads, and the read models against a replay of the log.
@Suite(.machine(.shared)) struct OrderReadsTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    func auditor() -> HTTPFields { [.authorization: "Bearer \(TestApp.auditorKey)"] }

    struct Page: Decodable {
        struct Order: Decodable {
            let id, status, total: String
            let hold: Hold?
            struct Hold: Decodable { let psp_reference, open: String }
        }
        let orders: [Order]
        let next_cursor: String?
    }

    /// Three approved, one declined, one unknown outcome (cancelled), on a fresh ledger.
    func placeMixedOrders(_ client: any TestClientProtocol) async throws -> [String] {
        var ids: [String] = []
        for token in ["tok_visa", "tok_mastercard", "tok_chargeDeclined", "tok_visa_debit", "tok_chargeDeclinedProcessingError"] {
            let (_, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(source: token))
            ids.append(try JSONDecoder().decode(PaymentReply.self, from: Data(text.utf8)).orderId)
        }
        return ids
    }

    @Test func anOrderShowsItsStatusAmountsHoldAndHistoryLinks() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            let ids = try await placeMixedOrders(client)
            try await client.execute(uri: "/orders/\(ids[0])", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/orders/\(ids[0])", method: .get, headers: auditor()) { response in
                #expect(response.status == .ok)
                let body = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as! [String: Any]
                let order = body["order"] as! [String: Any]
                #expect(order["status"] as? String == "authorized")
                #expect(order["total"] as? String == "59.00" && order["tax"] as? String == "4.00" && order["shipping"] as? String == "5.00")
                #expect((order["hold"] as? [String: Any])?["open"] as? String == "59.00")
                #expect((order["lines"] as? [[String: Any]])?.first?["product_id"] as? String == "clock")
                #expect((body["links"] as? [String: Any])?["history"] as? String == "/streams/order-\(ids[0])/events")
            }
            try await client.execute(uri: "/orders/\(ids[2])", method: .get, headers: auditor()) { response in
                let order = (try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as! [String: Any])["order"] as! [String: Any]
                #expect(order["status"] as? String == "declined" && order["decline_code"] as? String == "05")
            }
            try await client.execute(uri: "/orders/nope", method: .get, headers: auditor()) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func theOrderListFiltersAndPages() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            let ids = try await placeMixedOrders(client)
            func page(_ query: String) async throws -> Page {
                try await client.execute(uri: "/orders?\(query)", method: .get, headers: auditor()) { response in
                    #expect(response.status == .ok, "\(query): \(String(buffer: response.body))")
                    return try JSONDecoder().decode(Page.self, from: Data(buffer: response.body))
                }
            }
            #expect(try await page("status=authorized").orders.map(\.id) == [ids[0], ids[1], ids[3]])
            #expect(try await page("status=declined").orders.map(\.id) == [ids[2]])
            #expect(try await page("status=cancelled").orders.map(\.id) == [ids[4]])
            // Paging with a cursor returns every order once, in order.
            var seen: [String] = []
            var cursor = "0"
            while true {
                let next = try await page("limit=2&cursor=\(cursor)")
                seen += next.orders.map(\.id)
                guard let nextCursor = next.next_cursor else { break }
                cursor = nextCursor
            }
            #expect(seen == ids)
            #expect(try await page("from=2999-01-01T00:00:00Z").orders.isEmpty)
            #expect(try await page("to=2000-01-01T00:00:00Z").orders.isEmpty)
            try await client.execute(uri: "/orders?status=lost", method: .get, headers: auditor()) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/orders?from=yesterday", method: .get, headers: auditor()) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains(#""field":"from""#))
            }
        }
    }

    @Test func replayingTheLogGivesTheSameReadModelsAndARebuildSwapsThemIn() async throws {
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: db) { client, services in
            _ = try await placeMixedOrders(client)
            _ = try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask { expectReply(try await storefront.pay(client, StorefrontDriver.paymentBody(amount: 3200, product: "Pen"))) }
                }
                try await group.waitForAll()
            }
            // Hold operations change order, hold and inventory rows too.
            let captured = try await storefront.placeOrder(client, product: "Pen", amount: 3200)
            expectReply(try await backOffice.capture(client, captured, #"{"amount": "1.00"}"#))
            expectReply(try await backOffice.ship(client, captured))
            expectReply(try await backOffice.refund(client, captured, #"{"amount": "2.00", "reason": "late"}"#))
            let voided = try await storefront.placeOrder(client, product: "Pen", amount: 3200)
            expectReply(try await backOffice.void(client, voided))
            let live = try await Self.table(services.client)
            let events = try await services.store.read(from: 1, limit: 100_000)
            let replayed = try ProjectionRebuilder.replay(events)
            #expect(replayed.count == live.count)
            #expect(replayed.filter { $0.projection != "holds" }.count == 12 + 3 + 27)
            #expect(replayed.filter { $0.projection == "holds" }.count == events.filter { $0.type == "AuthorizationHoldPlaced" }.count)
            for (a, b) in zip(replayed, live) {
                #expect(a.projection == b.projection && a.key == b.key && a.version == b.version && a.createdPosition == b.createdPosition)
                #expect(JSONValue.sameObject(a.json, b.json), "\(a.projection)/\(a.key)")
            }
        }
        // The rebuild (as the owner) rewrites the table to exactly the replay.
        try await db.withOwner { owner in
            let before = try await Self.table(owner)
            try await owner.query("UPDATE ledger.projection_rows SET row = '{}'::jsonb WHERE projection = 'inventory'")
            #expect(try await ProjectionRebuilder.rebuild(client: owner, logger: TestCluster.logger) == before.count)
            let after = try await Self.table(owner)
            #expect(after.map(\.key) == before.map(\.key))
            #expect(zip(after, before).allSatisfy { JSONValue.sameObject($0.json, $1.json) })
        }
    }

    static func table(_ client: DatabaseClient) async throws -> [ProjectionRebuilder.Row] {
        var rows: [ProjectionRebuilder.Row] = []
        for try await (p, k, v, j, c) in try await client.query(
            "SELECT projection, key, version, row::text, created_position FROM ledger.projection_rows ORDER BY projection, created_position, key"
        ).decode((String, String, Int64, String, Int64).self) {
            rows.append(ProjectionRebuilder.Row(projection: p, key: k, version: v, json: j, createdPosition: c))
        }
        return rows
    }
}
