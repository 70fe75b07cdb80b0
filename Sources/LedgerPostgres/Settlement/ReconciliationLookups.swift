import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// What reconciliation asks the database while it walks a stored report: the ledger items a page's
/// lines name (by our reference, or by the acquirer's) with the batch that took each, the references
/// the report repeats (through its line index), and the batch's items the report does not name.
/// Every answer is as large as a page or the report's breaks, never the report.
package struct ReconciliationLookups: PostgresStore {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// An ``SettlementItemsStore/ItemRow`` with the batch that took the item, if any.
    package typealias ItemRowWithBatch = (Int64, String, String, String, String, String, Int64, Int64, String?)

    /// Items (as ``ItemRowWithBatch``) with the batch that took each, if any.
    package static let itemsWithBatchQuery = """
        SELECT \(SettlementItemsStore.itemColumnList), a.batch_id
        FROM ledger.settlement_items s LEFT JOIN ledger.settlement_assignments a ON a.position = s.position
        """

    /// Calls `body` with each item whose reference (ours) is one of `references`.
    package func forEachItem(withOurReferences references: [String], _ body: (ItemRowWithBatch) throws -> Void) async throws {
        for try await row in try await client.query(
            "\(unescaped: Self.itemsWithBatchQuery) WHERE s.modification_reference = ANY(\(references))",
            logger: logger
        ).decode(ItemRowWithBatch.self) {
            try body(row)
        }
    }

    /// Calls `body` with each item whose acquirer's reference is one of `references`.
    package func forEachItem(withAcquirerReferences references: [String], _ body: (ItemRowWithBatch) throws -> Void) async throws {
        for try await row in try await client.query(
            "\(unescaped: Self.itemsWithBatchQuery) WHERE s.psp_modification_reference = ANY(\(references))",
            logger: logger
        ).decode(ItemRowWithBatch.self) {
            try body(row)
        }
    }

    /// The references more than one line of the report uses (ours, and the acquirer's), each with
    /// the first line (1-based) that uses it: one pass over the report's line index, whose answer is
    /// as large as the report's repetitions, not the report. Payout lines do not count.
    package func repeatedReferences(in reportKey: String) async throws -> (ours: [String: Int], theirs: [String: Int]) {
        let client = self.client
        let logger = self.logger
        // Every payout record type (MerchantPayout, AcquirerPayout): a payout line names the batch, never an item.
        let payoutTypes = SettlementRecordKind.adyen.filter { $0.value == .payout }.keys.sorted()
        func repeated(_ column: String) async throws -> [String: Int] {
            let rows = try await client.query(
                """
                SELECT \(unescaped: column), min(line_no) FROM ledger.settlement_report_lines
                WHERE batch_id = \(reportKey) AND \(unescaped: column) <> '' AND NOT (type = ANY(\(payoutTypes)))
                GROUP BY \(unescaped: column) HAVING count(*) > 1
                """,
                logger: logger
            )
            var first: [String: Int] = [:]
            for try await (reference, line) in rows.decode((String, Int32).self) { first[reference] = Int(line) }
            return first
        }
        return (try await repeated("our_reference"), try await repeated("acquirer_reference"))
    }

    /// Calls `body`, in ledger order, with each of the batch's items no line of the report `reportKey`
    /// names (by either reference), and whether the report `laterKey` names it (false when `laterKey` is nil).
    package func forEachAbsentItem(
        batchID: String,
        reportKey: String,
        laterKey: String?,
        _ body: (SettlementItemsStore.ItemRow, Bool) throws -> Void
    ) async throws {
        let rows = try await client.query(
            """
            SELECT \(unescaped: SettlementItemsStore.itemColumnList),
                   EXISTS (SELECT 1 FROM ledger.settlement_report_lines l
                           WHERE l.batch_id = \(laterKey ?? "") AND l.our_reference = s.modification_reference)
            FROM ledger.settlement_assignments a JOIN ledger.settlement_items s ON s.position = a.position
            WHERE a.batch_id = \(batchID)
              AND NOT EXISTS (SELECT 1 FROM ledger.settlement_report_lines r
                              WHERE r.batch_id = \(reportKey) AND r.our_reference = s.modification_reference)
              AND NOT EXISTS (SELECT 1 FROM ledger.settlement_report_lines r
                              WHERE r.batch_id = \(reportKey) AND r.acquirer_reference = s.psp_modification_reference)
            ORDER BY s.position
            """,
            logger: logger
        )
        for try await row in rows.decode((Int64, String, String, String, String, String, Int64, Int64, Bool).self) {
            try body((row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7), row.8)
        }
    }
}
