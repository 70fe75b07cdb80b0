import Foundation
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// Issue 52, steps 2 and 3: every Adyen record type (whatever its case) and Stripe reporting category with what it
/// does to money and to the journal; the SDR's column versions; a batch settled in two currencies and a presentment
/// currency settled in another, each reconciled per settlement currency with the conversion booked explicitly.
/// Fixtures in `Golden/report-formats/record-types/`, written from the providers' documentation (docs/report-formats.md).
@Suite struct ReportRecordTypeTests {
    static let folder = ReportFormatGoldenTests.folder.appendingPathComponent("record-types")
    static let t0 = Date(timeIntervalSince1970: 1_781_690_400)
    static let cad = Currency(code: "CAD")!
    static let jpy = Currency(code: "JPY")!

    func load(_ name: String) throws -> [SettlementReportLine] {
        let bytes = Array(try Data(contentsOf: Self.folder.appendingPathComponent(name)))
        var lines: [SettlementReportLine] = []
        try SettlementReportImport.read(bytes, ledgerColumns: SettlementReportCSV.columns, chunk: 29) { line, _ in lines.append(line) }
        // Stored as the ledger stores an upload, and read back the same.
        #expect(try SettlementReportCSV().parseRows(try SettlementReportCSV().rows(lines, firstRow: 2), firstRow: 2) == lines)
        return lines
    }

    static func item(_ ours: String, _ units: Int64, _ currency: Currency, kind: SettlementItemKind = .capture) -> SettlementBatchItem {
        SettlementBatchItem(
            kind: kind,
            orderID: "o-" + ours,
            modificationReference: ours,
            pspModificationReference: "psp-" + ours,
            amount: Money(minorUnits: units, currency: currency),
            recordedAt: t0,
            position: 1
        )
    }

    func reconcile(_ lines: [SettlementReportLine], items: [SettlementBatchItem], currency: Currency = .usd) -> ReconciliationRecorded {
        Reconciliation.reconcile(
            batchID: "S-7",
            currency: currency,
            items: items,
            lines: lines,
            laterLines: [],
            settledElsewhere: [],
            report: "upload-t",
            expectedFees: { _, _ in nil }
        )
    }

    /// Each line's journal lines, per currency, as (account code, signed minor units: + debit).
    func journal(_ line: SettlementReportLine) throws -> [String: [String]] {
        let entry = try SettlementLineEntry.of(line, batchCurrency: .usd)
        #expect(entry.isBalanced, "\(line.type)")
        return entry.legs.reduce(into: [:]) { all, leg in
            all[leg.key.code] = leg.value.map { "\($0.account.code) \($0.debitMinorUnits - $0.creditMinorUnits)" }
        }
    }

