import Foundation
import LedgerBank
import LedgerCore
import LedgerServices
import Testing

/// The import's read pass (``BankStatementService/normalize(_:format:into:)``): each statement's content digest is the
/// one earlier imports recorded in `BankStatementReceived` (a statement sent again must be `already_imported`, not
/// `conflicting`, whatever the spool's form), pinned for every fixture.
@Suite struct BankStatementSpoolTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LedgerBankTests/Fixtures")

    static let cases: [(String, BankStatementFormat)] = [
        ("mt940-statement.sta", .mt940), ("bai2-prior-day.bai", .bai2), ("camt053-001-02.xml", .camt053),
        ("camt053-001-08.xml", .camt053), ("camt054-001-08.xml", .camt054),
    ]

    /// Each fixture's statements' digests, as the import recorded them before the spool changed form.
    static let digests: [String: [String]] = [
        "mt940-statement.sta": [
            "b0cc603644aabf69c96ed81021dc7c9547c5be5bd4bb276e0f96ca695c3d87e3", "ba720d24a40557ce2d9b840f0e33704b838b81dd9cbd019b7f8e61144c31b941",
        ],
        "bai2-prior-day.bai": [
            "ce0cdab7891067629a43fb029fd944ed565d76ff12b7aeddaaa9292a07a352af", "ae865759d0e297a56781a52b7f75cd883c68d6d93056276d8613d6e0aa95d666",
        ],
        "camt053-001-02.xml": ["334723e65439d54585ab419abc486eba7de502c566ded5e20b49765c4cec5009"],
        "camt053-001-08.xml": ["1b0e6f7ce88751a97dd66553b24a0b0dba7019a146208fb13a9c44c821950419"],
        "camt054-001-08.xml": ["f4147460aa7de629a40df967405878bc13e23844f1e314566318fd3cba13abd5"],
    ]

    static func spool() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("bank-spool-test-\(UUID().uuidString).bin")
    }

    @Test func eachStatementsContentDigestIsTheOneEarlierImportsRecorded() throws {
        var found: [String: [String]] = [:]
        for (name, format) in Self.cases {
            let spool = Self.spool()
            defer { try? FileManager.default.removeItem(at: spool) }
            let statements = try BankStatementService.normalize(Self.fixtures.appendingPathComponent(name), format: format, into: spool)
            found[name] = statements.map(\.contentSHA256)
        }
        #expect(found == Self.digests, "\(found)")
    }

    /// What the spool gives back is what the reader read: every header, entry (each of its fields) and end, in order.
    @Test func theSpoolGivesBackWhatTheReaderRead() async throws {
        for (name, format) in Self.cases {
            let file = Self.fixtures.appendingPathComponent(name)
            var read: [BankStatementItem] = []
            switch format {
            case .camt053, .camt054: try CamtReader.read(path: file.path) { read.append($0) }
            case .mt940:
                var reader = MT940Reader()
                try reader.feed(Array(try Data(contentsOf: file))) { read.append($0) }
                try reader.finish { read.append($0) }
            case .bai2:
                var reader = BAI2Reader()
                try reader.feed(Array(try Data(contentsOf: file))) { read.append($0) }
                try reader.finish { read.append($0) }
            }
            let spool = Self.spool()
            defer { try? FileManager.default.removeItem(at: spool) }
            _ = try BankStatementService.normalize(file, format: format, into: spool)
            var back: [BankStatementItem] = []
            try await BankStatementService.forEachLine(of: spool) { line in
                switch line {
                case .statement(let header): back.append(.statement(header))
                case .entry(let entry): back.append(.entry(entry))
                case .end(let end): back.append(.end(end))
                }
            }
            #expect(back == read, "\(name)")
            #expect(read.contains { if case .entry = $0 { true } else { false } }, "\(name)")
        }
    }
}
