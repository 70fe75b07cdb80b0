import Foundation
import LedgerCore
import LedgerPostgres

// A batch's items as the back office reads them (issue 55): which captures and refunds a batch settled, a page at a
// time for the console's batch page, or all of them streamed for its CSV download.

extension SettlementService {
    /// At most `limit` (1…1000) of the batch's items after ledger position `after`, in ledger order.
    public func batchItems(id: String, after: Int64, limit: Int) async throws -> [SettlementBatchItem] {
        try await itemsStore.items(ofBatch: id, after: after, limit: min(max(1, limit), 1000)).map(Self.item)
    }

    /// Calls `body` with each of the batch's items, in ledger order, one query streamed.
    public func forEachBatchItem(id: String, _ body: (SettlementBatchItem) async throws -> Void) async throws {
        try await itemsStore.forEachItem(ofBatch: id) { row in try await body(try Self.item(row)) }
    }
}
