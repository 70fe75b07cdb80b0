import LedgerAcquirerAPI
import LedgerCore

import struct Foundation.Date

/// A settlement batch being settled page by page (``AcquirerModelState/beginSettlement(_:now:)``): what
/// checking and pricing its items needs — the references seen, the running count and fingerprint,
/// the running payout — never the items or the lines themselves. So a batch of a million items is
/// settled holding one page at a time, and the outcome is the same bytes whatever the page size.
public struct BatchSettlement: Sendable {
    public let header: SettlementBatchHeader
    let now: Date
    /// The batch already settled under this reference (answered again, or refused as different).
    let existing: Int?
    let schedule: PricingSchedule?
    let batchCounter: UInt64
    /// The number the batch gets (for an existing batch: the one it got).
    public let batchNumber: Int
    var seen: Set<String> = []
    var itemCount = 0
    var fingerprint = StoredBatch.fingerprintBasis
    var payoutUnits: Int64 = 0
    /// Report lines handed out so far (the payout line not included).
    public private(set) var lineCount = 0
    var stage = Stage.checking

    enum Stage { case checking, settling, finished }

    /// True when a batch under this reference was settled before: its pages are only compared with that batch's
    /// (``AcquirerModelState/check(_:in:)``), nothing is looked up, and it is answered (or refused) as before.
    public var repeatsABatch: Bool { existing != nil }

    mutating func emitted(_ count: Int) { lineCount += count }

    /// The merchant account the batch settles under: the one its header names, else the model's.
    func merchantAccount(_ configuration: AcquirerModelConfiguration) -> String {
        header.merchantAccount ?? configuration.merchantAccount
    }

    /// `lines` as this batch reports them: under its merchant account.
    func stamped(_ lines: [SettlementReportLine]) -> [SettlementReportLine] {
        guard let account = header.merchantAccount else { return lines }
        return lines.map { line in
            var line = line
            line.merchantAccount = account
            return line
        }
    }
}

/// What ``AcquirerModelState/startSettling(_:)`` found once every page was checked.
public enum SettlementStart: Sendable {
    /// The same batch was settled before: its receipt again, nothing changes.
    case settledBefore(SettlementReceipt)
    /// The batch settles now; these are its first lines (those held back from earlier batches).
    case settling(carriedOver: [SettlementReportLine])
}

extension AcquirerModelState {
    /// Settles a batch closed at `now`: validates every item against what the model recorded, prices
    /// each line, applies the seeded fault knobs, and returns the report ending with its
    /// MerchantPayout line. Idempotent by batch reference.
    ///
    /// The business date is the request's, else follows the cut-off (at or after it: the next business day); the payout's
    /// value date is that date plus the funding lag in business days. Lines held back by the
    /// move-to-next-batch fault come first, renumbered into this batch.
    ///
    /// The whole batch as one page of ``beginSettlement(_:now:)`` … ``finishSettling(_:keeping:)``,
    /// the report's lines kept in the state (the in-process model; the acquirer service keeps them in
    /// its tables instead).
    public mutating func submitBatch(_ request: SettlementBatchRequest, now: Date) throws(AcquirerError) -> SettlementReport {
        var settlement = try beginSettlement(request.header, now: now)
        try check(request.items, in: &settlement)
        var lines: [SettlementReportLine]
        switch try startSettling(&settlement) {
        case .settledBefore:
            guard let index = settlement.existing else { throw AcquirerError(.invalidRequest, "a settled batch went missing") }
            return batches[index].report
        case .settling(let carried):
            lines = carried
        }
        lines += settlePage(request.items, in: &settlement)
        _ = finishSettling(settlement, keeping: lines)
        return batches[batches.count - 1].report
    }

