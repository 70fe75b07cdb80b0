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

/// Which business day a settlement run closes.
public enum SettlementDay: Sendable, Hashable {
    /// A business day whose cut-off has passed (the scheduler's run, `ledgerd settle [--business-date]`).
    case businessDate(BusinessDate)
    /// The open business day — the one a capture recorded now settles in — closed now, before its cut-off, by
    /// the operator `requestedBy` (`ledgerd settle --today`): its batches take what was recorded until now, the
    /// early close is recorded in each batch's opened event (``SettlementEarlyClose``), and what is captured
    /// later settles with the next business day. Settling a day is done once: a second early close, or the
    /// scheduled cut-off later, finds the day's batches settled.
    case openDayNow(requestedBy: String)
}

/// A settlement run of one business date: its cut-off and what happened to each batch (earlier days'
/// batches first, when the run caught up with them).
@MemberwiseInit
public struct SettlementRunSummary: Sendable, Hashable {
    public let businessDate: BusinessDate
    /// The instant that closed the business date.
    public let cutOffAt: Date
    /// Set when this run closed the open day before its cut-off (``SettlementDay/openDayNow(requestedBy:)``).
    public var earlyClose: SettlementEarlyClose?
    public let batches: [SettlementBatchOutcome]
}

/// A batch's reconciliations as the back office reads them (every upload is its own
/// reconciliation, kept beside the acquirer's; a resolution stays visible forever): one entry per
/// report (the acquirer's first, then uploads in the order they were first reconciled), each its
/// latest result with its breaks and their resolutions, and every resolution ever recorded. The view
/// *reflects* one of them (``reflected``): the one an upload or a resolution concerned, else the
/// acquirer's.
public struct ReconciliationView: Sendable, Hashable {
    /// A break of a result, and how it was resolved (nil while it is open).
    @MemberwiseInit
    public struct Break: Sendable, Hashable {
        public let found: ReconciliationBreak
        public let resolution: ReconciliationBreakResolved?
    }

    /// One report's reconciliation: its latest result and that result's breaks.
    public struct Report: Sendable, Hashable {
        /// The result recorded last for this report (its counts; its breaks are ``breaks``).
        public let result: ReconciliationRecorded
        /// When that result was recorded.
        public let recordedAt: Date
        /// The result's breaks, in its order.
        public let breaks: [Break]
        /// The uploaded report's key; nil for the acquirer's own report.
        public var report: String? { result.report }
        /// Breaks no one resolved yet.
        public var openBreaks: Int { breaks.filter { $0.resolution == nil }.count }
    }

    /// The batch's currency (break amounts are shown in it).
    public let currency: Currency
    /// The merchant account the batch settles under.
    public let merchantAccount: String
    /// Every report's reconciliation: the acquirer's first, then uploads by first reconciliation.
    public let reports: [Report]
    /// The reconciliation this view reflects.
    public let reflected: Report
    /// Every resolution recorded on the batch, in order, with the break it resolved.
    public let resolutions: [Break]

    /// The reflected result (its counts).
    public var result: ReconciliationRecorded { reflected.result }
    /// The reflected result's breaks.
    public var breaks: [Break] { reflected.breaks }
    /// The reflected result's breaks no one resolved yet.
    public var openBreaks: Int { reflected.openBreaks }

    /// Folds a reconciliation stream's events. `reflecting`: the report key to reflect (nil: the
    /// acquirer's, else the latest upload's). Nil when the stream holds no result.
    public init?(
        currency: Currency,
        merchantAccount: String,
        events: [(event: SettlementEvent, recordedAt: Date)],
        reflecting: String?
    ) {
        var latest: [String?: (ReconciliationRecorded, Date)] = [:]
        var order: [String?] = []
        var found: [String: ReconciliationBreak] = [:]
        var resolved: [ReconciliationBreakResolved] = []
        var lastUpload: String?
        for (event, recordedAt) in events {
            switch event {
            case .reconciled(let e):
                if latest[e.report] == nil { order.append(e.report) }
                latest[e.report] = (e, recordedAt)
                if e.report != nil { lastUpload = e.report }
            case .breakFound(let e): found[e.found.breakID] = e.found
            case .breakResolved(let e): resolved.append(e)
            default: break
            }
        }
        let byID = Dictionary(resolved.map { ($0.breakID, $0) }, uniquingKeysWith: { first, _ in first })
        func report(_ key: String?) -> Report? {
            latest[key].map { result, at in
                Report(result: result, recordedAt: at, breaks: result.breaks.map { Break(found: $0, resolution: byID[$0.breakID]) })
            }
        }
        let keys = order.filter { $0 == nil } + order.filter { $0 != nil }
        let reports = keys.compactMap(report)
        guard let reflected = (reflecting.flatMap(report) ?? report(nil) ?? report(lastUpload)) else { return nil }
        self.currency = currency
        self.merchantAccount = merchantAccount
        self.reports = reports
        self.reflected = reflected
        self.resolutions = resolved.compactMap { r in found[r.breakID].map { Break(found: $0, resolution: r) } }
    }
}
