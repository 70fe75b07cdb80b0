import LedgerMacros

// Reconciliation of a settlement batch: the acquirer's report against the batch's ledger
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
    /// A report record of a type no mapping knows: kept as a break of its own, never dropped.
    case unmappedRecord = "unmapped_record"
}

/// One break. `breakID` is stable for the same finding of the same report: `<batch id>.<class>.<reference>`
/// for the acquirer's own report, `<batch id>.<report key>.<class>.<reference>` for an uploaded one (each
/// upload is a reconciliation of its own, with its own breaks and resolutions).
///
/// `expected` and `actual` are recorded as the tally states them: minor units for the classes that
/// compare money (``carriesAmounts``), counts, currency codes or line types for the others. The API
/// shows money as decimal strings through ``figure(_:in:)``.
public struct ReconciliationBreak: Hashable, Sendable, Codable {
    public var breakID: String
    public var breakClass: BreakClass
    /// Our modification reference, else the acquirer's reference, else the payout reference.
    public var reference: String
    public var expected: String?
    public var actual: String?
    public var detail: String
    /// The currency of `expected` and `actual` when it is not the batch's (a line or payout in another settlement
    /// currency, issue 52); nil: the batch's. Absent from events recorded before it existed.
    public var currency: Currency?

    public init(
        batchID: String,
        report: String? = nil,
        breakClass: BreakClass,
        reference: String,
        expected: String?,
        actual: String?,
        detail: String,
        currency: Currency? = nil
    ) {
        self.breakID = "\(batchID).\(report.map { $0 + "." } ?? "")\(breakClass.rawValue).\(reference)"
        self.breakClass = breakClass
        self.reference = reference
        self.expected = expected
        self.actual = actual
        self.detail = detail
        self.currency = currency
    }

    enum CodingKeys: String, CodingKey {
        case breakID = "break_id"
        case breakClass = "class"
        case reference, expected, actual, detail, currency
    }

    /// Whether `expected` and `actual` are amounts in minor units (else counts, codes or line types).
    public var carriesAmounts: Bool {
        switch breakClass {
        case .missingInLedger, .missingAtAcquirer, .amountMismatch, .feeMismatch, .timing, .unmatchedAdjustment, .payoutMismatch,
            .unmappedRecord:
            true
        case .currencyMismatch, .duplicate, .statusMismatch: false
        }
    }

    /// `expected` or `actual` as the API shows it: an amount as a decimal string in the break's own currency, else
    /// `currency` (the batch's) (``Money/decimalString``), anything else as recorded.
    public func figure(_ value: String?, in currency: Currency) -> String? {
        guard let value, carriesAmounts, let units = Int64(value) else { return value }
        return Money(minorUnits: units, currency: self.currency ?? currency).decimalString
    }
}

/// The money the ledger's disputes on one payment moved, in minor units (each positive): what
/// the report's chargeback lines (debits) and reversal lines (credits) are matched against.
public struct DisputeMoney: Hashable, Sendable {
    public var debits: [Int64]
    public var credits: [Int64]

    public init(debits: [Int64] = [], credits: [Int64] = []) {
        self.debits = debits
        self.credits = credits
    }