    /// Starts settling the batch `header` names at `now` (its items follow in pages: ``check(_:in:)`` for
    /// every page, then ``startSettling(_:)``, ``settlePage(_:in:)`` for every page again, in the same
    /// order, and ``finishSettling(_:keeping:)``). Changes nothing but the expiries due at `now`.
    public mutating func beginSettlement(_ header: SettlementBatchHeader, now: Date) throws(AcquirerError) -> BatchSettlement {
        expireHolds(now: now)
        let batchReference = header.batchReference
        try AcquirerReferences.check(batch: batchReference)
        if let index = batches.firstIndex(where: { $0.header.batchReference == batchReference }) {
            return BatchSettlement(
                header: header,
                now: now,
                existing: index,
                schedule: nil,
                batchCounter: counters.batch,
                batchNumber: batches[index].report.batchNumber
            )
        }
        guard let schedule = configuration.pricing.first(where: { $0.currency == header.currency }) else {
            throw AcquirerError(.currencyMismatch, reference: batchReference, "no pricing for \(header.currency.code)")
        }
        let batchCounter = counters.batch + 1
        return BatchSettlement(
            header: header,
            now: now,
            existing: nil,
            schedule: schedule,
            batchCounter: batchCounter,
            batchNumber: Self.batchNumber(seed: seed, counter: batchCounter)
        )
    }

    /// Checks one page of the batch's items (in order) against what the model recorded, before
    /// anything changes: listed once, in the batch's currency, an approved capture or refund of that
    /// amount on that payment, not settled yet, and priceable.
    public func check(_ items: [SettlementItem], in settlement: inout BatchSettlement) throws(AcquirerError) {
        guard settlement.stage == .checking else { throw AcquirerError(.invalidRequest, "the batch's pages were already checked") }
        _ = try checkItems(items, in: &settlement)
    }

    /// ``check(_:in:)`` and ``settlePage(_:in:)`` of one page in a single pass, for a new batch (not
    /// ``BatchSettlement/repeatsABatch``) once ``startSettling(_:)`` began it before any page was checked: what the acquirer
    /// service does, so that a page is read and its payments put back once, not twice (issue 57). A page is checked
    /// exactly as in two passes — the pages settled before it change nothing its items are checked against (a
    /// modification they settle is one listed before, refused as listed twice) — but a refusal on a later page comes
    /// after the earlier pages changed the state: the caller must undo them (keep the state from before
    /// ``startSettling(_:)`` and go back to it, with whatever it stored), as the service does.
    public mutating func checkAndSettlePage(
        _ items: [SettlementItem],
        in settlement: inout BatchSettlement
    ) throws(AcquirerError) -> [SettlementReportLine] {
        guard settlement.stage == .settling, settlement.existing == nil else {
            throw AcquirerError(.invalidRequest, "a page is checked while settling only in a new batch that is settling")
        }
        // Each item priced once: settling a page changes no price (a hold's network and funding, a modification's
        // answer), so the line checked is the line settled.
        let lines = try checkItems(items, in: &settlement)
        return settlePage(items, priced: lines, in: &settlement)
    }

    /// The checks of ``check(_:in:)``, in any stage; the priced line of each item (none for a repeated batch).
    private func checkItems(_ items: [SettlementItem], in settlement: inout BatchSettlement) throws(AcquirerError) -> [SettlementReportLine] {
        settlement.itemCount += items.count
        settlement.fingerprint = StoredBatch.fingerprint(items, from: settlement.fingerprint)
        guard settlement.existing == nil, let schedule = settlement.schedule else { return [] }
        let currency = settlement.header.currency
        var lines: [SettlementReportLine] = []
        lines.reserveCapacity(items.count)
        for item in items {
            let reference = item.modificationReference
            guard settlement.seen.insert(reference).inserted else {
                throw AcquirerError(.duplicateReference, reference: reference, "item listed twice in the batch")
            }
            guard item.amount.currency == currency else {
                throw AcquirerError(.currencyMismatch, reference: reference, "\(item.amount.currency.code) item in a \(currency.code) batch")
            }
            lines.append(try priced(item, schedule: schedule, batchNumber: settlement.batchNumber))
        }
        return lines
    }

