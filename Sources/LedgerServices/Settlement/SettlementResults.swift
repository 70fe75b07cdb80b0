import Foundation
import LedgerCore
import LedgerMacros

/// One step of a settlement run as it happens (`ledgerd settle` prints them; the daemon logs them).
public struct SettlementProgress: Sendable, Hashable {
    public let batchID: String
    /// What happened: `recorded` (with the event type as `detail`), `selected`, `submitting`, `accepted`, …
    public let step: String
    /// Items or report lines so far, when the step counts them.
    public let items: Int?
    public let detail: String?

    public init(batchID: String, step: String, items: Int? = nil, detail: String? = nil) {
        self.batchID = batchID
        self.step = step
        self.items = items
        self.detail = detail
    }
}

/// What a settlement run did to one batch: where the batch stands now, and how many events this run
/// appended to it (0 for a batch finished before).
@MemberwiseInit
public struct SettlementBatchOutcome: Sendable, Hashable {
    public let batch: SettlementBatchState
    public let appendedEvents: Int
}

/// A settlement run of one business date: its cut-off and what happened to each batch (earlier days'
/// batches first, when the run caught up with them).
@MemberwiseInit
public struct SettlementRunSummary: Sendable, Hashable {
    public let businessDate: BusinessDate
    /// The instant that closed the business date.
    public let cutOffAt: Date
    public let batches: [SettlementBatchOutcome]
}

/// A batch's latest reconciliation as the back office reads it: the result last recorded, each of its
/// breaks with the operator's resolution if there is one.
public struct ReconciliationView: Sendable, Hashable {
    /// A break of the latest result, and how it was resolved (nil while it is open).
    @MemberwiseInit
    public struct Break: Sendable, Hashable {
        public let found: ReconciliationBreak
        public let resolution: ReconciliationBreakResolved?
    }

    /// The result recorded last (its counts; its breaks are ``breaks``).
    public let result: ReconciliationRecorded
    /// The result's breaks, in its order.
    public let breaks: [Break]

    /// Breaks no one resolved yet.
    public var openBreaks: Int { breaks.filter { $0.resolution == nil }.count }

    /// The view of `result` with the resolutions recorded for its breaks (by break id).
    public init(_ result: ReconciliationRecorded, resolutions: [String: ReconciliationBreakResolved]) {
        self.result = result
        breaks = result.breaks.map { Break(found: $0, resolution: resolutions[$0.breakID]) }
    }
}
