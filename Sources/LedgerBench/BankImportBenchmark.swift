import Foundation
import LedgerCore
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `ledgerd bench bank --entries N`: the bank matching's figure (issue 53). Setup, not timed: the payouts of
/// ``BankMatchingScenario`` announced as the settlement writes them, and its MT940 statement of N credits written to a
/// file. Timed: one import of that file through ``BankStatementService/importStatements(_:format:actor:)`` — the
/// service of `POST /bank/statements`, the console's upload and the inbox —, which reads it, stores its events and runs
/// the matching pass that matches the credits to the payouts and appends the outcomes, on the benchmark's own cluster.
///
/// Reported: the wall time of each part (read pass, store, the matching's reads, the matcher, its append), the wall
/// time and this process's CPU (getrusage: user + system) of the whole import, PostgreSQL's CPU over it (the cluster's
/// processes in /proc: the postmaster with its reaped children, and its live children), CPU per entry, the load
/// average before, and the outcome counts (matched by rule, breaks by class). Checked: the outcome is the one the
/// scenario planted; otherwise the bench fails (a figure of a wrong answer is worth nothing).
@MemberwiseInit
public struct BankImportBenchmark: Sendable {
    public var entries: Int
    public let dataDirectory: URL
    public let logger: Logger

    public func run(migrations: [Migration]) async throws -> String {
        let (entries, logger, directory) = (self.entries, self.logger, self.dataDirectory)
        return try await BenchLedger.withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer in
            let scenario = BankMatchingScenario(count: entries, tag: String(UUID.newRandomString().prefix(8)))
            // The service's clock: the statement's day, 18:00 UTC (inside every payout's funding window).
            let now = Date(timeIntervalSince1970: Double(BankMatchingScenario.day.daysSinceEpoch) * 86_400 + 18 * 3_600)
            let setupStarted = ContinuousClock.now
            try await scenario.announce(on: writer, at: now)
            let file = directory.appendingPathComponent("bank-bench-\(scenario.tag).sta")
            let text = scenario.statement()
            try Data(text.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let setup = SettlementBenchmark.seconds(ContinuousClock.now - setupStarted)
            // A running daemon's matching has read the payouts as they were announced (its periodic pass,
            // BankMatchingSweeper): one pass before the import, with no credit, does that here (after a restart the first
            // pass does it; its time is printed).
            let service = BankStatementService(client: client, writer: writer, clock: { now }, logger: logger)
            let warmStarted = ContinuousClock.now
            let warm = try await service.matchPayouts()
            let warmWall = SettlementBenchmark.seconds(ContinuousClock.now - warmStarted)
            // Printed now: bench/bank-import.sh starts perf at this line.
            print(
                String(
                    format: "setup: %d payouts announced, the statement written (%.1f MiB of MT940) in %.1f s; "
                        + "a first matching pass read %d events in %.2f s",
                    scenario.payouts,
                    Double(text.utf8.count) / 1_048_576,
                    setup,
                    warm.eventsRead,
                    warmWall
                )
            )
            fflush(nil)
            let upload = try ReportUpload.existing(file)

            let load = ProcessFigures.loadAverage()
            let postgres = Self.postgresPID(directory)
            let postgresBefore = postgres.map(ProcessFigures.treeCPUSeconds) ?? 0
            let cpuBefore = ProcessFigures.cpuSeconds()
            let started = ContinuousClock.now
            let summary = try await service.importStatements(upload, format: "mt940", actor: "bench")
            let wall = SettlementBenchmark.seconds(ContinuousClock.now - started)
            let cpu = ProcessFigures.cpuSeconds() - cpuBefore
            let postgresCPU = postgres.map { ProcessFigures.treeCPUSeconds($0) - postgresBefore }
            let appended = summary.statements.map(\.appended).reduce(0, +)
            let outcome = BankMatchingScenario.Outcome(matchedByRule: summary.matching.matchedByRule, breaks: summary.matching.breaks)
            let expected = scenario.expected
            func s(_ duration: Duration) -> String { String(format: "%.2f s", SettlementBenchmark.seconds(duration)) }
            let report = [
                String(format: "bank import and matching: %d entries in %.2f s wall, %.2f s CPU of ledgerd", entries, wall, cpu)
                    + (postgresCPU.map { String(format: ", %.2f s CPU of PostgreSQL", $0) } ?? " (PostgreSQL's CPU not readable)"),
                String(format: "  CPU per entry: %.0f µs of ledgerd", cpu / Double(entries) * 1e6)
                    + (postgresCPU.map { String(format: ", %.0f µs of PostgreSQL", $0 / Double(entries) * 1e6) } ?? ""),
                "  read pass (reader, balance rule, spool) \(s(summary.timings.read)); store (\(appended) events) \(s(summary.timings.store)); "
                    + "matching: reads \(s(summary.matching.timings.read)) (\(summary.matching.eventsRead) events), "
                    + "matcher \(s(summary.matching.timings.match)), append \(s(summary.matching.timings.append)) (\(summary.matching.appended) events)",
                "  outcome: \(outcome)",
                "  planted: \(expected)",
                "  load average before: \(load) (\(ProcessInfo.processInfo.activeProcessorCount) cores)",
            ].joined(separator: "\n")
            guard outcome == expected else {
                throw BankBenchMismatch(report: report)
            }
            return report
        }
    }

    /// The matching recorded another outcome than the scenario planted: the figure measured a wrong answer.
    struct BankBenchMismatch: Error, CustomStringConvertible {
        let report: String
        var description: String { "bench bank: the outcome differs from what was planted\n\(report)" }
    }

    /// The cluster's postmaster (the first line of `<data>/pg/postmaster.pid`), or nil.
    static func postgresPID(_ dataDirectory: URL) -> Int? {
        let file = dataDirectory.appendingPathComponent("pg/postmaster.pid").path
        return (try? String(contentsOfFile: file, encoding: .utf8))?.split(separator: "\n").first.flatMap { Int($0) }
    }
}
