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

/// `ledgerd reconcile --report FILE`: reconciles a settlement report CSV against the ledger through
/// a running daemon (`POST /reconciliation/reports`); the result and its breaks are recorded there.
/// Prints a summary; `--json-out` writes the reconciliation as JSON, `--csv-out` its breaks as CSV.
/// Exits 3 when open breaks remain.
struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Reconcile a settlement report CSV with the ledger through a running daemon.")

    @Option(help: "The settlement report CSV.") var report: String
    @Option(help: "Write the reconciliation as JSON to this file.") var jsonOut: String?
    @Option(help: "Write the breaks as CSV to this file.") var csvOut: String?
    @OptionGroup var connection: Order.Connection

    struct Result: Decodable {
        struct Break: Decodable {
            let break_id, `class`, reference, detail: String
            let expected, actual: String?
            let resolved: Bool
        }
        let batch_id: String
        let window_closed: Bool
        let report_lines, ledger_items, matched, open_breaks: Int
        let breaks: [Break]
    }

    func run() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: report))
        let (status, reply) = try await connection.post("/reconciliation/reports", data: data, contentType: "text/csv")
        guard (200..<300).contains(status), let result = try? JSONDecoder().decode(Result.self, from: reply) else {
            print(String(decoding: reply, as: UTF8.self))
            throw ExitCode(1)
        }
        if let jsonOut { try reply.write(to: URL(fileURLWithPath: jsonOut)) }
        if let csvOut {
            let rows = result.breaks.map { b in
                [b.break_id, b.class, b.reference, b.expected ?? "", b.actual ?? "", b.resolved ? "resolved" : "open", b.detail]
                    .map { $0.contains(where: { ",\"\n".contains($0) }) ? "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : $0 }
                    .joined(separator: ",")
            }
            try (["break_id,class,reference,expected,actual,state,detail"] + rows).joined(separator: "\r\n").appending("\r\n")
                .write(toFile: csvOut, atomically: true, encoding: .utf8)
        }
        print("batch \(result.batch_id): \(result.report_lines) report lines, \(result.ledger_items) ledger items, "
              + "\(result.matched) matched, \(result.breaks.count) breaks (\(result.open_breaks) open)"
              + (result.window_closed ? "" : "; the next batch is not settled yet, absent items count as timing"))
        for b in result.breaks {
            print("  \(b.class.padding(toLength: 20, withPad: " ", startingAt: 0)) \(b.reference)  \(b.detail)\(b.resolved ? " [resolved]" : "")")
        }
        if result.open_breaks > 0 { throw ExitCode(3) }
    }
}
