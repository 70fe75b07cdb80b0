import Foundation
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// Issue 52, step 1: numbers and file shapes as the acquirers export them (docs/report-formats.md, "Numbers"), one
/// fixture per spelling in `Golden/report-formats/numbers/`, each read back with its amounts, signs and currencies,
/// and stored and read back as the ledger stores an upload (the model's layout, ``SettlementReportCSV``).
@Suite struct ReportNumberSpellingTests {
    static let folder = ReportFormatGoldenTests.folder.appendingPathComponent("numbers")

    /// The fixture's lines, read in small chunks, and the same lines after the ledger stored them.
    func load(_ name: String) throws -> [SettlementReportLine] {
        let bytes = Array(try Data(contentsOf: Self.folder.appendingPathComponent(name)))
        var lines: [SettlementReportLine] = []
        try SettlementReportImport.read(bytes, ledgerColumns: SettlementReportCSV.columns, chunk: 13) { line, _ in lines.append(line) }
        let stored = try SettlementReportCSV().rows(lines, firstRow: 2)
        #expect(try SettlementReportCSV().parseRows(stored, firstRow: 2) == lines, "\(name) reads back as stored")
        for line in lines where [.capture, .refund].contains(SettlementRecordKind(adyenType: line.type)) && line.grossCurrency == line.netCurrency {
            #expect(SettlementConservation.lineViolation(line) == nil, "\(name)")
        }
        return lines
    }

    func usd(_ units: Int64) -> Money { Money(minorUnits: units, currency: .usd) }

    @Test func anAmountWithoutALeadingZero() throws {
        let lines = try load("leading-dot.csv")
        #expect(lines.count == 2)
        #expect(lines[0].markup == usd(11) && lines[0].schemeFees == usd(30) && lines[0].interchange == usd(150))
        #expect(lines[0].signedGrossMinorUnits == 10_000 && lines[0].signedNetMinorUnits == 9809)
        #expect(lines[1].type == .merchantPayout && lines[1].signedNetMinorUnits == -9809)
    }

    @Test func aNegativeFeeIsACreditedFee() throws {
        let lines = try load("negative-fees.csv")
        let jpy = try #require(Currency(code: "JPY"))
        #expect(lines[0].commission == Money(minorUnits: -5, currency: jpy) && lines[0].netCurrency == jpy)
        #expect(lines[0].signedGrossMinorUnits == 1000 && lines[0].signedNetMinorUnits == 1005 && lines[0].totalFeesMinorUnits == -5)
        #expect(lines[1].commission == usd(-11) && lines[1].markup == usd(30))
        #expect(lines[1].signedNetMinorUnits == 981 && lines[1].totalFeesMinorUnits == 19)
    }

    @Test func anExchangeRateIsKeptAtItsFullPrecision() throws {
        let lines = try load("exchange-rate-15-digits.csv")
        let rate = try #require(lines[0].exchangeRate)
        #expect(rate.numerator == 6_733_333_333_333 && rate.denominator == 1_000_000_000_000_000)
        #expect(lines[0].grossCurrency?.code == "JPY" && lines[0].netCurrency == .usd && lines[0].signedNetMinorUnits == 990)
        let one = try #require(lines[1].exchangeRate)
        #expect(one.numerator == one.denominator && one.denominator == 1_000_000_000_000_000)
        // Written back with the digits it came with.
        let row = try SettlementReportCSV().rows([lines[0], lines[1]], firstRow: 2)
        #expect(row.contains(",0.006733333333333,") && row.contains(",1.000000000000000,"))
    }

    @Test func aThousandsSeparatorIsRefusedNamingRowColumnAndValue() throws {
        let bytes = Array(try Data(contentsOf: Self.folder.appendingPathComponent("thousands-separator.csv")))
        do {
            try SettlementReportImport.read(bytes, ledgerColumns: SettlementReportCSV.columns) { _, _ in }
            Issue.record("a thousands separator was read")
        } catch let error as ReportImportError {
            #expect("\(error)" == "row 2: Gross Credit (GC) \"1,234.56\" has a thousands separator: write the amount without grouping (1234.56)")
        }
    }

    @Test func aByteOrderMarkAndCRLF() throws {
        let lines = try load("bom-crlf.csv")
        #expect(lines.count == 1 && lines[0].companyAccount == "LedgerCo" && lines[0].paymentMethod == "mc")
        #expect(lines[0].signedGrossMinorUnits == 5900 && lines[0].signedNetMinorUnits == 5763 && lines[0].grossCurrency == .usd)
    }

    @Test func blankLinesBeforeTheHeaderAndBetweenRecords() throws {
        let lines = try load("blank-lines.csv")
        #expect(lines.map(\.type) == [.refunded, .settled])
        #expect(lines[0].signedGrossMinorUnits == -1000 && lines[0].signedNetMinorUnits == -1000)
        #expect(lines[1].signedGrossMinorUnits == 2500 && lines[1].signedNetMinorUnits == 2434)
    }

    @Test func quotedFields() throws {
        let lines = try load("quoted-fields.csv")
        #expect(lines.count == 1 && lines[0].merchantAccount == "Ledger, Inc. \"US\"" && lines[0].batchNumber == 7)
        #expect(lines[0].signedGrossMinorUnits == 10_000 && lines[0].signedNetMinorUnits == 9770 && lines[0].markup == usd(50))
    }

    @Test func aSignOnAnyAmount() throws {
        let lines = try load("signed-amounts.csv")
        #expect(lines[0].signedGrossMinorUnits == 2500 && lines[0].signedNetMinorUnits == 2434 && lines[0].markup == usd(13))
        // "Net Debit (NC)" = -3.00: a debit of −3 is a credit of 3.
        #expect(lines[1].netDebit == nil && lines[1].netCredit == usd(300) && lines[1].signedNetMinorUnits == 300)
    }
}
