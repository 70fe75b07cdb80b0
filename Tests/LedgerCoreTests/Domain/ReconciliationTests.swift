import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// The classifier on hand-made reports: the break classes the acquirer model's knobs cannot produce,
/// and the expected window.
@Suite struct ReconciliationTests {
    let batch = "S-USD-2026-06-17"

    func item(_ kind: SettlementItemKind, _ reference: String, _ units: Int64) -> SettlementBatchItem {
        SettlementBatchItem(
            kind: kind,
            orderID: "o-\(reference)",
            modificationReference: reference,
            pspModificationReference: "psp-\(reference)",
            amount: Money(minorUnits: units, currency: .usd),
            recordedAt: t0,
            position: 1
        )
    }

    func line(
        _ type: SettlementLineType,
        _ reference: String,
        _ units: Int64,
        fee: Int64 = 0,
        currency: Currency = .usd,
        psp: String? = nil
    ) -> SettlementReportLine {
        let m = { (u: Int64) in Money(minorUnits: u, currency: currency) }
        let signedGross = type == .refunded ? -units : units
        let net = signedGross - fee
        return SettlementReportLine(
            companyAccount: "C",
            merchantAccount: "S",
            pspReference: "p",
            merchantReference: "o-\(reference)",
            paymentMethod: "visa",
            creationDate: nil,
            timeZone: "UTC",
            type: type,
            modificationReference: psp ?? "psp-\(reference)",
            grossCurrency: currency,
            grossDebit: signedGross < 0 ? m(-signedGross) : nil,
            grossCredit: signedGross < 0 ? nil : m(signedGross),
            exchangeRate: nil,
            netCurrency: currency,
            netDebit: net < 0 ? m(-net) : nil,
            netCredit: net < 0 ? nil : m(net),
            commission: m(fee),
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: "visacredit",
            modificationMerchantReference: reference,
            batchNumber: 1
        )
    }

    func payout(_ lines: [SettlementReportLine], short: Int64 = 0) -> SettlementReportLine {
        let amount = lines.reduce(Int64(0)) { $0 + $1.signedNetMinorUnits } - short
        var l = line(.merchantPayout, "", 0)
        (l.grossCurrency, l.grossCredit, l.grossDebit, l.commission) = (nil, nil, nil, nil)
        (l.netDebit, l.netCredit) = amount >= 0 ? (Money(minorUnits: amount, currency: .usd), nil) : (nil, Money(minorUnits: -amount, currency: .usd))
        l.modificationReference = "payout-1"
        l.modificationMerchantReference = batch
        return l
    }

