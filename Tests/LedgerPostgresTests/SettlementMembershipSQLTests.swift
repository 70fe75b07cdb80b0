import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Settlement batch membership against the real database (sql/0010): `ledger.settlement_batch_candidates`
/// selects exactly the items the rule names — checked clause by clause against an oracle written
/// here, independently of the SQL — and the closed event's trigger takes exactly those items: a
/// closed event whose counts or amounts differ from them is refused with LDG10, also when another
/// batch took some of them after the counts were made.
@Suite(.machine(.shared)) struct SettlementMembershipSQLTests {
    /// A capture or refund as the log records it (the fields sql/0008's `settlement_item_row` reads).
    struct Item {
        let name: String
        let kind: String
        let currency: String
        let amount: String
        let recordedAt: String
        var position: Int64 = 0
        var recordedMicros: Int64 { RFC3339.micros(recordedAt)! }

        var type: String { kind == "capture" ? "HoldCaptured" : "HoldRefunded" }
        var data: String {
            """
            {"order_id": "order-\(name)", "modification_reference": "ref-\(name)", "psp_modification_reference": "psp-\(name)",
             "amount": {"amount": "\(amount)", "currency": "\(currency)"}, "\(kind == "capture" ? "captured_at" : "refunded_at")": "\(recordedAt)"}
            """
        }
        var minorUnits: Int64 { Int64(amount.replacingOccurrences(of: ".", with: ""))! }
    }

    /// The rule, stated here independently of the SQL: the oracle the function is compared with.
    static func belongs(_ item: Item, currency: String, pinned: Int64, cutOffMicros: Int64, taken: Set<Int64>) -> Bool {
        item.currency == currency && item.position <= pinned && item.recordedMicros < cutOffMicros && !taken.contains(item.position)
    }

    static let cutOff = "2030-06-19T22:00:00Z"
    static var cutOffMicros: Int64 { RFC3339.micros(cutOff)! }

    /// One event appended in its own statement through `ledger.append_events`, as the writer appends,
    /// so the log's triggers run.
    func appendQuery(_ stream: String, version: Int64, type: String, schema: Int32 = 1, data: String) -> PostgresQuery {
        """
        SELECT first_position FROM ledger.append_events(
            \([stream]), \([version]), \([UUID()]), \([type]), \([schema]), \([data]), \(["{}"]), \([Int64(0)]))
        """
    }

    /// Runs an append to its end: a trigger's error arrives after the row description, so a query
    /// whose rows are not read would not report it.
    func run(_ client: DatabaseClient, _ query: PostgresQuery) async throws {
        #expect(try await column(client, query, as: Int64.self).count == 1)
    }

    @discardableResult
    func append(_ client: DatabaseClient, _ stream: String, version: Int64, type: String, schema: Int32 = 1, data: String) async throws -> Int64 {
        try #require(try await column(client, appendQuery(stream, version: version, type: type, schema: schema, data: data), as: Int64.self).first)
    }

    func openBatch(_ client: DatabaseClient, _ batch: String, currency: String, pinned: Int64, cutOff: String = cutOff) async throws {
        try await append(
            client,
            "settlement-\(batch)",
            version: 1,
            type: "SettlementBatchOpened",
            data: """
                {"batch_id": "\(batch)", "merchant_account": "Store", "currency": "\(currency)", "business_date": "2030-06-19",
                 "cut_off_at": "\(cutOff)", "pinned_position": \(pinned)}
                """
        )
    }

    /// A schema-2 closed event stating these counts and gross amounts (minor units, two digits).
    func closeQuery(_ batch: String, currency: String, captures: Int, refunds: Int, credit: Int64, debit: Int64) -> PostgresQuery {
        func money(_ units: Int64) -> String { #"{"amount": "\#(units / 100).\#(String(format: "%02d", units % 100))", "currency": "\#(currency)"}"# }
        return appendQuery(
            "settlement-\(batch)",
            version: 2,
            type: "SettlementBatchClosed",
            schema: 2,
            data: """
                {"batch_id": "\(batch)", "capture_count": \(captures), "refund_count": \(refunds), "gross_credit": \(money(credit)),
                 "gross_debit": \(money(debit)), "gross": \(money(credit - debit)), "items_sha256": "00"}
                """
        )
    }

    /// The closed event the rule's items call for, with the counts and amounts adjusted by the deltas.
    func closeQuery(
        _ batch: String,
        currency: String,
        items: [Item],
        captureDelta: Int = 0,
        refundDelta: Int = 0,
        creditDelta: Int64 = 0
    ) -> PostgresQuery {
        let captures = items.filter { $0.kind == "capture" }
        let refunds = items.filter { $0.kind == "refund" }
        return closeQuery(
            batch,
            currency: currency,
            captures: captures.count + captureDelta,
            refunds: refunds.count + refundDelta,
            credit: captures.reduce(0) { $0 + $1.minorUnits } + creditDelta,
            debit: refunds.reduce(0) { $0 + $1.minorUnits }
        )
    }

    func candidates(_ client: DatabaseClient, currency: String, pinned: Int64, cutOffMicros: Int64) async throws -> [Int64] {
        try await column(
            client,
            """
            SELECT position FROM ledger.settlement_batch_candidates(
                \(currency), \(pinned), timestamptz 'epoch' + \(cutOffMicros) * interval '1 microsecond')
            ORDER BY position
            """,
            as: Int64.self
        )
    }

    func assigned(_ client: DatabaseClient, _ batch: String) async throws -> [Int64] {
        try await column(client, "SELECT position FROM ledger.settlement_assignments WHERE batch_id = \(batch) ORDER BY position", as: Int64.self)
    }

    func openPositions(_ client: DatabaseClient) async throws -> [Int64] {
        try await column(client, "SELECT position FROM ledger.settlement_open_items ORDER BY position", as: Int64.self)
    }

    /// Every combination of currency, pinned position and cut-off around the items' own values
    /// (each item just inside and just outside each bound) gives the oracle's items.
    func expectCandidatesFollowTheRule(
        _ client: DatabaseClient,
        _ items: [Item],
        taken: Set<Int64>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let head = items.map(\.position).max() ?? 0
        var cutOffs: Set<Int64> = [Self.cutOffMicros, RFC3339.micros("2100-01-01T00:00:00Z")!]
        for item in items { cutOffs.formUnion([item.recordedMicros, item.recordedMicros + 1]) }
        for currency in ["USD", "EUR", "GBP"] {
            for pinned in 0...(head + 1) {
                for cut in cutOffs.sorted() {
                    let expected = items.filter { Self.belongs($0, currency: currency, pinned: pinned, cutOffMicros: cut, taken: taken) }
                        .map(\.position).sorted()
                    let actual = try await candidates(client, currency: currency, pinned: pinned, cutOffMicros: cut)
                    #expect(actual == expected, "candidates(\(currency), \(pinned), \(RFC3339.format(cut)))", sourceLocation: sourceLocation)
                }
            }
        }
    }

    @Test func theCandidatesAreTheRulesItemsAndTheTriggerTakesExactlyThem() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            // `early` is taken by an earlier batch; `atCutOff` is recorded exactly at the cut-off (out:
            // the cut-off is exclusive), `justBefore` one microsecond before it (in); `euro` is in
            // another currency; `yesterday` shows the rule has no lower time bound.
            var items = [
                Item(name: "early", kind: "capture", currency: "USD", amount: "7.00", recordedAt: "2030-06-19T09:00:00Z"),
                Item(name: "justBefore", kind: "capture", currency: "USD", amount: "10.00", recordedAt: "2030-06-19T21:59:59.999999Z"),
                Item(name: "atCutOff", kind: "capture", currency: "USD", amount: "11.00", recordedAt: "2030-06-19T22:00:00Z"),
                Item(name: "euro", kind: "capture", currency: "EUR", amount: "12.00", recordedAt: "2030-06-19T12:00:00Z"),
                Item(name: "refund", kind: "refund", currency: "USD", amount: "3.50", recordedAt: "2030-06-19T13:00:00Z"),
                Item(name: "yesterday", kind: "capture", currency: "USD", amount: "20.00", recordedAt: "2030-06-18T10:00:00Z"),
            ]
            items[0].position = try await append(client, "hold-early", version: 1, type: items[0].type, data: items[0].data)
            try await openBatch(client, "earlier", currency: "USD", pinned: items[0].position)
            try await run(client, closeQuery("earlier", currency: "USD", items: [items[0]]))
            #expect(try await assigned(client, "earlier") == [items[0].position])
            for i in 1..<items.count {
                items[i].position = try await append(client, "hold-\(items[i].name)", version: 1, type: items[i].type, data: items[i].data)
            }
            // Pinned just before `late` (as if the batch had been opened before it was recorded).
            let pinned = items.last!.position
            var late = Item(name: "late", kind: "capture", currency: "USD", amount: "5.00", recordedAt: "2030-06-19T14:00:00Z")
            late.position = try await append(client, "hold-late", version: 1, type: late.type, data: late.data)
            #expect(late.position == pinned + 1)
            items.append(late)
            try await openBatch(client, "day", currency: "USD", pinned: pinned)

            var taken: Set<Int64> = [items[0].position]
            try await expectCandidatesFollowTheRule(client, items, taken: taken)

            // The day's batch: what the daemon counts (the candidates) is what the oracle names.
            let dayItems = items.filter { Self.belongs($0, currency: "USD", pinned: pinned, cutOffMicros: Self.cutOffMicros, taken: taken) }
            #expect(dayItems.map(\.name) == ["justBefore", "refund", "yesterday"])
            #expect(try await candidates(client, currency: "USD", pinned: pinned, cutOffMicros: Self.cutOffMicros) == dayItems.map(\.position))

            // A closed event that states other counts or amounts than the rule's items is refused,
            // and changes nothing.
            let events = try await eventCount(client)
            let open = try await openPositions(client)
            await expectRejected(client, closeQuery("day", currency: "USD", items: dayItems, captureDelta: 1), sqlState: "LDG10")
            await expectRejected(client, closeQuery("day", currency: "USD", items: dayItems, captureDelta: -1), sqlState: "LDG10")
            await expectRejected(client, closeQuery("day", currency: "USD", items: dayItems, refundDelta: 1), sqlState: "LDG10")
            await expectRejected(client, closeQuery("day", currency: "USD", items: dayItems, creditDelta: 1), sqlState: "LDG10")
            #expect(try await eventCount(client) == events)
            #expect(try await openPositions(client) == open)
            #expect(try await assigned(client, "day").isEmpty)

            // With the rule's counts it is appended, and the trigger took exactly the candidates.
            try await run(client, closeQuery("day", currency: "USD", items: dayItems))
            #expect(try await assigned(client, "day") == dayItems.map(\.position))
            taken.formUnion(dayItems.map(\.position))
            #expect(try await openPositions(client) == items.map(\.position).filter { !taken.contains($0) }.sorted())
            try await expectCandidatesFollowTheRule(client, items, taken: taken)

            // Two batches counting the same items: the one that closes second, with counts made
            // before the first took them, is refused (what stops two daemons settling one capture twice).
            let head = items.map(\.position).max()!
            let farCutOff = "2030-06-21T00:00:00Z"
            try await openBatch(client, "stale", currency: "USD", pinned: head, cutOff: farCutOff)
            let staleItems = items.filter {
                Self.belongs($0, currency: "USD", pinned: head, cutOffMicros: RFC3339.micros(farCutOff)!, taken: taken)
            }
            #expect(staleItems.map(\.name) == ["atCutOff", "late"])
            try await openBatch(client, "first", currency: "USD", pinned: head, cutOff: Self.cutOff)
            try await run(client, closeQuery("first", currency: "USD", items: [late]))
            #expect(try await assigned(client, "first") == [late.position])
            await expectRejected(client, closeQuery("stale", currency: "USD", items: staleItems), sqlState: "LDG10")
            // Counted again, it closes over what is left.
            let left = staleItems.filter { $0.name != "late" }
            try await run(client, closeQuery("stale", currency: "USD", items: left))
            #expect(try await assigned(client, "stale") == left.map(\.position))
        }

        // The trigger and the candidates apply one statement of the rule, not two copies of it.
        try await db.withOwner { client in
            for function in ["ledger.assign_settlement_items(text, integer, jsonb)", "ledger.settlement_batch_candidates(text, bigint, timestamptz)"]
            {
                let body = try #require(try await column(client, "SELECT pg_get_functiondef(\(function)::regprocedure)", as: String.self).first)
                #expect(body.contains("ledger.settlement_batch_takes(o,"), "\(function) does not call ledger.settlement_batch_takes")
            }
            // The rebuild replays the closed events through the same trigger function: same assignments.
            let before = try await column(
                client,
                "SELECT position || ':' || batch_id FROM ledger.settlement_assignments ORDER BY position",
                as: String.self
            )
            #expect(try await column(client, "SELECT ledger.rebuild_settlement_items()", as: Int64.self) == [7])
            let after = try await column(
                client,
                "SELECT position || ':' || batch_id FROM ledger.settlement_assignments ORDER BY position",
                as: String.self
            )
            #expect(after == before && before.count == 6)
        }
    }

    @Test func theAuditorCanAskWhatABatchWouldTake() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let item = Item(name: "a", kind: "capture", currency: "USD", amount: "1.00", recordedAt: "2030-06-19T10:00:00Z")
            try await append(client, "hold-a", version: 1, type: item.type, data: item.data)
        }
        try await db.withAuditor { client in
            let positions = try await candidates(client, currency: "USD", pinned: 1, cutOffMicros: Self.cutOffMicros)
            #expect(positions == [1])
        }
    }
}
