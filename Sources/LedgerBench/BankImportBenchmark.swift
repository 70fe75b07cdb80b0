import Foundation
import LedgerCore
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `ledgerd bench bank --entries N`: one MT940 statement of N credit entries (each with its bank and owner references,
/// an end-to-end id and remittance information, as a payout's deposit carries) imported through
/// ``BankStatementService/importStatements(_:format:actor:)`` — the service of `POST /bank/statements`, the console's
/// upload and the inbox — on the benchmark's own cluster. Each run imports a statement of its own (its id names the run).
///
/// Timed: the import, and within it the read pass (the reader, the balance rule, the normalized spool) alone. Reported:
/// wall time, this process's CPU time (user + system: the reading, encoding and hashing; PostgreSQL's is its own) and
/// the load average, since the machine is shared.
@MemberwiseInit
public struct BankImportBenchmark: Sendable {
    public var entries: Int
    public let dataDirectory: URL
    public let logger: Logger

    public func run(migrations: [Migration]) async throws -> String {
        let (entries, logger, directory) = (self.entries, self.logger, self.dataDirectory)
        return try await BenchLedger.withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer in
            let run = UUID.newRandomString().prefix(8)
            var text = ":20:BENCH-\(run)\n:25:NL91ABNA0417164300\n:28C:1/1\n:60F:C261204EUR0,\n"
            text.reserveCapacity(entries * 90)
            for i in 1...entries {
                text += ":61:2612041204C1,00NTRFREF-\(i)//B-\(i)\n:86:/EREF/ACQ-PAYOUT-\(i)/REMI/payout \(i) batch \(run)\n"
            }
            text += ":62F:C261204EUR\(entries),00\n"
            let file = directory.appendingPathComponent("bank-bench-\(run).sta")
            try Data(text.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let bytes = text.utf8.count
            text = ""
            let service = BankStatementService(client: client, writer: writer, clock: { Date() }, logger: logger)
            let upload = try ReportUpload.existing(file)

            let spool = directory.appendingPathComponent("bank-bench-\(run).ndjson")
            defer { try? FileManager.default.removeItem(at: spool) }
            let mt940 = try BankStatementService.format(named: "mt940")!
            let (readCPU, readWall) = try Self.measure { _ = try BankStatementService.normalize(file, format: mt940, into: spool) }

            let load = Self.loadAverage()
            let cpuBefore = Self.cpuSeconds()
            let started = ContinuousClock.now
            let summary = try await service.importStatements(upload, format: "mt940", actor: "bench")
            let wall = SettlementBenchmark.seconds(ContinuousClock.now - started)
            let cpu = Self.cpuSeconds() - cpuBefore
            let appended = summary.statements.map(\.appended).reduce(0, +)
            return [
                String(
                    format: "bank import: %d entries (%.1f MiB of MT940) in %.2f s wall, %.2f s CPU of ledgerd",
                    entries,
                    Double(bytes) / 1_048_576,
                    wall,
                    cpu
                ),
                String(format: "  of which the read pass (reader, balance rule, spool): %.2f s wall, %.2f s CPU", readWall, readCPU),
                "  \(appended) events appended; status \(summary.statements.map(\.status.rawValue).joined(separator: ","))",
                "  load average before: \(load) (\(ProcessInfo.processInfo.activeProcessorCount) cores)",
            ].joined(separator: "\n")
        }
    }

    /// `body`'s CPU and wall seconds.
    static func measure(_ body: () throws -> Void) throws -> (Double, Double) {
        let cpu = cpuSeconds()
        let started = ContinuousClock.now
        try body()
        return (cpuSeconds() - cpu, SettlementBenchmark.seconds(ContinuousClock.now - started))
    }

    /// This process's user + system CPU seconds so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec)
            / 1e6
    }

    /// `/proc/loadavg`'s three figures.
    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }
}
