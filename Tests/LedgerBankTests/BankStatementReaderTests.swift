import Foundation
import LedgerBank
import LedgerCore
import Testing

/// The fixtures, written from each format's published specification (docs/bank-statements.md says which), read back:
/// amounts, signs, dates, references and balances; then the refusals (a statement that does not add up, malformed
/// files, an XML bomb).
struct BankStatementReaderTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    /// Reads a line format fed in chunks of `chunk` bytes (a chunk ends anywhere: inside a field, between CR and LF).
    static func read(_ format: BankStatementFormat, _ bytes: [UInt8], chunk: Int = 7) throws -> [BankStatementItem] {
        var items: [BankStatementItem] = []
        switch format {
        case .mt940:
            var reader = MT940Reader()
            var start = 0
            while start < bytes.count {
                try reader.feed(bytes[start..<min(start + chunk, bytes.count)]) { items.append($0) }
                start += chunk
            }
            try reader.finish { items.append($0) }
        case .bai2:
            var reader = BAI2Reader()
            var start = 0
            while start < bytes.count {
                try reader.feed(bytes[start..<min(start + chunk, bytes.count)]) { items.append($0) }
                start += chunk
            }
            try reader.finish { items.append($0) }
        case .camt053, .camt054:
            try CamtReader.read(bytes: bytes) { items.append($0) }
        }
        return items
    }

    static func entries(_ items: [BankStatementItem]) -> [BankEntry] {
        items.compactMap { if case .entry(let entry) = $0 { entry } else { nil } }
    }

    static func headers(_ items: [BankStatementItem]) -> [BankStatementHeader] {
        items.compactMap { if case .statement(let header) = $0 { header } else { nil } }
    }

    static func ends(_ items: [BankStatementItem]) -> [BankStatementEnd] {
        items.compactMap { if case .end(let end) = $0 { end } else { nil } }
    }

    static func date(_ text: String) -> BusinessDate { BusinessDate(text)! }
    static func eur(_ units: Int64) -> Money { Money(minorUnits: units, currency: .eur) }

    /// The error a read throws, as a BankStatementError (nil when it read).
    static func refusal(_ format: BankStatementFormat, _ text: String) -> BankStatementError? {
        do {
            _ = try read(format, Array(text.utf8))
            return nil
        } catch let error as BankStatementError {
            return error
        } catch {
            return BankStatementError(place: "unexpected", reason: "\(error)")
        }
    }

    @Test func mt940ReadsEntriesWithAllTheirVariations() throws {
        let items = try Self.read(.mt940, try Self.bytes("mt940-statement.sta"))
        let headers = Self.headers(items)
        #expect(headers.map(\.statementID) == ["00338", "00339"])
        #expect(headers.map(\.sequence) == ["001", "001"])
        #expect(headers[0].account == "DE89370400440532013000")
        #expect(headers[0].opening == BankBalance(amount: Self.eur(1_000_000), date: Self.date("2026-12-03")))
        #expect(Self.ends(items).map(\.closing?.amount) == [Self.eur(1_165_007), Self.eur(1_365_007)])
        #expect(Self.ends(items).map(\.entries) == [5, 1])
        let entries = Self.entries(items)
        #expect(entries.map(\.amount.minorUnits) == [123_456, -1000, 50_000, 2550, -9999, 200_000])
        // Entry date present (1204) or absent (the third); value dates as written.
        #expect(entries.map(\.valueDate) == ["2026-12-04", "2026-12-04", "2026-12-05", "2026-12-04", "2026-12-04", "2026-12-05"].map(Self.date))
        #expect(
            entries.map(\.bookingDate) == [
                Self.date("2026-12-04"), Self.date("2026-12-04"), nil, Self.date("2026-12-04"), Self.date("2026-12-04"), Self.date("2026-12-05"),
            ]
        )
        #expect(entries.map(\.ownerReference) == ["PAYOUT-7F3A", nil, "CUSTREF-42", nil, "MANDATE-77", "ACQ-20261204-E"])
        #expect(entries.map(\.bankReference) == ["BNK0001", "BNK0002", "BNK0003", "BNK0004", "BNK0005", "BNK0006"])
        #expect(entries.map(\.transactionCode) == ["NTRF", "NCHG", "S103", "NRTI", "NDDT", "NTRF"])
        // RD: the reversal of a debit is a credit; the funds code R of the fifth is not part of its amount.
        #expect(entries.map(\.reversal) == [false, false, false, true, false, false])
        // :86: over two lines is one text; its /EREF/ is the end-to-end id.
        #expect(entries[0].remittanceInformation == "/EREF/ACQ-BATCH-20261203-EUR/REMI/Settlement batch 20261203 EUR payout/NAME/MODEL ACQUIRER")
        #expect(entries.map(\.endToEndIDs) == [["ACQ-BATCH-20261203-EUR"], [], ["INV-2026-0042"], [], ["DD-77-2026-12"], ["ACQ-BATCH-20261204-EUR"]])
        // The supplementary details line of :61: is kept when no :86: replaces it... the third has both: :86: wins.
        #expect(entries[2].remittanceInformation == "/EREF/INV-2026-0042/REMI/Invoice 2026-0042")
    }

    @Test func mt940EntryDateAcrossTheYearEnd() throws {
        // Value 2 January 2027, booked 31 December: the entry date's year is the one nearest the value date.
        let text = ":20:X\n:25:ACC\n:28C:1/1\n:60F:C261231EUR0,\n:61:2701021231C5,00NTRFREF\n:62F:C270102EUR5,00\n"
        let entries = Self.entries(try Self.read(.mt940, Array(text.utf8)))
        #expect(entries.map(\.bookingDate) == [Self.date("2026-12-31")])
        #expect(entries.map(\.valueDate) == [Self.date("2027-01-02")])
    }

    @Test func bai2ReadsDetailsContinuationsAndFundTypes() throws {
        let items = try Self.read(.bai2, try Self.bytes("bai2-prior-day.bai"))
        let headers = Self.headers(items)
        #expect(headers.map(\.account) == ["0001234567", "9876543210"])
        #expect(headers.map(\.currency) == [.usd, .eur])
        #expect(headers.map(\.statementID) == ["FILE042/2026-12-04", "FILE042/2026-12-04"])
        // The 03 record continued by an 88 still carries the closing ledger balance (015).
        #expect(headers[0].opening?.amount == Money(minorUnits: 500_000, currency: .usd))
        #expect(headers[0].closing?.amount == Money(minorUnits: 616_000, currency: .usd))
        let entries = Self.entries(items)
        #expect(entries.map(\.amount) == [150_000, 25000, -4000, 12345, -67345].map { Money(minorUnits: $0, currency: .usd) } + [Self.eur(250_000)])
        #expect(entries.map(\.transactionCode) == ["195", "165", "475", "142", "699", "195"])
        // Funds type V carries the value date; the others are the as-of date.
        #expect(entries.map(\.valueDate) == ["2026-12-04", "2026-12-05", "2026-12-04", "2026-12-04", "2026-12-04", "2026-12-04"].map(Self.date))
        #expect(entries.map(\.bankReference) == ["WIRE0001", "ACH0002", "CHK0003", "ACH0004", "MISC0005", "WIRE0101"])
        #expect(entries.map(\.ownerReference) == ["ACQ-BATCH-20261203-USD", "INV-42", nil, "ACQ-BATCH-20261202-USD", nil, "ACQ-BATCH-20261203-EUR"])
        // 88 continuing a text field (no slash before it) joins the text.
        #expect(entries[3].remittanceInformation == "SETTLEMENT BATCH 20261202 USD LATE PAYOUT")
        #expect(entries[4].remittanceInformation == "MISCELLANEOUS DEBIT CONTINUED NARRATIVE")
        #expect(Self.ends(items).map(\.net.minorUnits) == [116_000, 250_000])
    }

    @Test func camt053Version02() throws {
        let items = try Self.read(.camt053, try Self.bytes("camt053-001-02.xml"))
        let header = try #require(Self.headers(items).first)
        #expect(header.format == .camt053)
        #expect(header.account == "DE89370400440532013000")
        #expect(header.statementID == "STMT-20261204-DE89")
        #expect(header.sequence == "338")
        #expect(header.opening == BankBalance(amount: Self.eur(1_000_000), date: Self.date("2026-12-03")))
        #expect(header.closing?.amount == Self.eur(1_237_956))
        let entries = Self.entries(items)
        #expect(entries.map(\.amount) == [Self.eur(123_456), Self.eur(-1500), Self.eur(116_000), Self.eur(30000)])
        #expect(entries.map(\.booked) == [true, true, true, false])
        #expect(entries.map(\.valueDate) == ["2026-12-04", "2026-12-04", "2026-12-05", "2026-12-07"].map(Self.date))
        #expect(entries.map(\.bankReference) == ["BNK-2026120400001", "BNK-2026120400002", "BNK-2026120400003", "BNK-2026120400004"])
        #expect(entries.map(\.endToEndIDs) == [["ACQ-BATCH-20261203-EUR"], [], ["ACQ-BATCH-20261202-EUR"], []])
        #expect(entries[0].remittanceInformation == "Settlement batch 20261203 EUR payout PO-7F3A")
        #expect(entries[0].transactionCode == "PMNT/RCDT/ESCT")
        #expect(entries[1].transactionCode == "NCHG")
        #expect(entries[1].remittanceInformation == "Account maintenance fee")
        #expect(entries[2].remittanceInformation == "RF18539007547034 Customer refund return")
        // The pending entry does not count: opening + booked = closing.
        #expect(Self.ends(items).map(\.net) == [Self.eur(237_956)])
    }

    @Test func camt053Version08WithPrefixesDateTimesAndAReversal() throws {
        let items = try Self.read(.camt053, try Self.bytes("camt053-001-08.xml"))
        let header = try #require(Self.headers(items).first)
        #expect(header.account == "12345678")
        #expect(header.currency == .gbp)
        #expect(header.sequence == "77")
        // PRCD (the previous closing) opens when there is no OPBD; a DBIT balance is negative.
        #expect(header.opening?.amount == Money(minorUnits: -25000, currency: .gbp))
        #expect(header.closing?.date == Self.date("2026-12-05"))
        let entries = Self.entries(items)
        #expect(entries.map(\.amount.minorUnits) == [500_001, -1000])
        #expect(entries.map(\.bookingDate) == [Self.date("2026-12-05"), Self.date("2026-12-05")])
        #expect(entries.map(\.reversal) == [false, true])
        #expect(entries.map(\.ownerReference) == ["E-1", nil])
        #expect(entries[0].endToEndIDs == ["ACQ-BATCH-20261204-GBP"])
    }

    @Test func camt054Notification() throws {
        let items = try Self.read(.camt054, try Self.bytes("camt054-001-08.xml"))
        let header = try #require(Self.headers(items).first)
        #expect(header.format == .camt054)
        #expect(header.statementID == "NTF-20261204-0042-1")
        #expect(header.opening == nil && header.closing == nil)
        let entries = Self.entries(items)
        #expect(entries.map(\.amount) == [Money(minorUnits: 84530, currency: Currency(code: "CHF")!)])
        #expect(entries[0].endToEndIDs == ["ACQ-BATCH-20261203-CHF"])
        #expect(entries[0].remittanceInformation == "Payout 20261203 CHF")
    }

    @Test func formatsAreDetectedFromTheirFirstBytes() throws {
        #expect(BankStatementFormat.detect(prefix: try Self.bytes("mt940-statement.sta")) == .mt940)
        #expect(BankStatementFormat.detect(prefix: try Self.bytes("bai2-prior-day.bai")) == .bai2)
        #expect(BankStatementFormat.detect(prefix: try Self.bytes("camt053-001-02.xml")) == .camt053)
        #expect(BankStatementFormat.detect(prefix: try Self.bytes("camt053-001-08.xml")) == .camt053)
        #expect(BankStatementFormat.detect(prefix: try Self.bytes("camt054-001-08.xml")) == .camt054)
        #expect(BankStatementFormat.detect(prefix: Array("Merchant Account,Psp Reference\n".utf8)) == nil)
    }

    @Test func aStatementThatDoesNotAddUpIsRefusedNamingTheDifference() throws {
        // MT940: closing 11650.17 where the entries make 11650.07.
        let mt940 = String(decoding: try Self.bytes("mt940-statement.sta"), as: UTF8.self)
            .replacingOccurrences(of: ":62F:C261204EUR11650,07", with: ":62F:C261204EUR11650,17")
        let error = try #require(Self.refusal(.mt940, mt940))
        #expect(error.difference == Self.eur(-10))
        #expect(error.description.contains("statement 00338 does not add up"))
        #expect(error.description.contains("a difference of -0.10 EUR"))
        // BAI2: the closing ledger one cent short (the control totals agree, so only the balance rule catches it).
        let bai2 = String(decoding: try Self.bytes("bai2-prior-day.bai"), as: UTF8.self)
            .replacingOccurrences(of: "88,015,616000,,/", with: "88,015,615999,,/")
            .replacingOccurrences(of: "49,1374690,10/", with: "49,1374689,10/")
            .replacingOccurrences(of: "98,2074690,2,15/", with: "98,2074689,2,15/")
            .replacingOccurrences(of: "99,2074690,1,17/", with: "99,2074689,1,17/")
        #expect(Self.refusal(.bai2, bai2)?.difference == Money(minorUnits: 1, currency: .usd))
        // camt: CLBD one euro more than the booked entries make.
        let camt = String(decoding: try Self.bytes("camt053-001-02.xml"), as: UTF8.self)
            .replacingOccurrences(of: "12379.56", with: "12380.56")
        let camtError = try #require(Self.refusal(.camt053, camt))
        #expect(camtError.difference == Self.eur(-100))
        #expect(camtError.description.contains("statement STMT-20261204-DE89 does not add up"))
    }

    @Test func bai2ControlTotalsAndCountsAreChecked() throws {
        let bai2 = String(decoding: try Self.bytes("bai2-prior-day.bai"), as: UTF8.self)
        #expect(
            Self.refusal(.bai2, bai2.replacingOccurrences(of: "49,1374690,10/", with: "49,1374691,10/"))?.reason.contains("control total") == true
        )
        #expect(Self.refusal(.bai2, bai2.replacingOccurrences(of: "49,1374690,10/", with: "49,1374690,9/"))?.reason.contains("records") == true)
        // Truncated: no file trailer.
        #expect(Self.refusal(.bai2, bai2.replacingOccurrences(of: "99,2074690,1,17/\n", with: ""))?.reason.contains("truncated") == true)
        #expect(Self.refusal(.bai2, bai2.replacingOccurrences(of: ",2/\n02,", with: ",3/\n02,"))?.reason.contains("version 2") == true)
    }

    @Test func malformedLineFormatsAreRefusedWithTheirLine() throws {
        let base = ":20:X\n:25:ACC\n:28C:1/1\n:60F:C261204EUR0,\n"
        // Three fraction digits in EUR, a missing comma, an unknown mark, a missing closing balance.
        #expect(Self.refusal(.mt940, base + ":61:261204C1,001NTRFREF\n:62F:C261204EUR1,00\n")?.place == "line 5 (:61:)")
        #expect(Self.refusal(.mt940, base + ":61:261204C100NTRFREF\n:62F:C261204EUR1,00\n")?.reason.contains("not an amount") == true)
        #expect(Self.refusal(.mt940, base + ":61:261204X1,00NTRFREF\n:62F:C261204EUR1,00\n")?.reason.contains("debit/credit mark") == true)
        #expect(Self.refusal(.mt940, base + ":61:261204C1,00NTRFREF\n")?.reason.contains("no closing balance") == true)
        #expect(Self.refusal(.mt940, ":20:X\n:25:ACC\n:60F:C261204XXX0,\n:62F:C261204XXX0,\n")?.reason.contains("currency") == true)
        #expect(Self.refusal(.bai2, "01,A,B,261204,0600,F1,,,2/\n16,195,100,0,,,/\n")?.reason.contains("outside an account") == true)
        // A line with no line break longer than the cap: refused, not buffered.
        let long = ":20:" + String(repeating: "A", count: BankLineStream.maximumLength + 10)
        #expect(Self.refusal(.mt940, long)?.reason.contains("longer than") == true)
    }

    @Test func malformedXMLAndTheWrongDocumentAreRefused() throws {
        let camt = String(decoding: try Self.bytes("camt053-001-02.xml"), as: UTF8.self)
        // Cut in the middle of an entry: not well-formed.
        let cut = String(camt.prefix(camt.count / 2))
        #expect(Self.refusal(.camt053, cut)?.reason.contains("malformed") == true)
        // A pain.001 (a payment initiation), not a statement.
        #expect(Self.refusal(.camt053, "<Document><CstmrCdtTrfInitn/></Document>")?.reason.contains("not a camt.053") == true)
        // Amounts: three fraction digits in EUR, an unknown currency.
        #expect(
            Self.refusal(
                .camt053,
                camt.replacingOccurrences(of: ">1234.56</Amt>\n        <CdtDbtInd>", with: ">1234.561</Amt>\n        <CdtDbtInd>")
            )?.reason.contains("not an amount") == true
        )
        #expect(
            Self.refusal(.camt053, camt.replacingOccurrences(of: "<Amt Ccy=\"EUR\">15.00", with: "<Amt Ccy=\"XXX\">15.00"))?.reason.contains(
                "currency"
            ) == true
        )
    }

    @Test func anXMLBombAndAnExternalEntityAreRefusedBeforeParsing() throws {
        // The billion laughs: ten levels of ten references, 10^9 "lol"s if expanded.
        var bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE Document [\n<!ENTITY lol \"lol\">\n"
        bomb += "<!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        for level in 2...9 {
            bomb += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">\n"
        }
        bomb += "]>\n<Document><BkToCstmrStmt><GrpHdr><MsgId>&lol9;</MsgId></GrpHdr></BkToCstmrStmt></Document>\n"
        let error = try #require(Self.refusal(.camt053, bomb))
        #expect(error.reason.contains("declares a document type"))
        let external = "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><Document>&x;</Document>"
        #expect(Self.refusal(.camt053, external)?.reason.contains("declares a document type") == true)
        // Through a file too (the path the service uses), the keyword split across the scanner's chunks.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bomb-\(UUID().uuidString).xml").path
        let padded = String(repeating: " ", count: 64 * 1024 - 4) + bomb
        try Data(padded.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: BankStatementError.self) { try CamtReader.read(path: path) { _ in } }
    }

    @Test func camtReadsFromAFileStreaming() throws {
        var items: [BankStatementItem] = []
        try CamtReader.read(path: Self.fixtures.appendingPathComponent("camt053-001-02.xml").path) { items.append($0) }
        #expect(Self.entries(items).count == 4)
    }
}