    /// The movements of the disputes' events, keyed by the disputed payment's acquirer reference.
    public static func of(_ events: [DisputeEvent]) -> [String: DisputeMoney] {
        var psp: [String: String] = [:]
        var money: [String: DisputeMoney] = [:]
        for event in events {
            switch event {
            case .inquiryRaised(let e): psp[e.disputeID] = e.pspReference
            case .chargeback(let e):
                psp[e.disputeID] = e.pspReference
                money[e.pspReference, default: DisputeMoney()].debits.append(e.amount.minorUnits)
            case .secondChargeback(let e):
                if let p = psp[e.disputeID] { money[p, default: DisputeMoney()].debits.append(e.amount.minorUnits) }
            case .reversed(let e):
                if let p = psp[e.disputeID] { money[p, default: DisputeMoney()].credits.append(e.amount.minorUnits) }
            case .closed(let e):
                guard let p = psp[e.disputeID] else { continue }
                if !e.debited.isZero { money[p, default: DisputeMoney()].debits.append(e.debited.minorUnits) }
                if !e.credited.isZero { money[p, default: DisputeMoney()].credits.append(e.credited.minorUnits) }
            case .defenseSubmitted, .secondPresentment, .preArbitration: continue
            }
        }
        return money
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

/// A batch's reconciliation result against one report: the acquirer's own (`report` nil) or an
/// operator's upload (`report` its key, `upload-<SHA-256 of the bytes>`). Schema 2 added `report`;
/// schema 1 results are the acquirer's.
@MemberwiseInit
public struct ReconciliationRecorded: LedgerEventPayload {
    public static let eventType = "ReconciliationRecorded"
    public static let schemaVersion: Int32 = 2
    public static let eventKind = EventKind.reconciliationRecorded

    public var batchID: String
    /// Whether the next batch's report was known (absent items are then final breaks, not timing).
    public var windowClosed: Bool
    public var reportLines: Int
    public var ledgerItems: Int
    public var matched: Int
    public var breaks: [ReconciliationBreak]
    /// The uploaded report's key; nil for the acquirer's own report.
    public var report: String?
    /// The report's lines that settle an item of another batch (carried over from it): counted here, not as matched
    /// (that batch's `timing` break is what the line explains, and this report resolves it). Nil when there are none,
    /// as in the results recorded before it existed.
    public var carried: Int?

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case windowClosed = "window_closed"
        case reportLines = "report_lines"
        case ledgerItems = "ledger_items"
        case matched, breaks, report, carried
    }
}

/// A break found for the first time (appended with the result that lists it), so that each break
/// is an event of its own an operator's resolution can follow.
@MemberwiseInit
public struct ReconciliationBreakFound: LedgerEventPayload {
    public static let eventType = "ReconciliationBreakFound"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.reconciliationBreakFound

    public var batchID: String
    public var found: ReconciliationBreak

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case found = "break"
    }
}

/// A break resolved, with a reason: by an operator, or by the reconciliation when a later report explains it
/// (`report` and `reportSHA256` name that file; absent for an operator's resolution and in earlier events).
@MemberwiseInit
public struct ReconciliationBreakResolved: LedgerEventPayload {
    public static let eventType = "ReconciliationBreakResolved"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.reconciliationBreakResolved

    public var batchID: String
    public var breakID: String
    public var reason: String
    public var resolvedBy: String
    /// The report that explained the break: a batch's own report (its batch id) or an upload (`upload-<SHA-256>`).
    public var report: String?
    /// That report's SHA-256 (lower-case hex).
    public var reportSHA256: String?

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case breakID = "break_id"
        case reason
        case resolvedBy = "resolved_by"
        case report
        case reportSHA256 = "report_sha256"
    }
}

public enum Reconciliation {
    public static func streamID(batchID: String) -> StreamID { StreamID(category: "reconciliation", id: batchID) }

