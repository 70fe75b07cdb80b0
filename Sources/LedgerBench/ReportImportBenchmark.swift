import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging

/// `ledgerd bench sdr`: import + reconcile of an Adyen Settlement Details Report of one batch of
/// `captures` captures (and a refund for every 100th), the line count the report then has.
///
/// Setup (not timed): the captures at the in-process acquirer model and as `HoldCaptured` events in
/// the ledger (``SettlementBenchmark/setUp(captures:acquirer:writer:at:)``), the day settled with the
/// model (its own report stored and reconciled), and that report rendered as an SDR: the model's 23
/// columns followed by the SDR's Reserved4 … Reserved10, so the header is detected as `adyen_sdr` and
/// every line goes through the importer.
///
/// Timed: hashing the report file as an upload's spool is (``ReportUpload/existing(_:)``), then
/// ``SettlementService/reconcileReport(_:format:batchID:)`` — detect, read the file in chunks,
/// normalize and store in parts, reconcile against the batch, record. Memory: the process's resident
/// set before it and its peak during it (`VmHWM`, reset first); the report is on disk, not in memory.
@MemberwiseInit
public struct ReportImportBenchmark: Sendable {
    public var captures: Int
    public let dataDirectory: URL
    public let logger: Logger

    static let reserved = (4...10).map { "Reserved\($0)" }

    public func run(migrations: [Migration]) async throws -> String {
        let (captures, logger) = (self.captures, self.logger)
        return try await BenchLedger.withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer in
            let day = BusinessDate("2026-06-17")!  // a Wednesday
            let settings = SettlementSettings()
            let clock = SimulatedClock(settings.cutOff.instant(closing: day).addingTimeInterval(-6 * 3600))
            let model = AcquirerModelConfiguration(defaultCreditLimit: Money(minorUnits: Int64.max / 4, currency: .usd))
            let acquirer = AcquirerModel(seed: 1, configuration: model, clock: { clock.now })
            let setupStarted = ContinuousClock.now
            _ = try await SettlementBenchmark.setUp(captures: captures, acquirer: acquirer, writer: writer, at: clock.now)
            clock.set(settings.cutOff.instant(closing: day).addingTimeInterval(1))
            let service = SettlementService(
                writer: writer,
                store: EventStore(client: client, logger: logger),
                client: client,
                acquirer: acquirer,
                settings: settings,
                clock: { clock.now },
                logger: logger
            )
            let summary = try await service.run(businessDate: day)
            guard let batch = summary.batches.first?.batch, let number = batch.submitted?.batchNumber else { return "nothing settled" }
            var csv = (SettlementReportCSV.columns + Self.reserved).joined(separator: ",") + "\r\n"
            let padding = String(repeating: ",", count: Self.reserved.count) + "\r\n"
            var reportLines = 0
            while true {
                let page = try await acquirer.reportLines(batchNumber: number, from: reportLines, count: 10_000)
                guard !page.isEmpty else { break }
                for row in try SettlementReportCSV().rows(page, firstRow: reportLines + 2).split(separator: "\r\n") {
                    csv += row
                    csv += padding
                }
                reportLines += page.count
            }
            let setup = ContinuousClock.now - setupStarted
            print(
                String(
                    format: "setup: %d report lines (%.0f MiB of SDR) in %.1f s",
                    reportLines,
                    Double(csv.utf8.count) / 1_048_576,
                    SettlementBenchmark.seconds(setup)
                )
            )

            let file = dataDirectory.appendingPathComponent("report-sdr.csv")
            try Data(csv.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            csv = ""
            _ = SettlementBenchmark.resetPeak(of: "self")
            let before = SettlementBenchmark.memory(of: "self").resident
            let started = ContinuousClock.now
            let view = try await service.reconcileReport(try ReportUpload.existing(file), format: nil, batchID: nil)
            let elapsed = ContinuousClock.now - started
            let peak = SettlementBenchmark.memory(of: "self").peak
            func mib(_ bytes: Int) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }
            return [
                String(format: "import + reconcile of a %d-line Adyen SDR: %.2f s", reportLines, SettlementBenchmark.seconds(elapsed)),
                "reconciliation: \(view.result.reportLines) lines, \(view.result.matched) matched, \(view.breaks.count) breaks",
                "memory: resident \(mib(before)) before, peak \(mib(peak)) during it: delta +\(mib(max(0, peak - before)))",
            ].joined(separator: "\n")
        }
    }
}
