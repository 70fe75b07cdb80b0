import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// The acquirers' report formats (issue 17): golden sample files built from the documented layouts
/// (docs/report-formats.md) imported line by line and reconciled against one batch's ledger items and
/// disputes, with exactly the expected outcomes; every documented record type has its outcome; an
/// unknown record type is exactly one `unmapped_record` break.
@Suite struct ReportFormatGoldenTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/report-formats")
    static let t0 = Date(timeIntervalSince1970: 1_781_690_400)
    static let batch = "S-USD-2026-06-17"

    static func item(_ kind: SettlementItemKind, _ ours: String, _ order: String, _ units: Int64) -> SettlementBatchItem {
        SettlementBatchItem(
            kind: kind,
            orderID: order,
            modificationReference: ours,
            pspModificationReference: "ledger-psp-\(ours)",
            amount: Money(minorUnits: units, currency: .usd),
            recordedAt: t0,
            position: 1
        )
    }

    /// The batch's ledger items: two captures and a refund of order o-1 … o-3.
    static let items = [
        item(.capture, "mod-c1", "o-1", 10_000), item(.capture, "mod-c2", "o-2", 5900), item(.refund, "mod-r1", "o-1", 1000),
        item(.capture, "mod-c3", "o-3", 2500),
    ]

    /// The ledger's disputes: o-2 charged back 59.00; o-3 charged back 25.00 and reversed.
    static func disputes(o2: String, o3: String) -> [String: DisputeMoney] {
        [o2: DisputeMoney(debits: [5900]), o3: DisputeMoney(debits: [2500], credits: [2500])]
    }

    struct Imported {
        var format: SettlementReportFormat
        var lines: [SettlementReportLine]
        var importer: SettlementReportImporter
    }

    /// Imports a golden file in small chunks (so records straddle chunk boundaries).
    func load(_ name: String, chunk: Int = 37) throws -> Imported {
        let bytes = Array(try Data(contentsOf: Self.folder.appendingPathComponent(name)))
        var lines: [SettlementReportLine] = []
        let importer = try SettlementReportImport.read(bytes, ledgerColumns: SettlementReportCSV.columns, chunk: chunk) { line, _ in
            lines.append(line)
        }
        return Imported(format: importer.format, lines: lines, importer: importer)
    }

    func reconcile(_ lines: [SettlementReportLine], disputes: [String: DisputeMoney]) -> ReconciliationRecorded {
        Reconciliation.reconcile(
            batchID: Self.batch,
            currency: .usd,
            items: Self.items,
            lines: lines,
            laterLines: [],
            settledElsewhere: [],
            disputes: disputes,
            report: "upload-golden",
            expectedFees: { _, _ in nil }
        )
    }

    func classes(_ result: ReconciliationRecorded) -> [String] { result.breaks.map { "\($0.breakClass.rawValue) \($0.reference)" } }

    /// The payout line the ledger adds to a format without one: the batch's announced payout.
    func payout(_ units: Int64) -> SettlementReportLine {
        SettlementReportLine(
            companyAccount: "",
            merchantAccount: "",
            pspReference: "",
            merchantReference: "",
            paymentMethod: "",
            creationDate: nil,
            timeZone: "",
            type: .merchantPayout,
            modificationReference: "payout",
            grossCurrency: nil,
            grossDebit: nil,
            grossCredit: nil,
            exchangeRate: nil,
            netCurrency: .usd,
            netDebit: Money(minorUnits: units, currency: .usd),
            netCredit: nil,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: "",
            modificationMerchantReference: Self.batch,
            batchNumber: 7
        )
    }

    @Test func anAdyenSettlementDetailsReportReconcilesWithExactlyTheExpectedOutcomes() throws {
        let imported = try load("adyen-sdr-batch-7.csv")
        #expect(imported.format == .adyenSettlementDetails)
        #expect(imported.lines.count == 9 && imported.lines.allSatisfy { $0.batchNumber == 7 })
        #expect(imported.lines[0].merchantAccount == "Ledger, Inc. US" && imported.lines[0].markup?.minorUnits == 50)
        let result = reconcile(imported.lines, disputes: Self.disputes(o2: "8816178952380002", o3: "8816178952380003"))
        // Three captures, a refund, two chargebacks and a reversal match; the chargeback fee is the ledger's to book.
        #expect(result.reportLines == 9 && result.ledgerItems == 4 && result.matched == 7)
        #expect(classes(result) == ["unmatched_adjustment Chargeback handling fee 8836178952380201"])
        // Without the ledger's disputes the chargebacks are lines the ledger has not recorded.
        let without = reconcile(imported.lines, disputes: [:])
        #expect(
            classes(without) == [
                "missing_in_ledger 8836178952380201", "missing_in_ledger 8836178952380202", "missing_in_ledger 8836178952380203",
                "unmatched_adjustment Chargeback handling fee 8836178952380201",
            ]
        )
        // A second chargeback line for the same dispute would move the money twice: refused as a duplicate.
        var twice = imported.lines
        twice.insert(imported.lines[4], at: 5)
        twice[twice.count - 1].netDebit = Money(minorUnits: 9567 - 5900, currency: .usd)
        #expect(
            classes(reconcile(twice, disputes: Self.disputes(o2: "8816178952380002", o3: "8816178952380003"))).contains("duplicate 8836178952380201")
        )
    }

    @Test func anUnknownRecordTypeIsExactlyOneUnmappedRecordBreak() throws {
        let imported = try load("adyen-sdr-batch-7-unknown-type.csv")
        let result = reconcile(imported.lines, disputes: Self.disputes(o2: "8816178952380002", o3: "8816178952380003"))
        #expect(result.reportLines == 10 && result.matched == 7)
        #expect(result.breaks.filter { $0.breakClass == .unmappedRecord }.map(\.reference) == ["8846178952380301"])
        #expect(classes(result) == ["unmatched_adjustment Chargeback handling fee 8836178952380201", "unmapped_record 8846178952380301"])
        #expect(result.breaks.last?.actual == "100")  // the line is kept with its money, never dropped
    }

    @Test func anAdyenPaymentAccountingReportReconcilesWithExactlyTheExpectedOutcomes() throws {
        let imported = try load("adyen-par-2026-06-17.csv")
        #expect(imported.format == .adyenPaymentAccounting)
        #expect(imported.lines.count == 19)
        let kinds = imported.lines.map { SettlementRecordKind(adyenType: $0.type) }
        #expect(kinds.filter { $0 == .lifecycle }.count == 11)
        // The announced payout: Σ of the settled records' payable amounts.
        let lines = imported.lines + [payout(9567)]
        let result = reconcile(lines, disputes: Self.disputes(o2: "8816178952380002", o3: "8816178952380003"))
        // 11 status records (nothing to match), 4 items, 2 chargebacks and a reversal matched; the Fee is the ledger's to book.
        #expect(result.reportLines == 20 && result.matched == 18)
        #expect(classes(result) == ["unmatched_adjustment 8856178952380401"])
        // Refunded and Chargeback records are debits whatever sign the booking shows.
        let refund = try #require(imported.lines.first { $0.type == .refunded })
        #expect(refund.signedGrossMinorUnits == -1000 && refund.signedNetMinorUnits == -1000)
        let settled = try #require(imported.lines.first { $0.type == .settled })
        #expect(settled.signedGrossMinorUnits == 10_000 && settled.signedNetMinorUnits == 9770)
    }

    @Test func aStripeItemizedPayoutReconciliationReportReconcilesWithExactlyTheExpectedOutcomes() throws {
        let imported = try load("stripe-itemized-payout-po_1PgR2u2eZvKYlo2C0abcDEF.csv")
        #expect(imported.format == .stripeItemizedPayout)
        #expect(imported.importer.payoutID == "po_1PgR2u2eZvKYlo2C0abcDEF")
        // 8 rows; the reversal's returned dispute fee is a line of its own.
        #expect(imported.lines.count == 9)
        #expect(
            imported.lines.map(\.type.rawValue) == [
                "Settled", "Settled", "Refunded", "Settled", "Chargeback", "Chargeback", "ChargebackReversed", "MiscCosts", "MiscCosts",
            ]
        )
        let result = reconcile(imported.lines + [payout(9176)], disputes: Self.disputes(o2: "ch_3PgA02", o3: "ch_3PgA04"))
        #expect(result.reportLines == 10 && result.matched == 7)
        #expect(classes(result) == ["unmatched_adjustment du_1PgA06.fee", "unmatched_adjustment fee_1PgA08"])
        // A payout other than the rows' nets is a payout mismatch.
        let short = reconcile(imported.lines + [payout(9000)], disputes: Self.disputes(o2: "ch_3PgA02", o3: "ch_3PgA04"))
        #expect(short.breaks.last?.breakClass == .payoutMismatch)
    }

    @Test func theHeaderChoosesTheFormat() throws {
        #expect(SettlementReportFormat.detect(header: SettlementReportCSV.columns, ledgerColumns: SettlementReportCSV.columns) == .ledger)
        let reordered = ["\u{FEFF}Batch Number"] + SettlementReportCSV.columns.dropLast() + ["Reserved4"]
        #expect(SettlementReportFormat.detect(header: reordered, ledgerColumns: SettlementReportCSV.columns) == .adyenSettlementDetails)
        #expect(SettlementReportFormat.detect(header: ["a", "b"], ledgerColumns: SettlementReportCSV.columns) == nil)
        #expect(throws: ReportImportError.self) {
            try SettlementReportImport.read(Array("x,y\r\n1,2\r\n".utf8), ledgerColumns: SettlementReportCSV.columns) { _, _ in }
        }
        // A named format whose columns are missing is refused with the columns it needs.
        #expect(
            throws: ReportImportError.missingColumns(
                .stripeItemizedPayout,
                ["gross", "fee", "net", "reporting_category", "source_id", "automatic_payout_id"]
            )
        ) {
            try SettlementReportImport.read(
                Array("balance_transaction_id,currency\r\n".utf8),
                format: .stripeItemizedPayout,
                ledgerColumns: SettlementReportCSV.columns
            ) { _, _ in }
        }
    }

    /// Every record type docs/report-formats.md's mapping table documents reaches the kind its row names, and
    /// every type the code maps is in that table: the documentation (taken from Adyen's and Stripe's) is the
    /// oracle, not `SettlementRecordKind`'s own dictionaries. Types match whatever their case; anything else is
    /// `unmapped_record`.
    @Test func everyDocumentedRecordTypeHasItsOutcome() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: docs.appendingPathComponent("docs/report-formats.md"), encoding: .utf8)
        let kinds: [String: SettlementRecordKind] = [
            "capture": .capture, "refund": .refund, "chargeback": .chargeback, "second chargeback": .secondChargeback,
            "chargeback reversed": .chargebackReversed, "refund reversed": .refundReversed, "payout": .payout,
            "lifecycle (PAR status records)": .lifecycle,
        ]
        // "Fee (debit), MiscCosts" → Fee, MiscCosts; "financing_paydown(_reversal)" → both spellings; "—" → none.
        func names(_ cell: Substring) -> [String] {
            let plain = cell.replacing(/\s*\([a-z\/ ,;]*[^_)][^)]*\)/, with: "")
            return plain.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0 != "—" && !$0.isEmpty }
                .flatMap { name -> [String] in
                    guard let open = name.firstIndex(of: "(") else { return [name] }
                    let stem = String(name[..<open])
                    return [stem, stem + name[name.index(after: open)...].dropLast()]
                }
        }
        var adyen: [String: SettlementRecordKind] = [:]
        var stripe: [String: SettlementRecordKind] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| ") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 7 else { continue }
            let kind: SettlementRecordKind? = cells[1].hasPrefix("adjustment: ") ? .adjustment : kinds[cells[1]]
            guard let kind else { continue }
            for type in names(Substring(cells[2])) { adyen[type] = kind }
            for category in names(Substring(cells[4])) { stripe[category] = kind }
        }
        #expect(adyen.count >= 50 && stripe.count >= 40, "the table was read: \(adyen.count) Adyen types, \(stripe.count) Stripe categories")
        for (type, kind) in adyen {
            #expect(SettlementRecordKind(adyenType: SettlementLineType(rawValue: type)) == kind, "\(type)")
            #expect(SettlementRecordKind(adyenType: SettlementLineType(rawValue: type.uppercased())) == kind, "\(type) upper-case")
        }
        for (category, kind) in stripe {
            #expect(SettlementRecordKind(stripeCategory: category) == kind, "\(category)")
        }
        // Nothing mapped that the documentation does not name.
        #expect(Set(SettlementRecordKind.adyen.keys).union(SettlementRecordKind.adyenLifecycle).subtracting(adyen.keys).isEmpty)
        #expect(Set(SettlementRecordKind.stripe.keys).subtracting(stripe.keys).isEmpty)
        #expect(SettlementRecordKind(adyenType: SettlementLineType(rawValue: "SuperNewRecordType")) == .unmapped)
        #expect(SettlementRecordKind(stripeCategory: "a_category_stripe_never_documented") == .unmapped)
    }

    /// Issue 52: a PAR's credited commission (`Commission (SC)` = `-0.11`) is a negative fee, as in the SDR, not a charged
    /// one: gross = net + fees = 100.11 − 0.11 = 100.00.
    @Test func aPARsCreditedCommissionIsANegativeFee() throws {
        let header = [
            "Company Account", "Merchant Account", "Psp Reference", "Merchant Reference", "Payment Method", "Record Type",
            "Settlement Currency", "Payable (SC)", "Commission (SC)", "Markup (SC)", "Scheme Fees (SC)", "Interchange (SC)",
            "Modification Merchant Reference", "Batch Number",
        ]
        let text = header.joined(separator: ",") + "\r\nLedgerCo,OrderLedgerStore,8816178952380001,o-1,visa,Settled,USD,100.11,-0.11,,,,mod-c1,7\r\n"
        var lines: [SettlementReportLine] = []
        _ = try SettlementReportImport.read(Array(text.utf8), ledgerColumns: SettlementReportCSV.columns, chunk: 64) { line, _ in
            lines.append(line)
        }
        let line = try #require(lines.first)
        #expect(line.commission?.minorUnits == -11 && line.totalFeesMinorUnits == -11, "\(line)")
        #expect(line.signedNetMinorUnits == 10_011 && line.signedGrossMinorUnits == 10_000, "\(line)")
    }

    /// The stream reader agrees with the whole-text reader however the bytes are cut.
    @Test(arguments: [1, 2, 3, 7, 64]) func theStreamingReaderAgreesWithTheWholeTextReader(chunk: Int) throws {
        let text = "a,\"b,\"\"c\"\"\r\nd\",e\r\n\"\",f\rg,h\n\"i\"\r\n"
        let whole = try CSVReader.records(text)
        var streamed: [[String]] = []
        var stream = CSVRecordStream()
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(start + chunk, bytes.count)
            try stream.feed(bytes[start..<end]) { streamed.append($0) }
            start = end
        }
        try stream.finish { streamed.append($0) }
        #expect(streamed == whole)
    }

    /// Fields are UTF-8 however the bytes are cut (a character split across two chunks is whole in its field), and
    /// bytes that are not UTF-8 are refused — fed as an array's slices or as a sequence without contiguous storage.
    @Test(arguments: [1, 2, 3, 64]) func theStreamingReaderKeepsUTF8AndRefusesWhatIsNot(chunk: Int) throws {
        func read(_ bytes: [UInt8], contiguous: Bool) throws -> [[String]] {
            var streamed: [[String]] = []
            var stream = CSVRecordStream()
            var start = 0
            while start < bytes.count {
                let end = min(start + chunk, bytes.count)
                if contiguous {
                    try stream.feed(bytes[start..<end]) { streamed.append($0) }
                } else {
                    try stream.feed(bytes[start..<end].lazy.map { $0 }) { streamed.append($0) }
                }
                start = end
            }
            try stream.finish { streamed.append($0) }
            return streamed
        }
        let text = "Café,\u{FFFD}€,\"Zürich, 東京\"\r\n\u{200F}x,\u{1F600}\n"
        for contiguous in [true, false] {
            #expect(try read(Array(text.utf8), contiguous: contiguous) == CSVReader.records(text))
            for bad: [UInt8] in [[0xC3], [0xFF, 0x61], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98]] {
                let bytes = Array("a,b".utf8) + bad + Array(",c\n".utf8)
                #expect(throws: CSVReaderError.self, "\(bad) is not UTF-8") { try read(bytes, contiguous: contiguous) }
            }
        }
    }
}