    /// Once every page is checked: the earlier answer for a batch settled before (refused when its
    /// items differ), else the batch's number is taken and the lines held back from earlier batches
    /// come first.
    public mutating func startSettling(_ settlement: inout BatchSettlement) throws(AcquirerError) -> SettlementStart {
        guard settlement.stage == .checking else { throw AcquirerError(.invalidRequest, "the batch is already settling") }
        if let index = settlement.existing {
            let existing = batches[index]
            guard existing.header == settlement.header, existing.itemCount == settlement.itemCount,
                existing.itemsFingerprint == settlement.fingerprint
            else {
                throw AcquirerError(
                    .duplicateReference,
                    reference: settlement.header.batchReference,
                    "batch reference already used for a different batch"
                )
            }
            settlement.stage = .finished
            return .settledBefore(existing.receipt)
        }
        settlement.stage = .settling
        counters.batch = settlement.batchCounter
        var lines: [SettlementReportLine] = []
        for carried in carriedOver {
            var line = carried.line
            line.batchNumber = settlement.batchNumber
            lines.append(line)
            modifications[carried.modificationReference]?.carriedOver = false
            modifications[carried.modificationReference]?.settledInBatch = settlement.batchNumber
        }
        carriedOver = []
        // The chargebacks raised by now are debited in this batch.
        lines += chargebackLines(batchNumber: settlement.batchNumber, currency: settlement.header.currency, now: settlement.now)
        settlement.payoutUnits += lines.reduce(Int64(0)) { $0 + $1.signedNetMinorUnits }
        settlement.emitted(lines.count)
        return .settling(carriedOver: settlement.stamped(lines))
    }

    /// The business day a batch settles: the one it names (or the next business day), else the one whose
    /// cut-off closes at its submission.
    func businessDate(of settlement: BatchSettlement) -> BusinessDate {
        settlement.header.businessDate.map { configuration.calendar.businessDay(onOrAfter: $0) }
            ?? configuration.cutOff.businessDate(closingAt: settlement.now, calendar: configuration.calendar)
    }

    /// Settles one checked page (the same pages in the same order as checked): each item's line
    /// through the fault knobs, in order. Returns the page's report lines.
    public mutating func settlePage(_ items: [SettlementItem], in settlement: inout BatchSettlement) -> [SettlementReportLine] {
        settlePage(items, priced: nil, in: &settlement)
    }

