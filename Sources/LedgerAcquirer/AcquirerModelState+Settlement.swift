import LedgerCore

import struct Foundation.Date

extension AcquirerModelState {
    /// Settles a batch closed at `now`: validates every item against what the model recorded, prices
    /// each line, applies the seeded fault knobs, and returns the report ending with its
    /// MerchantPayout line. Idempotent by batch reference.
    ///
    /// The business date is the request's, else follows the cut-off (at or after it: the next business day); the payout's
    /// value date is that date plus the funding lag in business days. Lines held back by the
    /// move-to-next-batch fault come first, renumbered into this batch.
    public mutating func submitBatch(_ request: SettlementBatchRequest, now: Date) throws(AcquirerError) -> SettlementReport {
        expireHolds(now: now)
        let batchReference = request.batchReference
        guard !batchReference.isEmpty else { throw AcquirerError(.invalidRequest, "empty batch reference") }
        if let existing = batches.first(where: { $0.header.batchReference == batchReference }) {
            guard existing.header == request.header, existing.itemCount == request.items.count,
                existing.itemsFingerprint == StoredBatch.fingerprint(request.items)
            else {
                throw AcquirerError(.duplicateReference, reference: batchReference, "batch reference already used for a different batch")
            }
            return existing.report
        }
        guard let schedule = configuration.pricing.first(where: { $0.currency == request.currency }) else {
            throw AcquirerError(.currencyMismatch, reference: batchReference, "no pricing for \(request.currency.code)")
        }

        // Validate everything before changing anything.
        var seen: Set<String> = []
        var priced: [(item: SettlementItem, line: SettlementReportLine)] = []
        let batchCounter = counters.batch + 1
        let batchNumber = Self.batchNumber(seed: seed, counter: batchCounter)
        for item in request.items {
            let reference = item.modificationReference
            guard seen.insert(reference).inserted else {
                throw AcquirerError(.duplicateReference, reference: reference, "item listed twice in the batch")
            }
            guard item.amount.currency == request.currency else {
                throw AcquirerError(.currencyMismatch, reference: reference, "\(item.amount.currency.code) item in a \(request.currency.code) batch")
            }
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
            guard stored.settledInBatch == nil, !stored.carriedOver else {
                throw AcquirerError(.alreadySettled, reference: reference, "already settled or in a batch")
            }
            do {
                let line = try SettlementLines.line(
                    for: item,
                    modification: stored.response,
                    hold: hold,
                    schedule: schedule,
                    configuration: configuration,
                    batchNumber: batchNumber
                )
                priced.append((item, line))
            } catch {
                throw AcquirerError(.invalidAmount, reference: reference, "pricing failed: \(error)")
            }
        }

        let businessDate =
            request.businessDate.map { configuration.calendar.businessDay(onOrAfter: $0) }
            ?? configuration.cutOff.businessDate(closingAt: now, calendar: configuration.calendar)

        // Lines held back from earlier batches first, then this batch's, each through the fault knobs.
        counters.batch = batchCounter
        var lines: [SettlementReportLine] = []
        for carried in carriedOver {
            var line = carried.line
            line.batchNumber = batchNumber
            lines.append(line)
            modifications[carried.modificationReference]?.carriedOver = false
            modifications[carried.modificationReference]?.settledInBatch = batchNumber
        }
        carriedOver = []
        let faults = configuration.faults
        for (item, original) in priced {
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
            drawDispute(for: item, businessDate: businessDate)
        }
        // The chargebacks raised by now are debited in this batch.
        lines += chargebackLines(batchNumber: batchNumber, currency: request.currency, now: now)

        var payoutUnits = lines.reduce(Int64(0)) { $0 + $1.signedNetMinorUnits }
        if faults.shortPayPayout.fires(for: batchReference, random: &random) {
            injectedFaults.append(InjectedFault(kind: .shortPayPayout, batchNumber: batchNumber, reference: batchReference))
            payoutUnits -= faults.shortPaymentMinorUnits
        }
        counters.payout += 1
        let payout = PayoutNotice(
            payoutReference: DerivedIdentifier.payoutReference.hex(seed: seed, counter: counters.payout),
            batchNumber: batchNumber,
            merchantAccount: configuration.merchantAccount,
            valueDate: configuration.calendar.adding(businessDays: configuration.fundingLagBusinessDays, to: businessDate),
            amount: Money(minorUnits: payoutUnits, currency: request.currency)
        )
        lines.append(
            SettlementLines.payoutLine(
                payout: payout,
                batchReference: batchReference,
                closedAt: now,
                configuration: configuration
            )
        )
        let report = SettlementReport(
            batchReference: batchReference,
            batchNumber: batchNumber,
            companyAccount: configuration.companyAccount,
            merchantAccount: configuration.merchantAccount,
            businessDate: businessDate,
            closedAt: now,
            currency: request.currency,
            lines: lines,
            payout: payout
        )
        batches.append(
            StoredBatch(
                header: request.header,
                itemCount: request.items.count,
                itemsFingerprint: StoredBatch.fingerprint(request.items),
                report: report
            )
        )
        return report
    }

    /// Lines `from ..< from + count` of a settled batch's report.
    public func reportLines(batchNumber: Int, from: Int, count: Int) throws(AcquirerError) -> [SettlementReportLine] {
        guard let batch = batches.first(where: { $0.report.batchNumber == batchNumber }) else {
            throw AcquirerError(.unknownBatch, reference: String(batchNumber), "no settled batch with this number")
        }
        guard from >= 0, count >= 0 else { throw AcquirerError(.invalidRequest, "a report page starts at 0 or later") }
        let lines = batch.report.lines
        let start = min(from, lines.count)
        return Array(lines[start..<min(lines.count, start + count)])
    }

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
