import Foundation
import LedgerServices
import Testing

/// The bank import's normalized spool (issue 53's figure): its lines are written by the ledger's direct encoder, and must
/// stay exactly the bytes Foundation's `JSONEncoder` (sorted keys) wrote before — each statement's content digest hashes
/// them, and a statement imported earlier must be recognized as the same (`already_imported`, not `conflicting`).
@Suite struct BankSpoolTests {
    @Test(arguments: [
        ("mt940-statement.sta", "mt940"), ("camt053-001-02.xml", "camt.053"), ("camt054-001-08.xml", "camt.054"),
        ("bai2-prior-day.bai", "bai2"),
    ])
    func everySpoolLineIsFoundationsSortedKeyJSON(_ fixture: String, _ format: String) throws {
        let file = BankStatementImportTests.fixtures.appendingPathComponent(fixture)
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("bank-spool-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: spool) }
        let statements = try BankStatementService.normalize(file, format: try #require(try BankStatementService.format(named: format)), into: spool)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let lines = try String(contentsOf: spool, encoding: .utf8).split(separator: "\n")
        #expect(lines.count > statements.count * 2)
        var slashes = 0
        for line in lines {
            let decoded = try JSONDecoder().decode(BankStatementService.SpoolLine.self, from: Data(line.utf8))
            let foundation = String(decoding: try encoder.encode(decoded), as: UTF8.self)
            #expect(foundation == String(line), "the spool's line differs from Foundation's")
            slashes += line.contains("\\/") ? 1 : 0
        }
        if format == "mt940" { #expect(slashes > 0, "the MT940 fixture's /EREF/ remittance information has slashes to escape") }
    }
}
