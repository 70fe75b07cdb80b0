import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import LedgerBench
import LedgerCore
import LedgerServices
import OpenAPIRuntime

/// `ledgerd settle [--business-date YYYY-MM-DD | --today]`: closes a business day's settlement batches
/// through a running daemon (`POST /settlements/run`) — the daemon runs the job because the
/// acquirer it settles with lives there. Safe to re-run: a finished day appends nothing. `--today`
/// closes the open business day now, before its cut-off, as the operator's recorded action
/// (`{"close_now": true}`). Prints the run's summary (``SettlementRunReply``) as JSON with `--json`,
/// else as a table.
struct Settle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Settle a business day with the acquirer through a running daemon.")

    @Option(help: "Business date YYYY-MM-DD (default: the last business day whose cut-off has passed).") var businessDate: String?
    @Flag(
        help: """
            Close the open business day now, before its cut-off (recorded in its batches as your early close); \
            later captures settle with the next business day.
            """
    )
    var today = false
    @Flag(help: "Print the daemon's JSON reply instead of a table.") var json = false
    @OptionGroup var connection: Order.Connection

    /// Asks for the run as newline-delimited JSON (``SettlementRunLine``s), prints each progress line to
    /// standard error as it arrives, then the summary table (or the summary's JSON with `--json`).
    func validate() throws {
        if today && businessDate != nil { throw ValidationError("--today closes the open business day: give it or --business-date, not both") }
    }

    func run() async throws {
        // Without a date the daemon picks the day, by its own cut-off, calendar and clock (one source for them).
        let what =
            today
            ? "the open business day, closed now (before its cut-off)"
            : businessDate.map { "\($0) (as given)" } ?? "the last business day whose cut-off has passed, by the daemon's settings"
        FileHandle.standardError.write(Data("settling \(what) …\n".utf8))
        let body = Operations.RunSettlement.Input.Body.JsonPayload(businessDate: businessDate, closeNow: today ? true : nil)
        let started = Date()
        // The run's progress as it goes: newline-delimited JSON, read as it arrives (a run takes as long as the acquirer).
        let answer: Answer<Components.Schemas.SettlementRunReply?> = try await connection.withClient(timeout: .hours(24)) { client in
            switch try await client.runSettlement(headers: .init(accept: [.init(contentType: .applicationXNdjson)]), body: .json(body)) {
            case .ok(let ok):
                switch ok.body {
                case .json(let summary): return .ok(summary)
                case .applicationXNdjson(let lines):
                    var last: Components.Schemas.SettlementRunLine?
                    for try await line in lines.asDecodedJSONLines(of: Components.Schemas.SettlementRunLine.self) {
                        last = line
                        guard let step = line.progress else { continue }
                        let elapsed = String(format: "%7.1fs", Date().timeIntervalSince(started))
                        // The acquirer's receipt counts its report's lines (the items and the payout line), not our items.
                        let unit = step.step == "accepted" ? "report lines" : "items"
                        let items = step.items.map { " \($0) \(unit)" } ?? ""
                        let detail = step.detail.map { " \($0)" } ?? ""
                        FileHandle.standardError.write(Data("\(elapsed)  \(step.batchId)  \(step.step)\(items)\(detail)\n".utf8))
                    }
                    // The last line is the summary, or why the run failed after it had started.
                    if let failure = last?.error {
                        print("settlement failed: \(failure.code): \(failure.message)")
                        throw ExitCode(1)
                    }
                    return .ok(last?.summary)
                }
            case .badRequest(let refusal): return .refused(400, refusal)
            case .unauthorized(let refusal): return .refused(401, refusal)
            case .forbidden(let refusal): return .refused(403, refusal)
            case .conflict(let refusal): return .refused(409, refusal)
            case .contentTooLarge(let refusal): return .refused(413, refusal)
            case .unsupportedMediaType(let refusal): return .refused(415, refusal)
            case .unprocessableContent(let refusal): return .refused(422, refusal)
            case .badGateway(let refusal): return .refused(502, refusal)
            case .serviceUnavailable(let refusal): return .refused(503, refusal)
            case .undocumented(let status, let payload): return .undocumented(status: status, payload.body)
            }
        }
        guard case .ok(let reply) = answer else { try await answer.fail() }
        guard let summary = reply else {
            print("settlement ended without its summary")
            throw ExitCode(1)
        }
        print(json ? try WireJSON.encode(summary) : Self.table(summary))
    }

    static func table(_ summary: Components.Schemas.SettlementRunReply) -> String {
        let header = ["batch", "stage", "number", "captures", "refunds", "gross", "net", "payout", "value date", "new events"]
        let rows = summary.batches.map { b in
            [
                b.batchId, b.stage.rawValue, b.batchNumber.map(String.init) ?? "", String(b.captures), String(b.refunds), b.gross,
                b.net ?? "", b.payout ?? "", b.valueDate ?? "", String(b.appendedEvents),
            ]
        }
        if rows.isEmpty { return "\(summary.businessDate): nothing to settle" }
        let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }
        let closing =
            summary.closedEarlyBy.map { "closed early at \(summary.cutOffAt) by \($0); scheduled cut-off \(summary.scheduledCutOffAt ?? "")" }
            ?? "cut-off \(summary.cutOffAt)"
        return (["business date \(summary.businessDate) (\(closing))", line(header)] + rows.map(line)).joined(separator: "\n")
    }
}