    func classes(
        _ items: [SettlementBatchItem],
        _ lines: [SettlementReportLine],
        later: [SettlementReportLine]? = nil,
        elsewhere: Set<String> = [],
        fee: Int64? = nil
    ) -> [BreakClass] {
        Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: items,
            lines: lines + [payout(lines)],
            laterLines: later,
            settledElsewhere: elsewhere,
            expectedFees: { _, _ in
                fee.map { ExpectedFees(interchange: nil, schemeFees: nil, markup: nil, commission: $0) }
            }
        ).breaks.map(\.breakClass)
    }

    @Test func aCleanReportMatchesEveryItemByOurReferenceOrTheAcquirers() {
        let items = [item(.capture, "a", 500), item(.refund, "b", 200)]
        var byPSP = line(.refunded, "b", 200)
        byPSP.modificationMerchantReference = ""  // only the acquirer's reference to go by
        let result = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: items,
            lines: [line(.settled, "a", 500, fee: 12), byPSP, payout([line(.settled, "a", 500, fee: 12), byPSP])],
            laterLines: nil,
            settledElsewhere: [],
            expectedFees: { _, item in
                ExpectedFees(interchange: nil, schemeFees: nil, markup: nil, commission: item.kind == .capture ? 12 : 0)
            }
        )
        #expect(result.breaks.isEmpty && result.matched == 2 && result.ledgerItems == 2 && result.reportLines == 3)
    }

    /// Issue 52: a break of a line or payout in another settlement currency than the batch's carries that currency, so
    /// its amounts are shown with that currency's decimals (JPY has none: 1500 is ¥1500, not 15.00).
    @Test func aSecondCurrencysBreakIsShownInItsOwnCurrency() {
        let jpy = Currency(code: "JPY")!
        let usdLine = line(.settled, "a", 500)
        var yenPayout = payout([])
        (yenPayout.netCurrency, yenPayout.netDebit, yenPayout.netCredit) = (jpy, Money(minorUnits: 1500, currency: jpy), nil)
        yenPayout.modificationReference = "payout-jpy"
        let result = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: [item(.capture, "a", 500)],
            lines: [usdLine, payout([usdLine]), line(.fee, "f", 700, currency: jpy), yenPayout],
            laterLines: nil,
            settledElsewhere: [],
            expectedFees: { _, _ in nil }
        )
        let fee = result.breaks.first { $0.breakClass == .unmatchedAdjustment }
        let mismatch = result.breaks.first { $0.breakClass == .payoutMismatch }
        #expect(fee?.currency == jpy && fee?.figure(fee?.actual, in: .usd) == "700", "\(String(describing: fee))")
        #expect(mismatch?.currency == jpy && mismatch?.figure(mismatch?.actual, in: .usd) == "1500", "\(String(describing: mismatch))")
        // A break in the batch's own currency names none (recorded as before) and is shown in the batch's.
        let usd = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: [item(.capture, "a", 500)],
            lines: [usdLine, payout([usdLine], short: 1)],
            laterLines: nil,
            settledElsewhere: [],
            expectedFees: { _, _ in nil }
        ).breaks.first
        #expect(usd?.currency == nil && usd?.figure(usd?.actual, in: .usd) == "4.99", "\(String(describing: usd))")
    }

    /// A line for an item of another batch (carried over from it) is neither a break here nor one of this batch's matched
    /// items: it is counted as carried (issue 52: it was counted as matched, silently), and the result says how many.
    @Test func aLineCarriedFromAnotherBatchIsCountedAsCarriedNotMatched() {
        let lines = [line(.settled, "a", 500), line(.settled, "x", 700)]
        let result = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: [item(.capture, "a", 500)],
            lines: lines + [payout(lines)],
            laterLines: nil,
            settledElsewhere: ["x"],
            expectedFees: { _, _ in nil }
        )
        #expect(result.breaks.isEmpty && result.matched == 1 && result.carried == 1, "\(result)")
        // None carried: absent from the result, as before the figure existed.
        let own = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: [item(.capture, "a", 500)],
            lines: [lines[0], payout([lines[0]])],
            laterLines: nil,
            settledElsewhere: [],
            expectedFees: { _, _ in nil }
        )
        #expect(own.matched == 1 && own.carried == nil)
    }

    @Test func eachMismatchHasItsClass() {
        #expect(classes([], [line(.settled, "x", 500)]) == [.missingInLedger])
        #expect(classes([], [line(.settled, "x", 500)], elsewhere: ["x"]) == [])  // carried over from an earlier batch
        #expect(classes([item(.capture, "a", 500)], [line(.settled, "a", 500, currency: .eur)]).contains(.currencyMismatch))
        #expect(classes([item(.capture, "a", 500)], [line(.refunded, "a", 500)]) == [.statusMismatch])
        #expect(classes([item(.capture, "a", 500)], [line(.settled, "a", 501)]) == [.amountMismatch])
        #expect(classes([item(.capture, "a", 500)], [line(.settled, "a", 500, fee: 13)], fee: 12) == [.feeMismatch])
        #expect(classes([item(.capture, "a", 500)], [line(.settled, "a", 500), line(.settled, "a", 500)]) == [.duplicate])
        #expect(
            classes([item(.capture, "a", 500)], [line(.settled, "a", 500), line(SettlementLineType(rawValue: "Fee"), "f", 100)])
                == [.unmatchedAdjustment]
        )
        // A record type no mapping knows is its own break, once, never dropped.
        #expect(
            classes([item(.capture, "a", 500)], [line(.settled, "a", 500), line(SettlementLineType(rawValue: "BrandNewType"), "n", 100)])
                == [.unmappedRecord]
        )
        #expect(SettlementRecordKind(adyenType: .chargeback) == .chargeback && SettlementRecordKind(adyenType: .merchantPayout) == .payout)
        for type in [
            "Settled", "Refunded", "Chargeback", "SecondChargeback", "ChargebackReversed", "RefundedReversed", "Fee", "MiscCosts",
            "MerchantPayout", "DepositCorrection", "InvoiceDeduction",
        ] {
            #expect(SettlementRecordKind(adyenType: SettlementLineType(rawValue: type)) != .unmapped, "\(type)")
        }
        for category in ["charge", "refund", "dispute", "dispute_reversal", "fee", "payout"] {
            #expect(SettlementRecordKind(stripeCategory: category) != .unmapped, "\(category)")
        }
        #expect(SettlementRecordKind(stripeCategory: "brand_new_category") == .unmapped)
        let lines = [line(.settled, "a", 500)]
        let short = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: [item(.capture, "a", 500)],
            lines: lines + [payout(lines, short: 1)],
            laterLines: nil,
            settledElsewhere: [],
            expectedFees: { _, _ in nil }
        )
        #expect(short.breaks.map(\.breakClass) == [.payoutMismatch])
        #expect(short.breaks.first?.detail == "Σ line nets 5.00 USD ≠ payout 4.99 USD", "decimal amounts with their currency")
    }

    @Test func anAbsentItemIsTimingUntilTheNextReportAndMissingAtTheAcquirerAfter() {
        let items = [item(.capture, "a", 500), item(.capture, "b", 300)]
        let lines = [line(.settled, "a", 500)]
        #expect(classes(items, lines) == [.timing])
        #expect(classes(items, lines, later: [line(.settled, "b", 300)]) == [.timing])
        #expect(classes(items, lines, later: []) == [.missingAtAcquirer])
        let recorded = Reconciliation.reconcile(
            batchID: batch,
            currency: .usd,
            items: items,
            lines: lines + [payout(lines)],
            laterLines: [],
            settledElsewhere: [],
            expectedFees: { _, _ in nil }
        )
        #expect(recorded.windowClosed && recorded.breaks.first?.breakID == "\(batch).missing_at_acquirer.b")
        // The result event round-trips byte for byte.
        let event = SettlementEvent.reconciled(recorded)
        let encoded = try? event.newEvent(eventID: UUID(), effectiveAt: t0)
        #expect(encoded.flatMap { try? SettlementEvent.decode(type: $0.type, schemaVersion: $0.schemaVersion, json: $0.data) } == event)
    }
}
