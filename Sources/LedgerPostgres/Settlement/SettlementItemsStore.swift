import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The settlement items (`ledger.settlement_items`, with `ledger.settlement_assignments`: which batch
/// took which item) as settlement reads them: the candidates a close counts
/// (`ledger.settlement_batch_candidates`, sql/0010), a batch's items, the currencies and earliest
/// item no batch took yet, and the batch streams and closed events a run or an audit folds.
///
/// Items stream: each is handed to the caller's closure as its row arrives, as an ``ItemRow`` the
/// caller turns into a ``SettlementBatchItem`` (and refuses when unreadable).
package struct SettlementItemsStore: PostgresStore {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// An item's columns (``itemColumnList``): position, kind, order, our reference, the acquirer's
    /// reference, currency, amount in minor units, recorded at (epoch microseconds).
    package typealias ItemRow = (Int64, String, String, String, String, String, Int64, Int64)

    /// A batch's items (as ``ItemRow``), to be narrowed with `WHERE a.batch_id = …`.
    package static let batchItemsQuery = """
        SELECT \(itemColumnList) FROM ledger.settlement_assignments a JOIN ledger.settlement_items s ON s.position = a.position
        """

    /// The columns of an ``ItemRow``, from `ledger.settlement_items s`.
    package static let itemColumnList = """
        s.position, s.kind, s.order_id, s.modification_reference, s.psp_modification_reference, s.currency,
        s.amount_minor, ledger.epoch_us(s.recorded_at)
        """

    /// Calls `body` with each item a batch of `currency` pinned at `pinned` with this `cutOff` takes
    /// (`ledger.settlement_batch_candidates`), in ledger order, one query streamed.
    package func forEachCandidate(
        currency: String,
        pinned: Int64,
        cutOff: Date,
        _ body: (ItemRow) async throws -> Void
    ) async throws {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.itemColumnList)
            FROM ledger.settlement_batch_candidates(
                \(currency), \(pinned),
                timestamptz 'epoch' + \(cutOff.epochMicroseconds) * interval '1 microsecond') o
            JOIN ledger.settlement_items s ON s.position = o.position
            ORDER BY o.position
            """,
            logger: logger
        )
        for try await row in rows.decode(ItemRow.self) { try await body(row) }
    }

    /// Calls `body` with each item the batch took, in ledger order, one query streamed.
    package func forEachItem(ofBatch batchID: String, _ body: (ItemRow) async throws -> Void) async throws {
        let rows = try await client.query(
            "\(unescaped: Self.batchItemsQuery) WHERE a.batch_id = \(batchID) ORDER BY a.position",
            logger: logger
        )
        for try await row in rows.decode(ItemRow.self) { try await body(row) }
    }

    /// A page of the batch's items: at most `limit` after ledger position `after`, in ledger order (the console's batch
    /// page; the primary key of the assignments reads it without sorting the batch).
    package func items(ofBatch batchID: String, after: Int64, limit: Int) async throws -> [ItemRow] {
        let rows = try await client.query(
            "\(unescaped: Self.batchItemsQuery) WHERE a.batch_id = \(batchID) AND a.position > \(after) ORDER BY a.position LIMIT \(limit)",
            logger: logger
        )
        var items: [ItemRow] = []
        for try await row in rows.decode(ItemRow.self) { items.append(row) }
        return items
    }

    /// The currencies whose batch pinned at `pinned` with this `cutOff` would take items
    /// (`ledger.settlement_batch_candidates`, asked for each currency with items no batch took yet).
    package func unsettledCurrencies(through pinned: Int64, before cutOff: Date) async throws -> [String] {
        let rows = try await client.query(
            """
            SELECT c.currency FROM (SELECT DISTINCT currency FROM ledger.settlement_open_items) c
            WHERE EXISTS (SELECT FROM ledger.settlement_batch_candidates(
                c.currency, \(pinned), timestamptz 'epoch' + \(cutOff.epochMicroseconds) * interval '1 microsecond'))
            """,
            logger: logger
        )
        var codes: [String] = []
        for try await code in rows.decode(String.self) { codes.append(code) }
        return codes
    }

    /// When the earliest item no batch took yet was recorded (nil: there is none).
    package func earliestUnsettledItem() async throws -> Date? {
        let rows = try await client.query(
            "SELECT ledger.epoch_us(min(recorded_at)) FROM ledger.settlement_open_items",
            logger: logger
        )
        for try await micros in rows.decode(Int64?.self) { return micros.map { Date(epochMicroseconds: $0) } }
        return nil
    }

    /// The streams of every settlement batch (those with an opened event), in the order they were opened.
    package func batchStreams() async throws -> [StreamID] {
        let rows = try await client.query(
            "SELECT stream_id FROM ledger.events WHERE type = \(SettlementBatchOpened.eventType) ORDER BY position",
            logger: logger
        )
        var streams: [StreamID] = []
        for try await stream in rows.decode(String.self) { if let id = StreamID(stream) { streams.append(id) } }
        return streams
    }

    /// Every closed event with its batch's opened event, in ledger order: the stream, the closed
    /// event's schema version and data, and the opened event's data (JSON text).
    package func closedBatches() async throws -> [(stream: String, schemaVersion: Int32, closedJSON: String, openedJSON: String)] {
        let closedEvents = try await client.query(
            """
            SELECT c.stream_id, c.schema_version, c.data_text, o.data_text FROM ledger.events c
            JOIN ledger.events o ON o.stream_id = c.stream_id AND o.stream_version = 1
            WHERE c.type = \(SettlementBatchClosed.eventType) ORDER BY c.position
            """,
            logger: logger
        )
        var batches: [(stream: String, schemaVersion: Int32, closedJSON: String, openedJSON: String)] = []
        for try await (stream, version, closedJSON, openedJSON) in closedEvents.decode((String, Int32, String, String).self) {
            batches.append((stream, version, closedJSON, openedJSON))
        }
        return batches
    }
}