/// `ledgerd reconcile --report FILE [--format F] [--batch ID]`: reconciles a settlement report CSV
/// (the model's layout, an Adyen SDR or PAR, a Stripe itemized payout reconciliation, a Checkout.com financial actions report) against the ledger through
/// a running daemon (`POST /reconciliation/reports`); the result and its breaks are recorded there.
/// Prints a summary; `--json-out` writes the reconciliation as JSON, `--csv-out` its breaks as CSV.
/// Exits 3 when open breaks remain.
struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Reconcile a settlement report CSV with the ledger through a running daemon.")

    @Option(help: "The settlement report CSV.") var report: String
    @Option(help: "The report's format: ledger, adyen_sdr, adyen_par, stripe_itemized, checkout_financial_actions (default: from its header).")
    var format: String?
    @Option(help: "The settlement batch the report is for (default: the one it names).") var batch: String?
    @Option(help: "Write the reconciliation as JSON to this file.") var jsonOut: String?
    @Option(help: "Write the breaks as CSV to this file.") var csvOut: String?
    @OptionGroup var connection: Order.Connection

    func validate() throws {
        typealias Format = Operations.UploadReconciliationReport.Input.Query.FormatPayload
        if let format, Format(rawValue: format) == nil {
            throw ValidationError("--format is one of " + Format.allCases.map(\.rawValue).joined(separator: ", "))
        }
    }

    func run() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: report))
        let query = Operations.UploadReconciliationReport.Input.Query(
            format: format.flatMap(Operations.UploadReconciliationReport.Input.Query.FormatPayload.init(rawValue:)),
            batch: batch
        )
        let answer: Answer<Components.Schemas.Reconciliation> = try await connection.withClient(timeout: .minutes(10)) { client in
            switch try await client.uploadReconciliationReport(query: query, body: .csv(HTTPBody(data))) {
            case .ok(let ok): .ok(try ok.body.json)
            case .badRequest(let refusal): .refused(400, refusal)
            case .unauthorized(let refusal): .refused(401, refusal)
            case .forbidden(let refusal): .refused(403, refusal)
            case .notFound(let refusal): .refused(404, refusal)
            case .conflict(let refusal): .refused(409, refusal)
            case .contentTooLarge(let refusal): .refused(413, refusal)
            case .unprocessableContent(let refusal): .refused(422, refusal)
            case .tooManyRequests(let refusal): .refused(429, refusal)
            case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
            }
        }
        guard case .ok(let result) = answer else { try await answer.fail() }
        if let jsonOut { try Data(WireJSON.encode(result).utf8).write(to: URL(fileURLWithPath: jsonOut)) }
        if let csvOut {
            // For people (a spreadsheet): the references come from the report, the breaks' cells are neutralised.
            let header = CSVWriter.record(["break_id", "class", "reference", "expected", "actual", "state", "detail"], .spreadsheetSafe)
            let rows = result.breaks.map { b in
                CSVWriter.record(
                    [b.breakId, b._class.rawValue, b.reference, b.expected ?? "", b.actual ?? "", b.resolved ? "resolved" : "open", b.detail],
                    .spreadsheetSafe
                )
            }
            try (header + rows.joined()).write(toFile: csvOut, atomically: true, encoding: .utf8)
        }
        print(
            "batch \(result.batchId): \(result.reportLines) report lines, \(result.ledgerItems) ledger items, "
                + "\(result.matched) matched, \(result.breaks.count) breaks (\(result.openBreaks) open)"
                + (result.windowClosed ? "" : "; the next batch is not settled yet, absent items count as timing")
        )
        for b in result.breaks {
            print(
                "  \(b._class.rawValue.padding(toLength: 20, withPad: " ", startingAt: 0)) \(b.reference)  \(b.detail)\(b.resolved ? " [resolved]" : "")"
            )
        }
        if result.openBreaks > 0 { throw ExitCode(3) }
    }
}