    /// What every Adyen journal type does: its kind, the account it books against and, for a whole line, its entry.
    @Test func everyAdyenRecordTypeWhateverItsCaseBooksItsMoney() throws {
        let lines = try load("adyen-sdr-every-type.csv")
        let expected: [(String, SettlementRecordKind, String?)] = [
            ("Settled", .capture, "1100"), ("SettledBulk", .capture, "1100"), ("SettledInInstallments", .capture, "1100"),
            ("SettledExternallyWithInfo", .capture, "1100"), ("Refunded", .refund, "1100"), ("RefundedBulk", .refund, "1100"),
            ("RefundedInInstallments", .refund, "1100"), ("RefundedExternallyWithInfo", .refund, "1100"),
            ("RefundedReversed", .refundReversed, "4900"), ("Chargeback", .chargeback, "4950"),
            ("ChargebackExternallyWithInfo", .chargeback, "4950"), ("SecondChargeback", .secondChargeback, "4950"),
            ("ChargebackReversed", .chargebackReversed, "4950"), ("ChargebackReversedExternallyWithInfo", .chargebackReversed, "4950"),
            ("Fee", .adjustment, "6140"), ("MiscCosts", .adjustment, "6140"), ("PaymentCost", .adjustment, "6140"),
            ("AuthorisationSchemeFee", .adjustment, "6140"), ("CashOutFee", .adjustment, "6140"), ("InvoiceDeduction", .adjustment, "6150"),
            ("DepositCorrection", .adjustment, "1250"), ("ReserveAdjustment", .adjustment, "1250"), ("Balancetransfer", .adjustment, "1210"),
            ("InternalCompanyPayout", .adjustment, "1210"), ("ManualCorrected", .adjustment, "6190"), ("MatchedStatement", .adjustment, "6190"),
            ("AdvancementCommissionExternallyWithInfo", .adjustment, "6190"), ("CashOutFunding", .adjustment, "6190"),
            ("CashOutReimbursement", .adjustment, "6190"), ("BankInstructionReturned", .adjustment, "1300"),
            ("MerchantPayout", .payout, "1300"), ("AcquirerPayout", .payout, "1300"),
        ]
        #expect(lines.count == expected.count)
        for (line, (type, kind, account)) in zip(lines, expected) {
            // Read in its documented spelling whatever case the export wrote.
            #expect(line.type.rawValue == type && SettlementRecordKind(adyenType: line.type) == kind, "\(type)")
            #expect(SettlementBooking(adyenType: line.type).account?.code == account, "\(type)")
            let legs = try journal(line)
            #expect(legs.keys.sorted() == ["USD"], "\(type)")
            #expect(legs["USD"]?.contains { $0.hasPrefix("\(account ?? "") ") } == true, "\(type) books against \(account ?? "-")")
        }
        // A capture: clearing + fees against the receivable; a cost: clearing against 6140; the payout: 1300 against clearing.
        #expect(try journal(lines[0])["USD"] == ["1200 970", "6120 10", "6100 20", "1100 -1000"])
        #expect(try journal(lines[14])["USD"] == ["1200 -250", "6140 250"])
        #expect(try journal(lines[21])["USD"] == ["1200 125", "1250 -125"])
        #expect(try journal(lines[30])["USD"] == ["1200 -300", "1300 300"])
        // No documented type is an unmapped record; each adjustment's break names the account to book it against.
        let result = reconcile(lines, items: [])
        #expect(!result.breaks.contains { $0.breakClass == .unmappedRecord })
        let deposit = try #require(result.breaks.first { $0.reference == "8826178952300020" })
        #expect(deposit.breakClass == .unmatchedAdjustment && deposit.detail.hasSuffix("(reserve: book against 1250 Acquirer reserve)"))
        #expect(SettlementRecordKind(adyenType: SettlementLineType(rawValue: "SuperNewRecordType")) == .unmapped)
    }