    /// Classifies every report line and every ledger item of one batch, all in memory (the tally
    /// below, fed from arrays).
    /// - Parameters:
    ///   - items: the batch's ledger items.
    ///   - lines: the batch's report lines, ending with the MerchantPayout line.
    ///   - laterLines: the next batch's report lines, once known (closes the window).
    ///   - settledElsewhere: our references that are items of other batches (a line for one was carried).
    ///   - expectedFees: the contract's fees for a line of an item, or nil when they cannot be computed.
    public static func reconcile(
        batchID: String,
        currency: Currency,
        items: [SettlementBatchItem],
        lines: [SettlementReportLine],
        laterLines: [SettlementReportLine]?,
        settledElsewhere: Set<String>,
        disputes: [String: DisputeMoney] = [:],
        report: String? = nil,
        expectedFees: (SettlementReportLine, SettlementBatchItem) -> ExpectedFees?
    ) -> ReconciliationRecorded {
        var tally = ReconciliationTally(batchID: batchID, currency: currency, report: report)
        let byOurs = Dictionary(items.map { ($0.modificationReference, $0) }, uniquingKeysWith: { a, _ in a })
        let byPSP = Dictionary(items.map { ($0.pspModificationReference, $0) }, uniquingKeysWith: { a, _ in a })
        var seen: Set<String> = []
        for line in lines {
            let item = byOurs[line.modificationMerchantReference] ?? byPSP[line.modificationReference]
            let duplicate = item.map { !seen.insert($0.modificationReference).inserted } ?? false
            tally.add(
                line,
                item: item,
                duplicate: duplicate,
                settledElsewhere: settledElsewhere.contains(line.modificationMerchantReference),
                expectedFees: item.flatMap { expectedFees(line, $0) },
                dispute: disputes[line.pspReference]
            )
        }
        let later = laterLines.map { Set($0.map(\.modificationMerchantReference)) }
        for item in items where !seen.contains(item.modificationReference) {
            tally.absent(item, inLaterReport: later.map { $0.contains(item.modificationReference) })
        }
        return tally.result(windowClosed: laterLines != nil, ledgerItems: items.count)
    }
}

/// One batch's reconciliation, fed one report line and one absent ledger item at a time as they
/// stream from the database, so that memory holds the breaks, not the batch.
public struct ReconciliationTally: Sendable {
    public let batchID: String
    public let currency: Currency
    /// The uploaded report's key (nil: the acquirer's own report); it scopes the break ids.
    public let report: String?
    private var breaks: [ReconciliationBreak] = []
    private var breakIDs: Set<String> = []
    private var matched = 0
    private var carried = 0
    private var reportLines = 0
    /// Per settlement currency (a line's net currency): Σ of the lines' nets, and the payout lines (a batch
    /// settled in two currencies has a payout line for each).
    private var nets: [Currency: Int64] = [:]
    private var payouts: [Currency: (units: Int64, reference: String)] = [:]

    public init(batchID: String, currency: Currency, report: String? = nil) {
        self.batchID = batchID
        self.currency = currency
        self.report = report
    }

    private mutating func add(
        _ c: BreakClass,
        _ reference: String,
        expected: String? = nil,
        actual: String? = nil,
        in amountCurrency: Currency? = nil,
        _ detail: String
    ) {
        let b = ReconciliationBreak(
            batchID: batchID,
            report: report,
            breakClass: c,
            reference: reference,
            expected: expected,
            actual: actual,
            detail: detail,
            // Named only when it is not the batch's, so the breaks of one-currency batches are recorded as before.
            currency: amountCurrency == currency ? nil : amountCurrency
        )
        if breakIDs.insert(b.breakID).inserted { breaks.append(b) }
    }

