// Reconciliation of a settlement batch (issue 5): the acquirer's report against the batch's ledger
// items, matched by our modification reference (the report's "Modification Merchant Reference")
// and else by the acquirer's ("Modification Reference"). Pure: the caller reads the report and
// the ledger, and records the result as an event on `reconciliation-<batch id>`.
//
// The expected window is one batch: an item absent from its batch's report is `timing` while the
// next batch's report is not known, `timing` when that report carries it, and `missing_at_acquirer`
// when it does not.

/// How a report line or ledger item failed to reconcile.
public enum BreakClass: String, Hashable, Sendable, Codable, CaseIterable {
    case missingInLedger = "missing_in_ledger"
    case missingAtAcquirer = "missing_at_acquirer"
    case amountMismatch = "amount_mismatch"
    case feeMismatch = "fee_mismatch"
    case currencyMismatch = "currency_mismatch"
    case duplicate
    case statusMismatch = "status_mismatch"
    case timing
    case unmatchedAdjustment = "unmatched_adjustment"
    case payoutMismatch = "payout_mismatch"
}

/// One break. `breakID` is stable for the same finding: `<batch id>.<class>.<reference>`.
public struct ReconciliationBreak: Hashable, Sendable, Codable {
    public var breakID: String
    public var breakClass: BreakClass
    /// Our modification reference, else the acquirer's reference, else the payout reference.
    public var reference: String
    public var expected: String?
    public var actual: String?
    public var detail: String

    public init(batchID: String, breakClass: BreakClass, reference: String, expected: String?, actual: String?, detail: String) {
        self.breakID = "\(batchID).\(breakClass.rawValue).\(reference)"
        self.breakClass = breakClass
        self.reference = reference
        self.expected = expected
        self.actual = actual
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case breakID = "break_id", breakClass = "class", reference, expected, actual, detail
    }
}

/// The fees the merchant's contract expects on a line, in minor units (nil: the component is not priced).
public struct ExpectedFees: Hashable, Sendable {
    public var interchange, schemeFees, markup, commission: Int64?
    public init(interchange: Int64?, schemeFees: Int64?, markup: Int64?, commission: Int64?) {
        self.interchange = interchange
        self.schemeFees = schemeFees
        self.markup = markup
        self.commission = commission
    }
}

/// A batch's reconciliation result.
public struct ReconciliationRecorded: LedgerEventPayload {
    public static let eventType = "ReconciliationRecorded"
    public static let schemaVersion: Int32 = 1

    public var batchID: String
    /// Whether the next batch's report was known (absent items are then final breaks, not timing).
    public var windowClosed: Bool
    public var reportLines: Int
    public var ledgerItems: Int
    public var matched: Int
    public var breaks: [ReconciliationBreak]

    public init(batchID: String, windowClosed: Bool, reportLines: Int, ledgerItems: Int, matched: Int, breaks: [ReconciliationBreak]) {
        self.batchID = batchID
        self.windowClosed = windowClosed
        self.reportLines = reportLines
        self.ledgerItems = ledgerItems
        self.matched = matched
        self.breaks = breaks
    }

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id", windowClosed = "window_closed", reportLines = "report_lines", ledgerItems = "ledger_items"
        case matched, breaks
    }
}

/// A break found for the first time (appended with the result that lists it), so that each break
/// is an event of its own an operator's resolution can follow.
public struct ReconciliationBreakFound: LedgerEventPayload {
    public static let eventType = "ReconciliationBreakFound"
    public static let schemaVersion: Int32 = 1

    public var batchID: String
    public var found: ReconciliationBreak

    public init(batchID: String, found: ReconciliationBreak) {
        self.batchID = batchID
        self.found = found
    }

    enum CodingKeys: String, CodingKey { case batchID = "batch_id", found = "break" }
}

/// An operator resolved a break, with a reason.
public struct ReconciliationBreakResolved: LedgerEventPayload {
    public static let eventType = "ReconciliationBreakResolved"
    public static let schemaVersion: Int32 = 1

    public var batchID: String
    public var breakID: String
    public var reason: String
    public var resolvedBy: String

    public init(batchID: String, breakID: String, reason: String, resolvedBy: String) {
        self.batchID = batchID
        self.breakID = breakID
        self.reason = reason
        self.resolvedBy = resolvedBy
    }

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id", breakID = "break_id", reason, resolvedBy = "resolved_by"
    }
}

public enum Reconciliation {
    public static func streamID(batchID: String) -> StreamID { StreamID(category: "reconciliation", id: batchID) }

