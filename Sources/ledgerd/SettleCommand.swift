import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import LedgerBench
import LedgerCore
import LedgerServices

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
        let body: [String: Any] = today ? ["close_now": true] : businessDate.map { ["business_date": $0] } ?? [:]
        var request = try connection.request(
            "/settlements/run",
            data: try JSONSerialization.data(withJSONObject: body),
            contentType: "application/json"
        )
        request.setValue("application/x-ndjson", forHTTPHeaderField: "Accept")
        request.timeoutInterval = 24 * 3600
        let started = Date()
        let reply = Reply()
        let status = try await Order.Connection.reaching(request) {
            try await LineReader.read(request) { line in
                guard let step = (try? WireJSON.decode(SettlementRunLine.self, from: line))?.progress else {
                    reply.append(line)
                    return
                }
                let elapsed = String(format: "%7.1fs", Date().timeIntervalSince(started))
                // The acquirer's receipt counts its report's lines (the items and the payout line), not our items.
                let unit = step.step == "accepted" ? "report lines" : "items"
                let items = step.items.map { " \($0) \(unit)" } ?? ""
                let detail = step.detail.map { " \($0)" } ?? ""
                FileHandle.standardError.write(Data("\(elapsed)  \(step.batch_id)  \(step.step)\(items)\(detail)\n".utf8))
            }
        }
        let lines = reply.lines
        // The last line is the summary, or why the run failed (an error reply has the same `error` member).
        let last = lines.last.flatMap { try? WireJSON.decode(SettlementRunLine.self, from: $0) }
        if let failure = last?.error {
            print("settlement failed: \(failure.code): \(failure.message)")
            throw ExitCode(1)
        }
        guard (200..<300).contains(status), let summary = last?.summary else {
            print(lines.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n"))
            throw ExitCode(1)
        }
        print(json ? try WireJSON.encode(summary) : Self.table(summary))
    }

    /// The non-progress lines of the reply.
    final class Reply: @unchecked Sendable {
        private let lock = NSLock()
        private var collected: [Data] = []
        func append(_ line: Data) { lock.withLock { collected.append(line) } }
        var lines: [Data] { lock.withLock { collected } }
    }

    static func table(_ summary: SettlementRunReply) -> String {
        let header = ["batch", "stage", "number", "captures", "refunds", "gross", "net", "payout", "value date", "new events"]
        let rows = summary.batches.map { b in
            [
                b.batch_id, b.stage, b.batch_number.map(String.init) ?? "", String(b.captures), String(b.refunds), b.gross,
                b.net ?? "", b.payout ?? "", b.value_date ?? "", String(b.appended_events),
            ]
        }
        if rows.isEmpty { return "\(summary.business_date): nothing to settle" }
        let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
        }
        let closing =
            summary.closed_early_by.map { "closed early at \(summary.cut_off_at) by \($0); scheduled cut-off \(summary.scheduled_cut_off_at ?? "")" }
            ?? "cut-off \(summary.cut_off_at)"
        return (["business date \(summary.business_date) (\(closing))", line(header)] + rows.map(line)).joined(separator: "\n")
    }
}

/// `ledgerd reconcile --report FILE [--format F] [--batch ID]`: reconciles a settlement report CSV
/// (the model's layout, an Adyen SDR or PAR, a Stripe itemized payout reconciliation) against the ledger through
/// a running daemon (`POST /reconciliation/reports`); the result and its breaks are recorded there.
/// Prints a summary; `--json-out` writes the reconciliation as JSON, `--csv-out` its breaks as CSV.
/// Exits 3 when open breaks remain.
struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Reconcile a settlement report CSV with the ledger through a running daemon.")

    @Option(help: "The settlement report CSV.") var report: String
    @Option(help: "The report's format: ledger, adyen_sdr, adyen_par, stripe_itemized (default: from its header).") var format: String?
    @Option(help: "The settlement batch the report is for (default: the one it names).") var batch: String?
    @Option(help: "Write the reconciliation as JSON to this file.") var jsonOut: String?
    @Option(help: "Write the breaks as CSV to this file.") var csvOut: String?
    @OptionGroup var connection: Order.Connection

    func run() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: report))
        var query: [URLQueryItem] = []
        if let format { query.append(URLQueryItem(name: "format", value: format)) }
        if let batch { query.append(URLQueryItem(name: "batch", value: batch)) }
        var components = URLComponents()
        components.path = "/reconciliation/reports"
        components.queryItems = query.isEmpty ? nil : query
        let path = components.string ?? "/reconciliation/reports"
        let (status, reply) = try await connection.post(path, data: data, contentType: "text/csv")
        guard (200..<300).contains(status), let result = try? WireJSON.decode(ReconciliationReply.self, from: reply) else {
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
        print(
            "batch \(result.batch_id): \(result.report_lines) report lines, \(result.ledger_items) ledger items, "
                + "\(result.matched) matched, \(result.breaks.count) breaks (\(result.open_breaks) open)"
                + (result.window_closed ? "" : "; the next batch is not settled yet, absent items count as timing")
        )
        for b in result.breaks {
            print("  \(b.class.padding(toLength: 20, withPad: " ", startingAt: 0)) \(b.reference)  \(b.detail)\(b.resolved ? " [resolved]" : "")")
        }
        if result.open_breaks > 0 { throw ExitCode(3) }
    }
}

/// Reads an HTTP reply line by line as it arrives (URLSession's data delegate), for replies that
/// report progress as newline-delimited JSON.
final class LineReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = Data()
    private var status = 0
    private var continuation: CheckedContinuation<Int, any Error>?
    private let onLine: @Sendable (Data) -> Void

    private init(onLine: @escaping @Sendable (Data) -> Void) { self.onLine = onLine }

    /// Sends `request`, calls `onLine` for each line of the reply (the last one may lack its newline),
    /// and returns the status.
    static func read(_ request: URLRequest, onLine: @escaping @Sendable (Data) -> Void) async throws -> Int {
        let reader = LineReader(onLine: onLine)
        let session = URLSession(configuration: .default, delegate: reader, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            reader.lock.withLock { reader.continuation = continuation }
            session.dataTask(with: request).resume()
        }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        lock.withLock { status = (response as? HTTPURLResponse)?.statusCode ?? 0 }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let lines: [Data] = lock.withLock {
            buffer.append(data)
            var complete: [Data] = []
            while let newline = buffer.firstIndex(of: 0x0A) {
                complete.append(Data(buffer[buffer.startIndex..<newline]))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
            return complete
        }
        lines.forEach(onLine)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (rest, continuation, status) = lock.withLock { () -> (Data, CheckedContinuation<Int, any Error>?, Int) in
            defer {
                buffer = Data()
                self.continuation = nil
            }
            return (buffer, self.continuation, self.status)
        }
        if !rest.isEmpty { onLine(rest) }
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume(returning: status) }
    }
}