    /// The next report line (in report order).
    /// - Parameters:
    ///   - item: the batch's ledger item the line names (by our reference, else the acquirer's), if any.
    ///   - duplicate: an earlier line of the report already named that item.
    ///   - settledElsewhere: the line's reference is an item of another batch (its line was carried over).
    ///   - expectedFees: the contract's fees for the line, when they can be computed.
    public mutating func add(
        _ line: SettlementReportLine,
        item: SettlementBatchItem?,
        duplicate: Bool,
        settledElsewhere: Bool,
        expectedFees: ExpectedFees?,
        dispute: DisputeMoney? = nil
    ) {
        reportLines += 1
        let kind = SettlementRecordKind(adyenType: line.type)
        let settlement = line.netCurrency ?? line.grossCurrency ?? currency
        if kind == .payout {
            // The payout line is a net debit; two payout lines of one currency are one payout paid in two parts.
            let earlier = payouts[settlement]
            payouts[settlement] = ((earlier?.units ?? 0) - line.signedNetMinorUnits, earlier?.reference ?? line.modificationReference)
            return
        }
        nets[settlement, default: 0] += line.signedNetMinorUnits
        if kind == .lifecycle {
            matched += 1  // a status record: nothing settled, nothing to match
            return
        }
        if kind == .chargeback || kind == .secondChargeback || kind == .chargebackReversed {
            addDispute(line, kind: kind, recorded: dispute)
            return
        }
        if kind == .unmapped {
            add(
                .unmappedRecord,
                line.modificationReference.isEmpty ? line.pspReference : line.modificationReference,
                actual: String(line.signedNetMinorUnits),
                in: settlement,
                "a \(line.type) record no mapping knows"
            )
            return
        }
        guard kind == .capture || kind == .refund else {
            let booking = SettlementBooking(adyenType: line.type)
            add(
                .unmatchedAdjustment,
                line.modificationReference.isEmpty ? line.pspReference : line.modificationReference,
                actual: String(line.signedNetMinorUnits),
                in: settlement,
                "a \(line.type) line the ledger has no item for (\(booking.rawValue): book against "
                    + "\(booking.account.map { "\($0.code) \($0.name)" } ?? "nothing"))"
            )
            return
        }
        guard let item else {
            let ours = line.modificationMerchantReference
            if settledElsewhere {
                // Carried over from another batch: counted as such (that batch's timing break is what it explains),
                // not as an item of this one.
                carried += 1
                return
            }
            add(
                .missingInLedger,
                ours.isEmpty ? line.modificationReference : ours,
                actual: String(line.signedGrossMinorUnits),
                in: line.grossCurrency ?? settlement,
                "the report settles a \(line.type) the ledger has not recorded"
            )
            return
        }
        let reference = item.modificationReference
        if duplicate {
            add(.duplicate, reference, expected: "1", actual: "2", "the report settles this \(item.kind.rawValue) more than once")
            return
        }
        // The gross is in the item's (presentment) currency; the net may be in another (its settlement currency).
        if line.grossCurrency != item.amount.currency {
            add(.currencyMismatch, reference, expected: item.amount.currency.code, actual: line.grossCurrency?.code ?? "", "gross currency differs")
            return
        }
        let expectedType: SettlementLineType = item.kind == .capture ? .settled : .refunded
        if kind != (item.kind == .capture ? .capture : .refund) {
            add(
                .statusMismatch,
                reference,
                expected: expectedType.rawValue,
                actual: line.type.rawValue,
                "the ledger recorded a \(item.kind.rawValue)"
            )
            return
        }
        let signedExpected = item.kind == .capture ? item.amount.minorUnits : -item.amount.minorUnits
        if line.signedGrossMinorUnits != signedExpected {
            add(
                .amountMismatch,
                reference,
                expected: String(signedExpected),
                actual: String(line.signedGrossMinorUnits),
                "gross differs from the ledger"
            )
            return
        }
        if let fees = expectedFees {
            let pairs: [(String, Int64?, Int64?)] = [
                ("interchange", fees.interchange, line.interchange?.minorUnits), ("scheme_fees", fees.schemeFees, line.schemeFees?.minorUnits),
                ("markup", fees.markup, line.markup?.minorUnits), ("commission", fees.commission, line.commission?.minorUnits),
            ]
            if let wrong = pairs.first(where: { ($0.1 ?? 0) != ($0.2 ?? 0) }) {
                add(
                    .feeMismatch,
                    reference,
                    expected: String(wrong.1 ?? 0),
                    actual: String(wrong.2 ?? 0),
                    in: settlement,
                    "\(wrong.0) differs from the contract"
                )
                return
            }
        }
        if let violation = SettlementConservation.lineViolation(line) {
            add(.feeMismatch, reference, violation)
            return
        }
        matched += 1
    }