    /// Classifies every report line and every ledger item of one batch.
    /// - Parameters:
    ///   - items: the batch's ledger items (its closed event).
    ///   - lines: the batch's report lines, ending with the MerchantPayout line.
    ///   - laterLines: the next batch's report lines, once known (closes the window).
    ///   - settledElsewhere: our references that are items of other batches (a line for one was carried).
    ///   - expectedFees: the contract's fees for a line of an item, or nil when they cannot be computed.
    public static func reconcile(
        batchID: String, currency: Currency, items: [SettlementBatchItem], lines: [SettlementReportLine],
        laterLines: [SettlementReportLine]?, settledElsewhere: Set<String>,
        expectedFees: (SettlementReportLine, SettlementBatchItem) -> ExpectedFees?
    ) -> ReconciliationRecorded {
        var breaks: [ReconciliationBreak] = []
        func add(_ c: BreakClass, _ reference: String, expected: String? = nil, actual: String? = nil, _ detail: String) {
            let b = ReconciliationBreak(batchID: batchID, breakClass: c, reference: reference, expected: expected, actual: actual, detail: detail)
            if !breaks.contains(where: { $0.breakID == b.breakID }) { breaks.append(b) }
        }
        let byOurs = Dictionary(items.map { ($0.modificationReference, $0) }, uniquingKeysWith: { a, _ in a })
        let byPSP = Dictionary(items.map { ($0.pspModificationReference, $0) }, uniquingKeysWith: { a, _ in a })
        var seen: Set<String> = []
        var matched = 0
        var payoutLines: [SettlementReportLine] = []
        for line in lines {
            if line.type == .merchantPayout { payoutLines.append(line); continue }
            guard line.type == .settled || line.type == .refunded else {
                add(.unmatchedAdjustment, line.modificationReference.isEmpty ? line.pspReference : line.modificationReference,
                    actual: String(line.signedNetMinorUnits), "a \(line.type) line the ledger has no item for")
                continue
            }
            guard let item = byOurs[line.modificationMerchantReference] ?? byPSP[line.modificationReference] else {
                let ours = line.modificationMerchantReference
                if settledElsewhere.contains(ours) { matched += 1; continue }  // carried from another batch: its batch reports the timing
                add(.missingInLedger, ours.isEmpty ? line.modificationReference : ours, actual: String(line.signedGrossMinorUnits),
                    "the report settles a \(line.type) the ledger has not recorded")
                continue
            }
            let reference = item.modificationReference
            guard seen.insert(reference).inserted else {
                add(.duplicate, reference, expected: "1", actual: "2", "the report settles this \(item.kind.rawValue) more than once")
                continue
            }
            if line.grossCurrency != item.amount.currency || line.grossCurrency != currency {
                add(.currencyMismatch, reference, expected: item.amount.currency.code, actual: line.grossCurrency?.code ?? "", "gross currency differs")
                continue
            }
            let expectedType: SettlementLineType = item.kind == .capture ? .settled : .refunded
            if line.type != expectedType {
                add(.statusMismatch, reference, expected: expectedType.rawValue, actual: line.type.rawValue, "the ledger recorded a \(item.kind.rawValue)")
                continue
            }
            let signedExpected = item.kind == .capture ? item.amount.minorUnits : -item.amount.minorUnits
            if line.signedGrossMinorUnits != signedExpected {
                add(.amountMismatch, reference, expected: String(signedExpected), actual: String(line.signedGrossMinorUnits), "gross differs from the ledger")
                continue
            }
            if let fees = expectedFees(line, item) {
                let pairs: [(String, Int64?, Int64?)] = [
                    ("interchange", fees.interchange, line.interchange?.minorUnits), ("scheme_fees", fees.schemeFees, line.schemeFees?.minorUnits),
                    ("markup", fees.markup, line.markup?.minorUnits), ("commission", fees.commission, line.commission?.minorUnits),
                ]
                if let wrong = pairs.first(where: { ($0.1 ?? 0) != ($0.2 ?? 0) }) {
                    add(.feeMismatch, reference, expected: String(wrong.1 ?? 0), actual: String(wrong.2 ?? 0), "\(wrong.0) differs from the contract")
                    continue
                }
            }
            if let violation = SettlementConservation.lineViolation(line) {
                add(.feeMismatch, reference, violation)
                continue
            }
            matched += 1
        }
        let later = laterLines.map { Set($0.map(\.modificationMerchantReference)) }
        for item in items where !seen.contains(item.modificationReference) {
            let amount = String(item.amount.minorUnits)
            if let later, !later.contains(item.modificationReference) {
                add(.missingAtAcquirer, item.modificationReference, expected: amount, "absent from this report and the next")
            } else {
                add(.timing, item.modificationReference, expected: amount,
                    later == nil ? "absent from this report; expected in the next batch" : "settled in the next batch")
            }
        }
        if let payout = payoutLines.first {
            let payoutUnits = -payout.signedNetMinorUnits  // the payout line is a net debit
            if let violation = SettlementConservation.payoutViolation(lines: lines, payout: Money(minorUnits: payoutUnits, currency: currency)) {
                add(.payoutMismatch, payout.modificationReference, actual: String(payoutUnits), violation)
            }
        } else {
            add(.payoutMismatch, batchID, "the report has no payout line")
        }
        return ReconciliationRecorded(batchID: batchID, windowClosed: laterLines != nil, reportLines: lines.count,
                                      ledgerItems: items.count, matched: matched, breaks: breaks)
    }
}
