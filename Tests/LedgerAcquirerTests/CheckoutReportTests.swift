import Foundation
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// Issue 52, step 4: Checkout.com's Financial Actions by Payout ID report as a fourth format. The fixture
/// `record-types/checkout-financial-actions.csv` is written from Checkout.com's documentation (docs/report-formats.md,
/// "Checkout.com"): every documented action and breakdown type, a capture presented in EUR and held in USD, and the
/// payout row. Each action's rows are one line (its fees in their columns), with its amounts, signs, currencies and
/// journal entry; the file reconciles with no payout mismatch, and bad files are refused naming row, column and value.
@Suite struct CheckoutReportTests {
    static let eur = Currency(code: "EUR")!
    static let header = try! String(
        contentsOf: ReportRecordTypeTests.folder.appendingPathComponent("checkout-financial-actions.csv"),
        encoding: .utf8
    )

    func read(_ text: String, strict: Bool = false) throws -> [SettlementReportLine] {
        var lines: [SettlementReportLine] = []
        var stream = CSVRecordStream()
        var importer: SettlementReportImporter?
        var row = 0
        func take(_ record: [String]) throws {
            row += 1
            guard var current = importer else {
                importer = try SettlementReportImporter(header: record, ledgerColumns: SettlementReportCSV.columns)
                importer?.strict = strict
                return
            }
            lines += try current.lines(record, row: row)
            importer = current
        }
        try stream.feed(Array(text.utf8)[...], take)
        try stream.finish(take)
        #expect(importer?.format == .checkoutFinancialActions)
        lines += importer?.finish() ?? []
        return lines
    }

    func load() throws -> [SettlementReportLine] {
        let bytes = Array(Self.header.utf8)
        var lines: [SettlementReportLine] = []
        let importer = try SettlementReportImport.read(bytes, ledgerColumns: SettlementReportCSV.columns, chunk: 31) { line, _ in
            lines.append(line)
        }
        #expect(importer.format == .checkoutFinancialActions && importer.payoutID == "000G7HDD96SH")
        // Stored as the ledger stores an upload, and read back the same.
        #expect(try SettlementReportCSV().parseRows(try SettlementReportCSV().rows(lines, firstRow: 2), firstRow: 2) == lines)
        return lines
    }

    static func item(_ psp: String, _ units: Int64, _ currency: Currency = .usd, kind: SettlementItemKind = .capture) -> SettlementBatchItem {
        SettlementBatchItem(
            kind: kind,
            orderID: "o-" + psp,
            modificationReference: "mod-" + psp,
            pspModificationReference: psp,
            amount: Money(minorUnits: units, currency: currency),
            recordedAt: ReportRecordTypeTests.t0,
            position: 1
        )
    }

    static let items = [
        item("act_c1", 10_000), item("act_c2", 5000, eur), item("act_c3", 3000),
        item("act_r1", 2000, kind: .refund), item("act_r2", 500, kind: .refund),
    ]
    static let disputes = ["pay_5": DisputeMoney(debits: [3000, 1500, 800, 1200], credits: [3000, 1000, 500])]

    func reconcile(_ lines: [SettlementReportLine]) -> ReconciliationRecorded {
        Reconciliation.reconcile(
            batchID: "S-7",
            currency: .usd,
            items: Self.items,
            lines: lines,
            laterLines: [],
            settledElsewhere: [],
            disputes: Self.disputes,
            report: "upload-t",
            expectedFees: { _, _ in nil }
        )
    }

    func journal(_ line: SettlementReportLine) throws -> [String: [String]] {
        let entry = try SettlementLineEntry.of(line, batchCurrency: .usd)
        #expect(entry.isBalanced, "\(line.type) \(line.modificationReference)")
        return entry.legs.reduce(into: [:]) { all, leg in
            all[leg.key.code] = leg.value.map { "\($0.account.code) \($0.debitMinorUnits - $0.creditMinorUnits)" }
        }
    }

