import ArgumentParser
import Foundation
import LedgerApp
import LedgerCore

/// `ledgerd settle [--business-date YYYY-MM-DD]`: closes a business day's settlement batches
/// through a running daemon (`POST /settlements/run`) — the daemon runs the job because the
/// acquirer it settles with lives there. Safe to re-run: a finished day appends nothing. Prints
/// the run's JSON with `--json`, else a summary table.
struct Settle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Settle a business day with the acquirer through a running daemon.")

    @Option(help: "Business date YYYY-MM-DD (default: the last business day whose cut-off has passed).") var businessDate: String?
    @Flag(help: "Print the daemon's JSON reply instead of a table.") var json = false
    @OptionGroup var connection: Order.Connection

    struct Summary: Decodable {
        struct Batch: Decodable {
            let batch_id, stage, gross: String
            let captures, refunds, appended_events: Int
            let net, payout, value_date: String?
            let batch_number: Int?
        }
        let business_date: String
        let batches: [Batch]
    }

    func run() async throws {
        let settings = try connection.common.configuration().settlement
        let date = businessDate ?? settings.lastClosedBusinessDay(now: Date()).description
        print("settling \(date) …")
        let (status, data) = try await connection.post("/settlements/run", body: ["business_date": date])
        guard (200..<300).contains(status), !json, let summary = try? JSONDecoder().decode(Summary.self, from: data) else {
            print(String(decoding: data, as: UTF8.self))
            if !(200..<300).contains(status) { throw ExitCode(1) }
            return
        }
        print(Self.table(summary))
    }

    static func table(_ summary: Summary) -> String {
        let header = ["batch", "stage", "number", "captures", "refunds", "gross", "net", "payout", "value date", "new events"]
        let rows = summary.batches.map { b in
            [b.batch_id, b.stage, b.batch_number.map(String.init) ?? "", String(b.captures), String(b.refunds), b.gross,
             b.net ?? "", b.payout ?? "", b.value_date ?? "", String(b.appended_events)]
        }
        if rows.isEmpty { return "\(summary.business_date): nothing to settle" }
        let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }
}