    /// ``settlePage(_:in:)``, with each item's line as ``checkItems(_:in:)`` priced it when given (`priced[i]` is
    /// `items[i]`'s).
    private mutating func settlePage(
        _ items: [SettlementItem],
        priced checked: [SettlementReportLine]?,
        in settlement: inout BatchSettlement
    ) -> [SettlementReportLine] {
        guard settlement.stage == .settling, let schedule = settlement.schedule else { return [] }
        let batchNumber = settlement.batchNumber
        let faults = configuration.faults
        var lines: [SettlementReportLine] = []
        lines.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            // Checked before anything changed, and nothing a page changes affects another item's price.
            guard let original = checked?[index] ?? (try? priced(item, schedule: schedule, batchNumber: batchNumber, checkSettled: false))
            else { continue }
            let reference = item.modificationReference
            func record(_ kind: FaultKind) {
                injectedFaults.append(InjectedFault(kind: kind, batchNumber: batchNumber, reference: reference))
            }
            if faults.moveToNextBatch.fires(for: reference, random: &random) {
                record(.moveToNextBatch)
                carriedOver.append(CarriedLine(modificationReference: reference, line: original))
                modifications[reference]?.carriedOver = true
                continue
            }
            if faults.dropLine.fires(for: reference, random: &random) {
                record(.dropLine)
                continue
            }
            var line = original
            if faults.alterAmount.fires(for: reference, random: &random) {
                record(.alterAmount)
                Self.shift(&line, grossByMinorUnits: 1)
            }
            if faults.alterFee.fires(for: reference, random: &random) {
                record(.alterFee)
                Self.raiseFee(&line)
            }
            lines.append(line)
            if faults.duplicateLine.fires(for: reference, random: &random) {
                record(.duplicateLine)
                lines.append(line)
            }
            modifications[reference]?.settledInBatch = batchNumber
            drawDispute(for: item, businessDate: businessDate(of: settlement))
        }
        settlement.payoutUnits += lines.reduce(Int64(0)) { $0 + $1.signedNetMinorUnits }
        settlement.emitted(lines.count)
        return settlement.stamped(lines)
    }

    /// Closes the batch after its last page: the payout (through the short-pay knob) and the batch
    /// recorded. `kept`: every line handed out for it, when the state is to keep the report's lines
    /// (the payout line is added); nil when the caller keeps them elsewhere (then the state remembers
    /// only how many there are). Returns the receipt and the MerchantPayout line, the report's last.
    @discardableResult
    public mutating func finishSettling(
        _ settlement: BatchSettlement,
        keeping kept: [SettlementReportLine]?
    ) -> (receipt: SettlementReceipt, payoutLine: SettlementReportLine) {
        let request = settlement.header
        let now = settlement.now
        let businessDate = businessDate(of: settlement)
        var payoutUnits = settlement.payoutUnits
        let faults = configuration.faults
        if faults.shortPayPayout.fires(for: request.batchReference, random: &random) {
            injectedFaults.append(InjectedFault(kind: .shortPayPayout, batchNumber: settlement.batchNumber, reference: request.batchReference))
            payoutUnits -= faults.shortPaymentMinorUnits
        }
        counters.payout += 1
        let payout = PayoutNotice(
            payoutReference: DerivedIdentifier.payoutReference.hex(seed: seed, counter: counters.payout),
            batchNumber: settlement.batchNumber,
            merchantAccount: settlement.merchantAccount(configuration),
            valueDate: configuration.calendar.adding(businessDays: configuration.fundingLagBusinessDays, to: businessDate),
            amount: Money(minorUnits: payoutUnits, currency: request.currency)
        )
        let payoutLine = settlement.stamped(
            [
                SettlementLines.payoutLine(
                    payout: payout,
                    batchReference: request.batchReference,
                    closedAt: now,
                    configuration: configuration
                )
            ]
        )[0]
        let lineCount = settlement.lineCount + 1
        let report = SettlementReport(
            batchReference: request.batchReference,
            batchNumber: settlement.batchNumber,
            companyAccount: configuration.companyAccount,
            merchantAccount: settlement.merchantAccount(configuration),
            businessDate: businessDate,
            closedAt: now,
            currency: request.currency,
            lines: kept.map { $0 + [payoutLine] } ?? [],
            payout: payout
        )
        let stored = StoredBatch(
            header: request,
            itemCount: settlement.itemCount,
            itemsFingerprint: settlement.fingerprint,
            report: report,
            releasedLineCount: kept == nil ? lineCount : nil
        )
        batches.append(stored)
        return (stored.receipt, payoutLine)
    }

    /// The priced line of `item`, or why it cannot be settled (checked in this order): unknown,
    /// not matching the recorded capture or refund, already settled (`checkSettled`), unpriceable.
    private func priced(
        _ item: SettlementItem,
        schedule: PricingSchedule,
        batchNumber: Int,
        checkSettled: Bool = true
    ) throws(AcquirerError) -> SettlementReportLine {
        let reference = item.modificationReference
        guard let stored = modifications[reference], let hold = holds[stored.record.authorizationReference] else {
            throw AcquirerError(.unknownReference, reference: reference, "no capture or refund with this reference")
        }
        let expectedKind: ModificationKind = item.kind == .capture ? .capture : .refund
        guard stored.record.kind == expectedKind, stored.response.responseCode.isApproved,
            stored.record.authorizationReference == item.authorizationReference,
            stored.response.amount == item.amount
        else {
            throw AcquirerError(
                .settlementMismatch,
                reference: reference,
                "item does not match the recorded \(stored.record.kind.rawValue) of \(stored.response.amount)"
            )
        }
        if checkSettled {
            guard stored.settledInBatch == nil, !stored.carriedOver else {
                throw AcquirerError(.alreadySettled, reference: reference, "already settled or in a batch")
            }
        }
        do {
            return try SettlementLines.line(
                for: item,
                modification: stored.response,
                hold: hold,
                schedule: schedule,
                configuration: configuration,
                batchNumber: batchNumber
            )
        } catch {
            throw AcquirerError(.invalidAmount, reference: reference, "pricing failed: \(error)")
        }
    }

    /// Lines `from ..< from + count` of a settled batch's report (one whose lines the state kept).
    public func reportLines(batchNumber: Int, from: Int, count: Int) throws(AcquirerError) -> [SettlementReportLine] {
        guard let batch = batches.first(where: { $0.report.batchNumber == batchNumber }) else {
            throw AcquirerError(.unknownBatch, reference: String(batchNumber), "no settled batch with this number")
        }
        guard from >= 0, count >= 0 else { throw AcquirerError(.invalidRequest, "a report page starts at 0 or later") }
        guard batch.releasedLineCount == nil else {
            throw AcquirerError(.unavailable, reference: String(batchNumber), "the batch's report lines are kept outside the model")
        }
        let lines = batch.report.lines
        let start = min(from, lines.count)
        return Array(lines[start..<min(lines.count, start + count)])
    }

    /// True when batch `batchNumber` was settled with its report lines kept outside the state
    /// (``finishSettling(_:keeping:)`` with nil); nil when there is no such batch.
    public func reportLinesReleased(batchNumber: Int) -> Bool? {
        batches.first(where: { $0.report.batchNumber == batchNumber }).map { $0.releasedLineCount != nil }
    }

    /// Puts the report lines kept outside back into the state (all of them, payout line included),
    /// as if the batch had been settled keeping them: for comparing a state with the in-process model's.
    public mutating func restoreReportLines(batchNumber: Int, _ lines: [SettlementReportLine]) {
        guard let index = batches.firstIndex(where: { $0.report.batchNumber == batchNumber }),
            batches[index].releasedLineCount == lines.count
        else { return }
        batches[index].report.lines = lines
        batches[index].releasedLineCount = nil
    }

    /// The numbers of the batches whose report lines are kept outside the state.
    public var batchesWithReleasedLines: [Int] { batches.filter { $0.releasedLineCount != nil }.map(\.report.batchNumber) }

    /// The payout (bank deposit) of a settled batch.
    public func payout(batchNumber: Int) throws(AcquirerError) -> PayoutNotice {
        guard let batch = batches.first(where: { $0.report.batchNumber == batchNumber }) else {
            throw AcquirerError(.unknownBatch, reference: String(batchNumber), "no settled batch with this number")
        }
        return batch.report.payout
    }

    /// Batch numbers count up from a seed-derived start (1 000 000 … 9 999 999 + n), so two seeds
    /// give different numbers while numbers within one model stay ordered.
    static func batchNumber(seed: UInt64, counter: UInt64) -> Int {
        Int(1_000_000 + DerivedIdentifier.batchNumber.value(seed: seed, counter: 0) % 8_000_000 + counter)
    }

    /// The alter-amount fault: gross and net both move by `units` (fees stay as priced).
    static func shift(_ line: inout SettlementReportLine, grossByMinorUnits units: Int64) {
        guard let currency = line.grossCurrency else { return }
        let gross = Money(minorUnits: line.signedGrossMinorUnits + (line.type == .refunded ? -units : units), currency: currency)
        let net = Money(minorUnits: line.signedNetMinorUnits + (line.type == .refunded ? -units : units), currency: line.netCurrency ?? currency)
        (line.grossDebit, line.grossCredit) = SettlementLines.split(gross)
        (line.netDebit, line.netCredit) = SettlementLines.split(net)
    }

    /// The alter-fee fault: interchange (or the commission when blended) one minor unit higher, net one lower.
    static func raiseFee(_ line: inout SettlementReportLine) {
        guard let currency = line.netCurrency else { return }
        let one = Money(minorUnits: 1, currency: currency)
        if let interchange = line.interchange {
            line.interchange = (try? interchange.adding(one)) ?? interchange
        } else if let commission = line.commission {
            line.commission = (try? commission.adding(one)) ?? commission
        } else {
            line.markup = Money(minorUnits: (line.markup?.minorUnits ?? 0) + 1, currency: currency)
        }
        (line.netDebit, line.netCredit) = SettlementLines.split(Money(minorUnits: line.signedNetMinorUnits - 1, currency: currency))
    }
}