    @Test func everyActionAndBreakdownTypeIsOneLineWithItsMoneyAndJournal() throws {
        let lines = try load()
        let expected: [(String, String, Int64, String?)] = [
            ("act_c1", "Settled", 9950, "1100"), ("act_c2", "Settled", 5400, "1100"), ("act_c3", "Settled", 2955, "1100"),
            ("act_r1", "Refunded", -2010, "1100"), ("act_r2", "Refunded", -500, "1100"), ("act_a1", "Fee", -14, nil),
            ("act_v1", "Fee", -5, nil), ("act_cb1", "Chargeback", -3000, "4950"), ("act_cb2", "ChargebackReversed", 3000, "4950"),
            ("act_cb3", "ChargebackReversed", 1000, "4950"), ("act_cb4", "ChargebackReversed", 500, "4950"),
            ("act_cb5", "Chargeback", -1500, "4950"), ("act_cb6", "Chargeback", -800, "4950"), ("act_cb7", "Chargeback", -1200, "4950"),
            ("act_cf1", "ManualCorrected", 2000, "6190"), ("adj_1", "Fee", -100, nil), ("adj_2", "Fee", 40, nil), ("adj_3", "Fee", 50, nil),
            ("adj_4", "Balancetransfer", 2500, "1210"), ("adj_5", "InvoiceDeduction", -4000, "6150"),
            ("adj_6", "ReserveAdjustment", 1000, "1250"), ("adj_7", "ReserveAdjustment", -1000, "1250"),
            ("adj_8", "ReserveAdjustment", 1500, "1250"), ("adj_9", "ReserveAdjustment", -1500, "1250"),
            ("adj_10", "ManualCorrected", 10_000, "6190"), ("adj_11", "ManualCorrected", -1, "6190"), ("adj_12", "ReserveAdjustment", -500, "1250"),
            ("po_1", "MerchantPayout", -23_765, "1300"),
        ]
        #expect(lines.map(\.modificationReference) == expected.map(\.0))
        for (line, (reference, type, net, account)) in zip(lines, expected) {
            #expect(line.type.rawValue == type && line.signedNetMinorUnits == net, "\(reference): \(line.type) \(line.signedNetMinorUnits)")
            #expect(line.netCurrency == .usd && line.merchantAccount.isEmpty, "\(reference)")
            if let account {
                // In whichever currency: a converted capture books its gross in its presentment currency.
                #expect(try journal(line).values.joined().contains { $0.hasPrefix(account + " ") }, "\(reference) books against \(account)")
            }
            #expect(SettlementRecordKind(adyenType: line.type) != .unmapped, "\(reference)")
        }
        // A capture with every card fee: each in its column, net = gross − fees, booked to its fee account.
        let capture = lines[0]
        #expect(capture.pspReference == "pay_1" && capture.merchantReference == "order-1" && capture.paymentMethod == "checkout:visa")
        #expect(capture.signedGrossMinorUnits == 10_000 && capture.grossCurrency == .usd)
        #expect(
            [capture.interchange, capture.schemeFees, capture.markup, capture.commission].map { $0?.minorUnits } == [30, 7, 7, 6]
        )
        #expect(try journal(capture)["USD"] == ["1200 9950", "6130 6", "6120 7", "6110 7", "6100 30", "1100 -10000"])
        // Presented in EUR, held in USD at the rate applied: the conversion is booked explicitly, each currency balances.
        let converted = lines[1]
        #expect(converted.grossCurrency == Self.eur && converted.signedGrossMinorUnits == 5000 && converted.exchangeRate != nil)
        #expect(try journal(converted) == ["EUR": ["1100 -5000", "1290 5000"], "USD": ["1200 5400", "6100 25", "1290 -5425"]])
        // An alternative payment method's fees are the acquirer's commission.
        #expect(lines[2].commission?.minorUnits == 45 && lines[2].paymentMethod == "checkout:ideal")
        // A refund and its fee.
        #expect(try journal(lines[3])["USD"] == ["1200 -2010", "6130 10", "1100 2000"])
        // A fee-only action (an authorization's fees) is a cost in its fee column; a credited fee adjustment is negative.
        #expect(try lines[5].commission?.minorUnits == 14 && journal(lines[5])["USD"] == ["1200 -14", "6130 14"])
        #expect(lines[16].schemeFees?.minorUnits == -40 && lines[17].commission?.minorUnits == -50)
        // The chargeback codes: a debit is a Chargeback, a credit its reversal.
        #expect(try journal(lines[7])["USD"] == ["1200 -3000", "4950 3000"])
        // The payout row: the payout, a debit.
        #expect(try journal(lines[27])["USD"] == ["1200 -23765", "1300 23765"])

