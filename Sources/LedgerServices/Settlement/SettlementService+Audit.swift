import Crypto
import Foundation
import LedgerCore
import LedgerPostgres
import Logging

/// The auditor's check of settlement membership: the hash chain proves the closed events were not
/// altered; this proves the settlement projections (`ledger.settlement_assignments`: which batch took which capture)
/// still agrees with them — every closed batch's items, streamed in ledger order, have the counts,
/// gross amounts and items digest its event states. `ledger.rebuild_settlement_items()` repairs a
/// projection that does not.
extension SettlementService {
    public struct ItemsAudit: Sendable {
        public var batches = 0
        public var items = 0
        /// One line per batch that does not agree, naming what differs.
        public var problems: [String] = []
        public var ok: Bool { problems.isEmpty }
    }

    public static func auditItems(client: DatabaseClient, logger: Logger) async throws -> ItemsAudit {
        var audit = ItemsAudit()
        let items = SettlementItemsStore(client: client, logger: logger)
        var batches: [(SettlementBatchOpened, SettlementBatchClosed)] = []
        for (stream, version, closedJSON, openedJSON) in try await items.closedBatches() {
            guard
                case .closed(let closed) = try SettlementEvent.decode(type: SettlementBatchClosed.eventType, schemaVersion: version, json: closedJSON),
                case .opened(let opened) = try SettlementEvent.decode(type: SettlementBatchOpened.eventType, schemaVersion: 1, json: openedJSON)
            else {
                audit.problems.append("\(stream): unreadable opened/closed events")
                continue
            }
            batches.append((opened, closed))
        }
        for (opened, closed) in batches {
            audit.batches += 1
            var tally = SettlementBatchTally(opened)
            var hasher = SHA256()
            var refused: String?
            try await items.forEachItem(ofBatch: closed.batchID) { row in
                let item = try item(row)
                audit.items += 1
                do throws(SettlementRejection) { try tally.add(item) } catch { refused = refused ?? error.description }
                hasher.update(data: Array(item.canonicalLine.utf8))
            }
            if let refused {
                audit.problems.append("\(closed.batchID): \(refused)")
                continue
            }
            let recomputed = try tally.closed(itemsSHA256: hex(Array(hasher.finalize())))
            var differences: [String] = []
            if recomputed.captureCount != closed.captureCount || recomputed.refundCount != closed.refundCount {
                differences.append(
                    "items \(recomputed.captureCount)+\(recomputed.refundCount), the event states \(closed.captureCount)+\(closed.refundCount)"
                )
            }
            if recomputed.grossCredit != closed.grossCredit || recomputed.grossDebit != closed.grossDebit {
                differences.append(
                    "gross \(recomputed.grossCredit)/\(recomputed.grossDebit), the event states \(closed.grossCredit)/\(closed.grossDebit)"
                )
            }
            if let stated = closed.itemsSHA256, stated != recomputed.itemsSHA256 {
                differences.append("items digest \(recomputed.itemsSHA256 ?? ""), the event states \(stated)")
            }
            if !differences.isEmpty { audit.problems.append("\(closed.batchID): " + differences.joined(separator: "; ")) }
        }
        return audit
    }
}
