import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// The ledger's text writers work on bytes or Unicode scalars, never on `Character` (security review 4, M1, M2): a
/// quote followed by a combining mark (`"` U+0301) is one `Character` that is not `"`, and a writer comparing
/// `Character`s left it undoubled — a field that broke out of its quotes. Each writer is checked against the project's
/// own reader on 100,000 seeded random strings (``TextSamples``), compared byte for byte (a `String` `==` compares
/// canonical equivalence, which would hide a lost or reordered combining mark).
@Suite struct TextWriterPropertyTests {
    static let count = 100_000

    /// The review's capture key and payment key, from their bytes (`k,"́x` and the cell-injecting one).
    static let captureKey = String(decoding: [0x6B, 0x2C, 0x22, 0xCC, 0x81, 0x78], as: UTF8.self)
    static let injectingKey = "anon\"\u{301},=HYPERLINK(1),\"\u{301}x"

    static func bytes(_ record: [String]) -> [[UInt8]] { record.map { Array($0.utf8) } }

    // MARK: Regressions

    @Test("M1: a reference with a quote and a combining mark is written so the report reads back")
    func settlementReportQuotesOnBytes() throws {
        var line = Self.line(text: "x")
        line.modificationMerchantReference = "order-1-capture-" + Self.captureKey
        let csv = SettlementReportCSV()
        let text = try csv.write([line])
        let read = try csv.parse(text)
        #expect(read.count == 1)
        #expect(Array(read[0].modificationMerchantReference.utf8) == Array(line.modificationMerchantReference.utf8))
    }

    @Test("M2: a field with a quote and a combining mark stays one cell, and a formula is not a cell of its own")
    func csvWriterQuotesOnBytes() throws {
        let fields = ["1", "order-1", Self.injectingKey, "{}"]
        let read = try CSVReader.records(CSVWriter.record(fields, .exact))
        #expect(read.map(Self.bytes) == [Self.bytes(fields)])
        let forPeople = try CSVReader.records(CSVWriter.record(fields, .spreadsheetSafe))
        #expect(forPeople.map(Self.bytes) == [Self.bytes(fields)])
        #expect(forPeople[0].allSatisfy { !$0.hasPrefix("=") })
    }

    @Test("spreadsheet-safe cells: a formula start gets a quote, a plain decimal number stays data")
    func spreadsheetSafeCells() {
        for formula in ["=1+1", "+1", "-1+1", "@SUM(A1)", "\tx", "\rx", "-", "=", "-5.00x", "--5", "-.5", "-5."] {
            #expect(CSVWriter.spreadsheetSafe(formula) == "'" + formula, "\(formula.debugDescription)")
        }
        for data in ["-5.00", "5.00", "-5", "0", "", "a=b", "'=x", " =x", "{\"a\":\"=b\"}", "12.5"] {
            #expect(CSVWriter.spreadsheetSafe(data) == data, "\(data.debugDescription)")
        }
        #expect(CSVWriter.field("=HYPERLINK(1)", .spreadsheetSafe) == "'=HYPERLINK(1)")
        #expect(CSVWriter.field("=HYPERLINK(1)", .exact) == "=HYPERLINK(1)")
    }

    @Test("M3: a report line whose reference holds /, ? or # or a control character is refused at import, naming row and column")
    func importRefusesPathCharactersInReferences() throws {
        var importer = try SettlementReportImporter(header: SettlementReportCSV.columns, format: .ledger, ledgerColumns: SettlementReportCSV.columns)
        let good = try CSVReader.records(try SettlementReportCSV().rows([Self.line(text: "x")], firstRow: 2))[0]
        #expect(try importer.lines(good, row: 2).count == 1)
        for reference in ["x/../../audit/checkpoints?", "a#b", "a?b", "a\u{0}b", "a\u{1B}b", "a\u{85}b", "a\tb"] {
            var record = good
            record[21] = reference
            let error = #expect(throws: ReportImportError.self) { try importer.lines(record, row: 3) }
            guard case .invalidReference(3, "Modification Merchant Reference", let value, _) = error else {
                Issue.record("\(reference.debugDescription): \(String(describing: error))")
                continue
            }
            #expect(value == reference)
        }
        #expect(ReportReference.refusal("order-1-capture-k,\"\u{301}x") == nil)
    }

    // MARK: Properties (100,000 strings per writer)

    @Test("CSV writer (exact cells): what CSVReader reads back is every field, byte for byte", .seeded())
    func csvWriterRoundTrips() throws {
        var random = PropertySeed.generator()
        for _ in 0..<Self.count {
            let record = [TextSamples.string(&random), TextSamples.string(&random)]
            let read = try CSVReader.records(CSVWriter.record(record, .exact))
            try #require(read.map(Self.bytes) == [Self.bytes(record)], "\(record.map(\.debugDescription))")
        }
    }