        // Reconciled: the five items and the seven chargeback lines matched, each adjustment a break naming its account,
        // Σ nets = the payout row.
        let result = reconcile(lines)
        #expect(result.reportLines == 28 && result.matched == 12, "\(result.breaks.map(\.detail))")
        #expect(Set(result.breaks.map(\.breakClass)) == [.unmatchedAdjustment])
        #expect(
            result.breaks.map(\.reference) == [
                "act_a1", "act_v1", "act_cf1", "adj_1", "adj_2", "adj_3", "adj_4", "adj_5", "adj_6", "adj_7", "adj_8", "adj_9", "adj_10",
                "adj_11", "adj_12",
            ]
        )
        // One cent off in one held amount: that action's line and the payout, nothing else.
        let off = try read(Self.header.replacingOccurrences(of: "Capture,100.00,100.00", with: "Capture,100.00,100.01"))
        let broken = reconcile(off)
        #expect(
            broken.breaks.filter { $0.breakClass != .unmatchedAdjustment }.map { "\($0.breakClass.rawValue) \($0.reference)" } == [
                "fee_mismatch mod-act_c1", "payout_mismatch po_1",
            ]
        )
    }

    /// The fixture has a row of every breakdown type the reader knows, and every one of them is in docs/report-formats.md.
    @Test func theFixtureAndTheDocumentationNameEveryBreakdownType() throws {
        let rows = try CSVReader.records(Self.header)
        let column = try #require(rows.first?.firstIndex(of: "Breakdown Type"))
        let written = Set(rows.dropFirst().map { $0[column].lowercased() })
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: docs.appendingPathComponent("docs/report-formats.md"), encoding: .utf8).lowercased()
        let section = try #require(text.components(separatedBy: "## checkout.com financial actions by payout id").last)
        for type in CheckoutBreakdown.breakdownTypes.keys.sorted() {
            #expect(written.contains(type), "\(type) has no row in the fixture")
            // "Chargeback (ADJM), (ARWS)": a code may follow the first chargeback's name.
            let named = section.contains(type) || (type.hasPrefix("chargeback (") && section.contains(type.dropFirst("chargeback ".count)))
            #expect(named, "\(type) is not in docs/report-formats.md")
        }
    }

    /// The rows of one action need not come in any order: a fee row before its capture row is the same line.
    @Test func anActionsRowsFoldInAnyOrder() throws {
        let rows = Self.header.split(separator: "\n").map(String.init)
        let reordered = [rows[0], rows[2], rows[1]] + rows[3...] + [""]
        #expect(try read(reordered.joined(separator: "\n")) == load())
    }

    @Test func badCheckoutFilesAreRefusedNamingRowColumnAndValue() throws {
        func refusal(_ text: String, strict: Bool = false) -> String {
            do {
                _ = try read(text, strict: strict)
                return "read"
            } catch {
                return "\(error)"
            }
        }
        let text = Self.header
        // A missing column.
        #expect(refusal(text.replacingOccurrences(of: "Breakdown Type", with: "Breakdown")).contains("\"Breakdown Type\""))
        // A breakdown type no documentation names: strict, refused; else an unmapped_record break, never dropped.
        let martian = text.replacingOccurrences(of: "Gateway Fixed Fee,-0.06", with: "Martian Fee,-0.06")
        #expect(refusal(martian, strict: true).hasPrefix("row 9: Breakdown Type \"Martian Fee\" is a record type no mapping knows"))
        let kept = try read(martian)
        #expect(kept.contains { $0.type.rawValue == "Martian Fee" && $0.signedNetMinorUnits == -6 })
        #expect(reconcile(kept).breaks.contains { $0.breakClass == .unmappedRecord })
        // Checkout.com writes up to 8 decimals; an amount below the currency's minor unit is refused, never rounded.
        #expect(
            refusal(text.replacingOccurrences(of: "Interchange Fixed Fee,-0.10,-0.10", with: "Interchange Fixed Fee,-0.10,-0.1034"))
                == "row 3: Holding Currency Amount \"-0.1034\" has more than 2 fraction digits"
        )
        // A thousands separator, and a row of another payout.
        #expect(refusal(text.replacingOccurrences(of: ",100.00,100.00,VISA", with: ",100.00,\"1,000.00\",VISA")).contains("thousands separator"))
        #expect(
            refusal(text.replacingOccurrences(of: "000G7HDD96SH,Refund,", with: "000OTHERPAYOUT,Refund,"))
                == "the report covers payouts 000G7HDD96SH and 000OTHERPAYOUT: upload one payout at a time"
        )
        // A row presented in another currency without the rate applied.
        #expect(refusal(text.replacingOccurrences(of: ",EUR,1.085,", with: ",EUR,,")) == "row 10: FX Rate Applied \"\" is not valid")
        // A truncated row.
        let truncated = text.split(separator: "\n").prefix(2).joined(separator: "\n") + "\n" + "ent_ol,OrderLedger\n"
        #expect(refusal(truncated).hasPrefix("row 3: Sub Entity ID is missing: the row ends after 2 of 24 fields"))
    }
}
