import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import Testing

/// The settlement scenario's report, byte for byte, against a file checked in: a change to pricing,
/// rounding, identifiers or the CSV layout shows up here as a diff to review. To accept a deliberate
/// change, run with `LEDGERD_UPDATE_GOLDEN=1` and commit the new file.
@Suite struct GoldenReportTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/settlement-seed42.csv")

    @Test func theScenariosReportMatchesTheGoldenFile() throws {
        var scenario = try SettlementScenario(seed: 42)
        var request = scenario.batch
        request.businessDate = BusinessDate("2025-01-06")
        scenario.batch = request
        let csv = try SettlementReportCSV().write(try scenario.settle().lines)
        if ProcessInfo.processInfo.environment["LEDGERD_UPDATE_GOLDEN"] == "1" {
            try csv.write(to: Self.golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: Self.golden, encoding: .utf8)
        #expect(Array(csv.utf8) == Array(expected.utf8))
        // The business date the ledger names is the report's, and money is conserved line by line.
        var dated = try SettlementScenario(seed: 42).batchWithDate()
        let report = try dated.settle()
        #expect(report.businessDate == BusinessDate("2025-01-06") && report.payout.valueDate == BusinessDate("2025-01-07"))
    }

    @Test func aNamedBusinessDateWinsOverTheSubmissionTime() throws {
        var scenario = try SettlementScenario(seed: 42).batchWithDate()
        // Submitted after the day's 22:00 cut-off: by time alone this would be the next business day.
        let report = try scenario.settle(at: at("2025-01-06", 23))
        #expect(report.businessDate == BusinessDate("2025-01-06"))
        var unnamed = try SettlementScenario(seed: 42)
        #expect(try unnamed.settle(at: at("2025-01-06", 23)).businessDate == BusinessDate("2025-01-07"))
    }
}

extension SettlementScenario {
    func batchWithDate() -> SettlementScenario {
        var copy = self
        copy.batch.businessDate = BusinessDate("2025-01-06")
        return copy
    }
}