    @Test("audit/journal CSV (spreadsheet-safe): each cell reads back as written, quoted only to neutralise a formula", .seeded())
    func journalCSVRoundTrips() throws {
        var random = PropertySeed.generator()
        for position in 0..<Int64(Self.count) {
            let entry = JournalEntry(
                position: position,
                eventType: TextSamples.string(&random),
                recordedAtMicros: 0,
                effectiveAtMicros: 0,
                reference: TextSamples.string(&random),
                currency: .usd,
                lines: [JournalLine(account: .cardReceivable, debitMinorUnits: -position, creditMinorUnits: 0)]
            )
            let read = try CSVReader.records(JournalExport.csv(entry, .spreadsheetSafe))
            let expected = JournalExport.fields(entry, entry.lines[0])
            try #require(read.count == 1 && read[0].count == expected.count, "\(entry.reference.debugDescription)")
            for (cell, value) in zip(read[0], expected) {
                try #require(Array(cell.utf8) == Array(CSVWriter.spreadsheetSafe(value).utf8), "\(value.debugDescription)")
                // Nothing a spreadsheet runs: a formula start only on a plain decimal (an amount).
                if let first = cell.utf8.first, CSVWriter.formulaStarts.contains(first) {
                    try #require(CSVWriter.isPlainDecimal(cell), "\(cell.debugDescription)")
                }
            }
        }
    }

    @Test("settlement report CSV: rows → parseRows gives every text field back, byte for byte", .seeded())
    func settlementReportRoundTrips() throws {
        var random = PropertySeed.generator()
        let csv = SettlementReportCSV()
        var remaining = Self.count
        while remaining > 0 {
            // A page of lines at once (as the report is written), each with 8 random text fields.
            let lines = (0..<min(1_000, remaining)).map { _ in Self.line(random: &random) }
            remaining -= lines.count
            let read = try csv.parseRows(try csv.rows(lines, firstRow: 2), firstRow: 2)
            try #require(read.count == lines.count)
            for (got, line) in zip(read, lines) {
                try #require(Self.textFields(got).map { Array($0.utf8) } == Self.textFields(line).map { Array($0.utf8) }, "\(line)")
            }
        }
    }

    @Test("JSON writers (EventJSON.quote, CanonicalJSONEncoder): JSONDecoder reads every string back, byte for byte", .seeded())
    func jsonWritersRoundTrip() throws {
        var random = PropertySeed.generator()
        for _ in 0..<Self.count {
            let text = TextSamples.string(&random)
            // JSONDecoder, not JSONSerialization: this Foundation's JSONSerialization drops a U+FEFF that starts a
            // string value (seed 16850210699597746958), a reader's quirk, not the writer's.
            let quoted = Data(("[" + EventJSON.quote(text) + "]").utf8)
            let fromQuote = try JSONDecoder().decode([String].self, from: quoted)
            try #require(fromQuote.map { Array($0.utf8) } == [Array(text.utf8)], "\(text.debugDescription)")
            var canonical: [UInt8] = [UInt8(ascii: "[")]
            CanonicalJSONEncoder.writeString(text, into: &canonical)
            canonical.append(UInt8(ascii: "]"))
            let fromCanonical = try JSONDecoder().decode([String].self, from: Data(canonical))
            try #require(fromCanonical.map { Array($0.utf8) } == [Array(text.utf8)], "\(text.debugDescription)")
        }
    }

    // MARK: Lines

    static func textFields(_ line: SettlementReportLine) -> [String] {
        [
            line.companyAccount, line.merchantAccount, line.pspReference, line.merchantReference, line.paymentMethod,
            line.timeZone, line.modificationReference, line.paymentMethodVariant, line.modificationMerchantReference,
        ]
    }

    static func line(text: String) -> SettlementReportLine {
        SettlementReportLine(
            companyAccount: text,
            merchantAccount: text,
            pspReference: text,
            merchantReference: text,
            paymentMethod: text,
            creationDate: nil,
            timeZone: text,
            type: .settled,
            modificationReference: text,
            grossCurrency: .usd,
            grossDebit: nil,
            grossCredit: Money(minorUnits: 500, currency: .usd),
            exchangeRate: nil,
            netCurrency: nil,
            netDebit: nil,
            netCredit: nil,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: text,
            modificationMerchantReference: text,
            batchNumber: 7
        )
    }

    static func line(random: inout SeededRandom) -> SettlementReportLine {
        var line = line(text: "")
        line.companyAccount = TextSamples.string(&random)
        line.merchantAccount = TextSamples.string(&random)
        line.pspReference = TextSamples.string(&random)
        line.merchantReference = TextSamples.string(&random)
        line.paymentMethod = TextSamples.string(&random)
        line.timeZone = TextSamples.string(&random)
        line.modificationReference = TextSamples.string(&random)
        line.paymentMethodVariant = TextSamples.string(&random)
        line.modificationMerchantReference = TextSamples.string(&random)
        return line
    }
}
