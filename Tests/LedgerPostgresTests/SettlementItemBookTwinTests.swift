import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The settlement rules that live in SQL (sql/0008, sql/0010) and their Swift twin (`SettlementItemBook`, LedgerEngine)
/// on the same random histories: captures and refunds in three currencies at random microseconds, batches opened
/// with random currencies, pinned positions and cut-offs, overlapping one another, closed with the counts the rule
/// gives now, with counts made when the batch opened (stale once another batch has taken some), or with counts off
/// by one. After every step the database and the twin must agree on which closes were refused (LDG10), which items
/// are open, which batch took each item, and what every open batch would take now.
@Suite(.machine(.shared)) struct SettlementItemBookTwinTests {
    static let currencies: [Currency] = [.usd, .eur, .jpy]
    /// 2030-06-18T00:00:00Z; items and cut-offs fall in the two days after it.
    static let start: Int64 = 1_907_798_400_000_000
    static let span: Int64 = 2 * 86_400_000_000

    /// One event appended in its own statement through `ledger.append_events`, as the writer appends, so the log's
    /// triggers run; its position, or the SQLSTATE that refused it.
    func append<Payload: LedgerEventPayload>(
        _ client: DatabaseClient,
        _ stream: String,
        version: Int64,
        _ payload: Payload
    )
        async throws -> Result<Int64, Refused>
    {
        let data = String(decoding: try EventCatalogue.encode(payload), as: UTF8.self)
        let query: PostgresQuery = """
            SELECT first_position FROM ledger.append_events(
                \([stream]), \([version]), \([UUID()]), \([Payload.eventType]), \([Payload.schemaVersion]), \([data]), \(["{}"]), \([Int64(0)]))
            """
        do {
            return .success(try #require(try await column(client, query, as: Int64.self).first))
        } catch let error as PSQLError {
            return .failure(Refused(sqlState: error.serverInfo?[.sqlState] ?? "\(error)"))
        }
    }

    /// A random instant of the two days: on the hour half of the time, so that items recorded exactly at a batch's
    /// cut-off (out: the cut-off is exclusive) are common, and one microsecond either side of an hour often.
    static func instant(_ random: inout SeededRandom) -> Int64 {
        let hour = start + random.int(in: 0...47) * 3_600_000_000
        switch random.next(below: 4) {
        case 0, 1: return hour
        case 2: return hour + random.int(in: -1...1)
        default: return start + random.int(in: 0...(span - 1))
        }
    }

    /// An append the database refused, with its SQLSTATE.
    struct Refused: Error { var sqlState: String }

    /// A batch opened and not yet closed, with the counts the rule gave when it opened.
    struct OpenBatch {
        var opened: SettlementBatchOpened
        var countedAtOpen: [SettlementBatchItem]
    }

    static func closed(
        _ batchID: String,
        currency: Currency,
        items: [SettlementBatchItem],
        captureDelta: Int = 0,
        creditDelta: Int64 = 0
    )
        -> SettlementBatchClosed
    {
        let captures = items.filter { $0.kind == .capture }
        let refunds = items.filter { $0.kind == .refund }
        let credit = Money(minorUnits: captures.reduce(0) { $0 + $1.amount.minorUnits } + creditDelta, currency: currency)
        let debit = Money(minorUnits: refunds.reduce(0) { $0 + $1.amount.minorUnits }, currency: currency)
        return SettlementBatchClosed(
            batchID: batchID,
            captureCount: captures.count + captureDelta,
            refundCount: refunds.count,
            grossCredit: credit,
            grossDebit: debit,
            gross: Money(minorUnits: credit.minorUnits - debit.minorUnits, currency: currency),
            itemsSHA256: String(repeating: "0", count: 64)
        )
    }

    @Test(.seeded()) func theDatabaseAndTheTwinTakeTheSameItemsOnRandomHistories() async throws {
        let seed = PropertySeed.current
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            var random = SeededRandom(seed: seed)
            var book = SettlementItemBook()
            var batches: [String: OpenBatch] = [:]
            var head: Int64 = 0
            var outcomes: [String: Int] = [:]
            for step in 0..<400 {
                let roll = random.next(below: 20)
                if roll < 12 || head == 0 {
                    // A capture or a refund, at a random microsecond of the two days.
                    let currency = Self.currencies[Int(random.next(below: 3))]
                    let amount = Money(minorUnits: random.int(in: 1...100_000), currency: currency)
                    let at = Date(epochMicroseconds: Self.instant(&random))
                    let order = OrderID(validated: "order-\(step)")
                    let event: HoldEvent
                    let result: Result<Int64, Refused>
                    if random.chance(numerator: 1, denominator: 4) {
                        let refunded = HoldRefunded(
                            orderID: order,
                            amount: amount,
                            reason: "r",
                            modificationReference: "ref-\(step)",
                            pspModificationReference: "psp-\(step)",
                            refundedAt: at
                        )
                        event = .refunded(refunded)
                        result = try await append(client, "hold-\(step)", version: 1, refunded)
                    } else {
                        let captured = HoldCaptured(
                            orderID: order,
                            amount: amount,
                            isFinal: true,
                            released: .zero(currency),
                            modificationReference: "ref-\(step)",
                            pspModificationReference: "psp-\(step)",
                            capturedAt: at
                        )
                        event = .captured(captured)
                        result = try await append(client, "hold-\(step)", version: 1, captured)
                    }
                    head = try result.get()
                    book.record(event, position: head)
                } else if roll < 16 || batches.isEmpty {
                    // A batch opened: a random currency, pinned at or before the head, a random cut-off.
                    let batchID = "batch-\(step)"
                    let opened = SettlementBatchOpened(
                        batchID: batchID,
                        merchantAccount: "Store",
                        currency: Self.currencies[Int(random.next(below: 3))],
                        businessDate: BusinessDate("2030-06-19")!,
                        cutOffAt: Date(epochMicroseconds: Self.instant(&random)),
                        pinnedPosition: random.int(in: 0...head)
                    )
                    head = try await append(client, "settlement-\(batchID)", version: 1, opened).get()
                    batches[batchID] = OpenBatch(opened: opened, countedAtOpen: book.candidates(opened))
                } else {
                    // A batch closed with fresh counts, the counts made when it opened, or counts off by one.
                    let batch = batches.values.sorted { $0.opened.batchID < $1.opened.batchID }[Int(random.next(below: UInt64(batches.count)))]
                    let opened = batch.opened
                    let closed: SettlementBatchClosed
                    switch random.next(below: 4) {
                    case 0: closed = Self.closed(opened.batchID, currency: opened.currency, items: batch.countedAtOpen)
                    case 1: closed = Self.closed(opened.batchID, currency: opened.currency, items: book.candidates(opened), captureDelta: 1)
                    case 2: closed = Self.closed(opened.batchID, currency: opened.currency, items: book.candidates(opened), creditDelta: -1)
                    default: closed = Self.closed(opened.batchID, currency: opened.currency, items: book.candidates(opened))
                    }
                    let twin: Result<[SettlementBatchItem], SettlementMembershipRefusal> = Result { () throws(SettlementMembershipRefusal) in
                        try book.close(closed, opened: opened)
                    }
                    let sql = try await append(client, "settlement-\(opened.batchID)", version: 2, closed)
                    switch (sql, twin) {
                    case (.success(let position), .success):
                        head = position
                        batches[opened.batchID] = nil
                        outcomes["taken", default: 0] += 1
                    case (.failure(let refused), .failure):
                        #expect(refused.sqlState == "LDG10", "step \(step): refused with \(refused.sqlState)")
                        outcomes["refused", default: 0] += 1
                    default:
                        Issue.record("step \(step): the database answered \(sql), the twin \(twin), closing \(opened) as \(closed)")
                        return
                    }
                }
                // Both sides agree on the open items, the assignments, and what every open batch would take now (the first
                // disagreement ends the run: what follows it would only repeat it).
                let open = try await column(client, "SELECT position FROM ledger.settlement_open_items ORDER BY position", as: Int64.self)
                try #require(open == book.open.keys.sorted(), "step \(step): open items")
                let assigned = try await column(
                    client,
                    "SELECT position || ':' || batch_id FROM ledger.settlement_assignments ORDER BY position",
                    as: String.self
                )
                try #require(assigned == book.assignments.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }, "step \(step): assignments")
                for batch in batches.values {
                    let opened = batch.opened
                    let candidates = try await column(
                        client,
                        """
                        SELECT position FROM ledger.settlement_batch_candidates(
                            \(opened.currency.code), \(opened.pinnedPosition),
                            timestamptz 'epoch' + \(opened.cutOffAt.epochMicroseconds) * interval '1 microsecond')
                        ORDER BY position
                        """,
                        as: Int64.self
                    )
                    try #require(candidates == book.candidates(opened).map(\.position), "step \(step): candidates of \(opened.batchID)")
                }
            }
            // The history exercised both answers, and the twin's items are the database's, field by field
            // (sql/0008's settlement_item_row read from the events' JSON; the twin's from the typed events).
            print("SettlementItemBookTwinTests: \(outcomes), \(book.assignments.count) items taken, \(book.open.count) open")
            #expect(outcomes["taken", default: 0] >= 5 && outcomes["refused", default: 0] >= 5, "outcomes: \(outcomes)")
            let rows = try await column(
                client,
                """
                SELECT position || '|' || kind || '|' || order_id || '|' || modification_reference || '|' || psp_modification_reference
                       || '|' || currency || '|' || amount_minor || '|' || ledger.read_model_timestamp(recorded_at)
                FROM ledger.settlement_items ORDER BY position
                """,
                as: String.self
            )
            #expect(
                rows
                    == book.items.values.sorted { $0.position < $1.position }.map {
                        "\($0.position)|\($0.kind.rawValue)|\($0.orderID)|\($0.modificationReference)|\($0.pspModificationReference)|"
                            + "\($0.amount.currency.code)|\($0.amount.minorUnits)|\(RFC3339.format($0.recordedAt.epochMicroseconds))"
                    }
            )
        }
    }
}
