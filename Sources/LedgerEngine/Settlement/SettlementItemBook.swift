import Foundation
import LedgerCore

/// The Swift twin of the settlement rules that live in SQL, because a trigger must guard every daemon that appends
/// (issue 56, step 4). The SQL stays the authority for the daemon; this twin is what in-memory ports (the simulator)
/// keep settlement items with, and `SettlementItemBookTwinTests` runs both on the same random histories and requires
/// equal answers, so the two cannot drift apart silently.
///
/// The rules, with the SQL each one twins:
/// - **Items** (sql/0008 `settlement_item_row`, `project_settlement_item`): every `HoldCaptured` and `HoldRefunded`
///   is an item at its event's position, open until a batch takes it (``SettlementBatchItem/from(_:position:)``).
/// - **Membership** (sql/0010 `settlement_batch_takes`): a batch opened with currency C, pinned position P and
///   cut-off T takes the open items in C at positions ≤ P recorded strictly before T. Instants compare in
///   microseconds, as `timestamptz` does and as events store them (RFC 3339 with six fraction digits).
/// - **The close** (sql/0010 `assign_settlement_items`, schema 2): a `SettlementBatchClosed` takes exactly the open
///   items the rule names now, and is refused (the trigger's SQLSTATE LDG10) when their counts or gross amounts
///   differ from what the event states — e.g. because another batch took some of them after they were counted.
///   Schema 1 closed events (which listed their items) are not twinned: nothing writes them any more.
public struct SettlementItemBook: Sendable {
    /// Every item by position (sql `settlement_items`).
    public private(set) var items: [Int64: SettlementBatchItem] = [:]
    /// The open items by position (sql `settlement_open_items`).
    public private(set) var open: [Int64: SettlementBatchItem] = [:]
    /// Which batch took which item, by position (sql `settlement_assignments`).
    public private(set) var assignments: [Int64: String] = [:]

    public init() {}

    /// Whether a batch opened as `opened` takes `item` (sql `settlement_batch_takes`); that no batch took it yet is
    /// the book's part (the item is in ``open``).
    public static func takes(_ item: SettlementBatchItem, opened: SettlementBatchOpened) -> Bool {
        item.amount.currency == opened.currency && item.position <= opened.pinnedPosition
            && item.recordedAt.epochMicroseconds < opened.cutOffAt.epochMicroseconds
    }

    /// Records the item a hold event makes, if it makes one (the insert trigger on `ledger.events`).
    public mutating func record(_ event: HoldEvent, position: Int64) {
        guard let item = SettlementBatchItem.from(event, position: position) else { return }
        items[position] = item
        open[position] = item
    }

    /// The items a batch opened as `opened` would take now, in ledger order (sql `settlement_batch_candidates`
    /// ordered by position).
    public func candidates(_ opened: SettlementBatchOpened) -> [SettlementBatchItem] {
        open.values.filter { Self.takes($0, opened: opened) }.sorted { $0.position < $1.position }
    }

    /// Applies a closed event (the closed-event trigger): takes the candidates when they are what `closed` states,
    /// and returns them; otherwise changes nothing and throws what differs.
    @discardableResult
    public mutating func close(
        _ closed: SettlementBatchClosed,
        opened: SettlementBatchOpened
    ) throws(SettlementMembershipRefusal)
        -> [SettlementBatchItem]
    {
        let taken = candidates(opened)
        // Counted as the daemon counts a batch (``SettlementBatchTally``): the candidates are in the batch's currency and
        // in ledger order, so only an overflowing total is refused by it, and that is a refusal here too.
        var tally = SettlementBatchTally(opened)
        let counted: SettlementBatchClosed? = try? {
            for item in taken { try tally.add(item) }
            return try tally.closed(itemsSHA256: "")
        }()
        guard let counted, counted.captureCount == closed.captureCount, counted.refundCount == closed.refundCount,
            counted.grossCredit == closed.grossCredit, counted.grossDebit == closed.grossDebit
        else {
            throw SettlementMembershipRefusal(
                batchID: closed.batchID,
                captures: tally.captureCount,
                refunds: tally.refundCount,
                credit: counted?.grossCredit.minorUnits ?? 0,
                debit: counted?.grossDebit.minorUnits ?? 0
            )
        }
        for item in taken {
            open[item.position] = nil
            assignments[item.position] = closed.batchID
        }
        return taken
    }
}

/// A closed event refused because the items the rule takes are not those it states (the SQL's LDG10): what the rule
/// would have taken.
public struct SettlementMembershipRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    public var batchID: String
    public var captures: Int
    public var refunds: Int
    /// Σ captures, minor units.
    public var credit: Int64
    /// Σ refunds, minor units.
    public var debit: Int64

    public var description: String {
        "settlement batch \(batchID) would take \(captures) captures and \(refunds) refunds (\(credit) / \(debit)), not what its closed event states"
    }
}