    /// A chargeback, second chargeback or reversal line against the money the ledger's disputes on
    /// the line's payment (`Psp Reference`) moved: matched when the ledger recorded a movement of
    /// that direction and amount not already matched by an earlier line of this report.
    private mutating func addDispute(_ line: SettlementReportLine, kind: SettlementRecordKind, recorded: DisputeMoney?) {
        let reference = line.modificationReference.isEmpty ? line.pspReference : line.modificationReference
        let credit = kind == .chargebackReversed
        let gross = line.signedGrossMinorUnits
        guard let recorded, !(credit ? recorded.credits : recorded.debits).isEmpty else {
            add(
                .missingInLedger,
                reference,
                actual: String(gross),
                "the report has a \(line.type) on payment \(line.pspReference) the ledger has no dispute for"
            )
            return
        }
        let amounts = credit ? recorded.credits : recorded.debits
        let key = (credit ? "+" : "-") + line.pspReference
        let used = disputeLinesMatched[key, default: 0]
        let expected = credit ? amounts[min(used, amounts.count - 1)] : -amounts[min(used, amounts.count - 1)]
        if used >= amounts.count {
            add(
                .duplicate,
                reference,
                expected: String(amounts.count),
                actual: String(used + 1),
                "more \(line.type) lines than the ledger's dispute recorded"
            )
            return
        }
        if gross != expected {
            add(.amountMismatch, reference, expected: String(expected), actual: String(gross), "the \(line.type) differs from the ledger's dispute")
            return
        }
        disputeLinesMatched[key] = used + 1
        matched += 1
    }

    private var disputeLinesMatched: [String: Int] = [:]

    /// A ledger item of the batch that no report line names; `inLaterReport` is nil while the next
    /// batch's report is unknown (the window is open).
    public mutating func absent(_ item: SettlementBatchItem, inLaterReport: Bool?) {
        let amount = String(item.amount.minorUnits)
        if inLaterReport == false {
            add(.missingAtAcquirer, item.modificationReference, expected: amount, "absent from this report and the next")
        } else {
            add(
                .timing,
                item.modificationReference,
                expected: amount,
                inLaterReport == nil ? "absent from this report; expected in the next batch" : "settled in the next batch"
            )
        }
    }

    /// The result, with the payout check (Σ line nets = payout) once every line is in.
    public func result(windowClosed: Bool, ledgerItems: Int) -> ReconciliationRecorded {
        var tally = self
        if payouts.isEmpty {
            tally.add(.payoutMismatch, batchID, "the report has no payout line")
        }
        // Each settlement currency's lines against its own payout line.
        for settlement in Set(nets.keys).union(payouts.keys).sorted(by: { $0.code < $1.code }) where !payouts.isEmpty {
            let net = nets[settlement] ?? 0
            let netText = Money(minorUnits: net, currency: settlement).decimalString
            guard let payout = payouts[settlement] else {
                if net != 0 {
                    let detail = "Σ line nets \(netText) \(settlement.code) and no payout line in \(settlement.code)"
                    tally.add(.payoutMismatch, "\(batchID).\(settlement.code)", actual: "0", in: settlement, detail)
                }
                continue
            }
            if net != payout.units {
                let amount = Money(minorUnits: payout.units, currency: settlement).decimalString
                let detail = "Σ line nets \(netText) \(settlement.code) ≠ payout \(amount) \(settlement.code)"
                tally.add(
                    .payoutMismatch,
                    payout.reference.isEmpty ? batchID : payout.reference,
                    actual: String(payout.units),
                    in: settlement,
                    detail
                )
            }
        }
        return ReconciliationRecorded(
            batchID: batchID,
            windowClosed: windowClosed,
            reportLines: reportLines,
            ledgerItems: ledgerItems,
            matched: matched,
            breaks: tally.breaks,
            report: report,
            carried: carried == 0 ? nil : carried
        )
    }

    /// Σ of the lines' nets and the payout, per settlement currency (the report as read so far).
    public var settlementTotals: [Currency: (net: Int64, payout: Int64?)] {
        var totals: [Currency: (net: Int64, payout: Int64?)] = [:]
        for settlement in Set(nets.keys).union(payouts.keys) { totals[settlement] = (nets[settlement] ?? 0, payouts[settlement]?.units) }
        return totals
    }
}