    /// Stripe: every reporting category has its kind and booking; the payout row is a debit whatever its sign.
    @Test func everyStripeReportingCategoryAndThePayoutRowsSign() throws {
        let lines = try load("stripe-every-category.csv")
        #expect(lines.count == 41)
        for line in lines { #expect(SettlementRecordKind(adyenType: line.type) != .unmapped, "\(line.modificationReference)") }
        for (category, kind) in SettlementRecordKind.stripe {
            #expect(SettlementRecordKind(adyenType: SettlementReportImporter.adyenType(stripeCategory: category)) == kind, "\(category)")
        }
        let payout = try #require(lines.last)
        #expect(payout.type == .merchantPayout && payout.signedNetMinorUnits == -5140)
        let result = reconcile(lines, items: [])
        #expect(!result.breaks.contains { $0.breakClass == .payoutMismatch || $0.breakClass == .unmappedRecord })
        // The same payout written without its minus sign is still the payout, not a credit.
        var text = try String(contentsOf: Self.folder.appendingPathComponent("stripe-every-category.csv"), encoding: .utf8)
        text = text.replacingOccurrences(of: "usd,-51.40,0.00,-51.40,payout", with: "usd,51.40,0.00,51.40,payout")
        var positive: [SettlementReportLine] = []
        try SettlementReportImport.read(Array(text.utf8), ledgerColumns: SettlementReportCSV.columns) { line, _ in positive.append(line) }
        #expect(positive.last?.signedNetMinorUnits == -5140)
    }

    /// The SDR's column versions: 25 columns, and 49 with `Psp Reference` last and `Booking Date`: the same lines.
    @Test func theColumnVersionsReadTheSameLines() throws {
        let short = try load("adyen-sdr-25-columns.csv")
        let long = try load("adyen-sdr-49-columns.csv")
        #expect(short.count == 3 && short == long)
        #expect(long[0].pspReference == "8816178952380001" && long[0].signedNetMinorUnits == 9770 && long[2].signedNetMinorUnits == -8770)
        let result = reconcile(long, items: [Self.item("mod-c1", 10_000, .usd), Self.item("mod-r1", 1000, .usd, kind: .refund)])
        #expect(result.matched == 2 && result.breaks.isEmpty)
    }

    /// Issue 52's batch: USD 59.75 and CAD 9.54, a payout line each; 0 breaks, and each currency's journal balances.
    @Test func aBatchSettledInTwoCurrenciesReconcilesPerCurrency() throws {
        let lines = try load("adyen-sdr-two-currencies.csv")
        let items = [Self.item("mod-u1", 5000, .usd), Self.item("mod-u2", 1200, .usd), Self.item("mod-k1", 1000, Self.cad)]
        let result = reconcile(lines, items: items)
        #expect(result.matched == 3 && result.reportLines == 5)
        #expect(result.breaks.isEmpty, "\(result.breaks.map(\.detail))")
        // Per settlement currency: Σ nets = its payout.
        var tally = ReconciliationTally(batchID: "S-7", currency: .usd)
        for line in lines { tally.add(line, item: nil, duplicate: false, settledElsewhere: false, expectedFees: nil) }
        #expect(tally.settlementTotals[.usd]?.net == 5975 && tally.settlementTotals[.usd]?.payout == 5975)
        #expect(tally.settlementTotals[Self.cad]?.net == 954 && tally.settlementTotals[Self.cad]?.payout == 954)
        var balance: [String: Int64] = [:]
        for line in lines {
            for (code, legs) in try journal(line) { for leg in legs { balance[code, default: 0] += Int64(leg.split(separator: " ")[1])! } }
        }
        #expect(balance == ["USD": 0, "CAD": 0])
        // Before: every net was added in one currency and the first payout line kept — a false payout_mismatch.
        // One cent off in the CAD line is that currency's payout mismatch only.
        var off = lines
        off[2].netCredit = Money(minorUnits: 955, currency: Self.cad)
        off[2].markup = Money(minorUnits: 15, currency: Self.cad)
        let broken = reconcile(off, items: items)
        #expect(broken.breaks.map { "\($0.breakClass.rawValue) \($0.reference)" } == ["payout_mismatch PAYOUT-7-CAD"])
        // A currency without a payout line is named.
        let noCAD = reconcile(Array(lines.dropLast()), items: items)
        #expect(noCAD.breaks.map(\.reference) == ["S-7.CAD"])
    }

    /// JPY presentment settled in USD at the rate as given: the conversion is booked explicitly, each currency balances,
    /// and a cent of rounding goes to 6195 exchange rounding.
    @Test func aPresentmentCurrencySettledInAnotherBooksTheConversion() throws {
        let lines = try load("adyen-sdr-jpy-settled-in-usd.csv")
        let items = [Self.item("mod-j1", 1500, Self.jpy), Self.item("mod-j2", 1000, Self.jpy)]
        let result = reconcile(lines, items: items)
        #expect(result.matched == 2 && result.breaks.isEmpty, "\(result.breaks.map(\.detail))")
        #expect(try journal(lines[0]) == ["JPY": ["1100 -1500", "1290 1500"], "USD": ["1200 990", "6120 20", "1290 -1010"]])
        // 1000 JPY × 0.006733333333333 = 6.7333… → 6.73 USD; the line's net + fees is 6.74: one cent of rounding, booked.
        #expect(try journal(lines[1]) == ["JPY": ["1100 -1000", "1290 1000"], "USD": ["1200 654", "6120 20", "1290 -673", "6195 -1"]])
        let entry = try SettlementLineEntry.of(lines[1], batchCurrency: .usd)
        #expect(entry.converted?.minorUnits == 673 && entry.roundingDifference?.minorUnits == 1)
        // More than a cent off the rate is a fee_mismatch, not rounding.
        var wrong = lines
        wrong[1].netCredit = Money(minorUnits: 660, currency: .usd)
        wrong[2].netDebit = Money(minorUnits: 1650, currency: .usd)
        #expect(reconcile(wrong, items: items).breaks.map(\.breakClass) == [.feeMismatch])
    }
}
