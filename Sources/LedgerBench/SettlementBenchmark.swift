import Crypto
import Foundation
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO
import Synchronization

/// `ledgerd bench settle`: settles and reconciles one business day of `captures` captures (and a
/// refund for every 100th), timing each phase and watching the process's memory.
///
/// Setup (not timed): each capture is authorized and captured at an in-process acquirer model, then
/// recorded as the hold lifecycle records it — a `HoldCaptured` (and `HoldRefunded`) event on the
/// order's hold stream, appended through the group-commit writer by concurrent producers. Only the
/// money events are written (settlement reads nothing else), not the orders before them.
///
/// Timed: ``SettlementService/run(businessDate:)`` for the day — select and close the batch, submit
/// it to the acquirer model and store its report, clear, schedule the payout, reconcile — with each
/// phase's end taken from the run's own progress reports. Memory: the resident set before the run
/// and its peak during it (`VmHWM`, reset first through `/proc/self/clear_refs`), so setup's memory
/// is not counted; the acquirer model lives in the same process and holds every capture before the
/// run starts (its memory is in "before").
@MemberwiseInit
public struct SettlementBenchmark: Sendable {
    public var captures: Int
    /// After the run: this many uploads of the day's report in the Adyen Settlement Details Report
    /// layout (`POST /reconciliation/reports`'s import + reconcile), each timed with its peak memory.
    public var sdrUploads: Int = 0
    public let dataDirectory: URL
    public let logger: Logger

    public func run(migrations: [Migration]) async throws -> String {
        let logger = self.logger
        let captures = self.captures
        return try await BenchLedger.withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer in
            let day = BusinessDate("2026-06-17")!  // a Wednesday
            let settings = SettlementSettings()
            let clock = SimulatedClock(settings.cutOff.instant(closing: day).addingTimeInterval(-6 * 3600))
            let acquirer = AcquirerModel(
                seed: 1,
                configuration: AcquirerModelConfiguration(defaultCreditLimit: Money(minorUnits: Int64.max / 4, currency: .usd)),
                clock: { clock.now }
            )
            let setupStarted = ContinuousClock.now
            let items = try await Self.setUp(captures: captures, acquirer: acquirer, writer: writer, at: clock.now)
            let setup = ContinuousClock.now - setupStarted
            print(String(format: "setup: %d captures and refunds recorded in %.1f s", items, Self.seconds(setup)))

            clock.set(settings.cutOff.instant(closing: day).addingTimeInterval(1))
            let marks = Marks()
            let started = ContinuousClock.now
            let service = SettlementService(
                writer: writer,
                store: EventStore(client: client, logger: logger),
                client: client,
                acquirer: acquirer,
                settings: settings,
                merchantAccount: AcquirerModelConfiguration().merchantAccount,
                pricing: AcquirerModelConfiguration().pricing,
                clock: { clock.now },
                logger: logger,
                progressSink: { step in
                    let memory = SettlementBenchmark.memory()
                    SettlementBenchmark.resetPeak()
                    marks.add(
                        step.step == "recorded" ? step.detail ?? step.step : step.step,
                        at: ContinuousClock.now - started,
                        resident: memory.resident,
                        peak: memory.peak
                    )
                }
            )
            let memoryBefore = Self.memory().resident
            Self.resetPeak()
            let summary = try await service.run(businessDate: day)
            let total = ContinuousClock.now - started
            let peak = Self.memory().peak
            guard let batch = summary.batches.first?.batch else { return "nothing settled" }
            let batchID = batch.opened.batchID
            var reconciled: ReconciliationRecorded?
            for event in try await EventStore(client: client, logger: logger).readStream(Reconciliation.streamID(batchID: batchID)) {
                if case .reconciled(let e) = try SettlementEvent.decode(event) { reconciled = e }
            }
            let phases: [(String, String)] = [
                ("select + close", SettlementBatchClosed.eventType), ("submit + store report", SettlementBatchSubmitted.eventType),
                ("clear", SettlementBatchCleared.eventType), ("schedule payout", SettlementPayoutScheduled.eventType),
                ("reconcile", "reconciled"),
            ]
            let (captures, refunds) = (batch.closed?.captureCount ?? 0, batch.closed?.refundCount ?? 0)
            let (gross, payout) = (batch.closed?.gross.decimalString ?? "0", batch.payout?.amount.decimalString ?? "-")
            var lines = ["settled \(captures) captures + \(refunds) refunds, gross \(gross), payout \(payout)"]
            var previous: Duration = .zero
            var phaseStartResident = memoryBefore
            for (name, mark) in phases {
                guard let at = marks.first(mark) else { continue }
                // The highest resident set between the phase's start and its end, over the resident set at its start.
                let peakInPhase = marks.peak(after: previous, through: at)
                lines.append(
                    "  " + name.padding(toLength: 22, withPad: " ", startingAt: 0)
                        + String(
                            format: " %7.2f s   peak +%4.0f MiB",
                            Self.seconds(at - previous),
                            Double(max(0, peakInPhase - phaseStartResident)) / 1_048_576
                        )
                )
                previous = at
                phaseStartResident = marks.resident(at: at)
            }
            lines.append("  " + "total".padding(toLength: 22, withPad: " ", startingAt: 0) + String(format: " %7.2f s", Self.seconds(total)))
            lines.append("steps:\n" + marks.timeline)
            // The stored report, read back as GET /settlements/{id}/report.csv serves it, hashes to the recorded digest.
            let hasher = Mutex(SHA256())
            let parts = Mutex(0)
            try await service.reportCSV(id: batchID)? { part in
                hasher.withLock { $0.update(data: Array(part.utf8)) }
                parts.withLock { $0 += 1 }
            }
            let digest = Hex.encode(hasher.withLock { $0.finalize() })
            let verdict = digest == batch.submitted?.reportSHA256 ? "matches" : "DIFFERS FROM"
            lines.append("report: \(parts.withLock { $0 }) parts read back, SHA-256 \(verdict) the submitted event's")
            lines.append("reconciliation: \(reconciled?.matched ?? 0) matched, \(reconciled?.breaks.count ?? -1) breaks")
            lines.append(
                String(
                    format: "memory: resident %.0f MiB before the run, peak %.0f MiB during it (+%.0f MiB)",
                    Double(memoryBefore) / 1_048_576,
                    Double(peak) / 1_048_576,
                    Double(peak - memoryBefore) / 1_048_576
                )
            )
            if sdrUploads > 0 {
                lines.append(try await Self.timeSDRUploads(sdrUploads, service: service, batchID: batchID))
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Uploads the batch's report rewritten in the Adyen SDR layout (its 23 columns, then Reserved4 …
    /// Reserved10, the last one differing per upload so that each is a new report) `count` times:
    /// format detection, the streaming import stored in parts, and the reconciliation, timed with the
    /// peak resident set over the one before the upload (the upload's text, as the HTTP route holds
    /// it, is built before and counted in "before"). Prints each upload and the median.
    static func timeSDRUploads(_ count: Int, service: SettlementService, batchID: String) async throws -> String {
        let reserved = ",Reserved4,Reserved5,Reserved6,Reserved7,Reserved8,Reserved9,Reserved10"
        var out = ["adyen sdr import + reconcile (\(count) uploads; load average \(loadAverage())):"]
        var times: [Double] = []
        var peaks: [Double] = []
        for upload in 1...count {
            let text = Mutex("")
            let first = Mutex(true)
            try await service.reportCSV(id: batchID)? { part in
                var rows = part.split(separator: "\r\n", omittingEmptySubsequences: true)
                var chunk = ""
                chunk.reserveCapacity(part.utf8.count + rows.count * 16)
                if first.withLock({
                    let was = $0
                    $0 = false
                    return was
                }) {
                    chunk += rows.removeFirst() + reserved + "\r\n"
                }
                for row in rows { chunk += row + ",,,,,,,u\(upload)\r\n" }
                let built = chunk
                text.withLock { $0 += built }
            }
            let csv = text.withLock { $0 }
            let lineCount = csv.utf8.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } - 1
            let before = memory().resident
            resetPeak()
            let started = ContinuousClock.now
            let view = try await service.reconcileReport(csv: csv)
            let elapsed = seconds(ContinuousClock.now - started)
            let peak = memory().peak
            let result: ReconciliationRecorded? = view.result
            times.append(elapsed)
            peaks.append(Double(max(0, peak - before)) / 1_048_576)
            out.append(
                String(
                    format: "  upload %d: %d lines, %.2f s, peak +%.0f MiB (resident before %.0f MiB); %d matched, %d breaks",
                    upload,
                    lineCount,
                    elapsed,
                    peaks.last!,
                    Double(before) / 1_048_576,
                    result?.matched ?? -1,
                    result?.breaks.count ?? -1
                )
            )
        }
        let median = { (values: [Double]) in values.sorted()[values.count / 2] }
        out.append(String(format: "  median: %.2f s, peak +%.0f MiB; load average after: %@", median(times), median(peaks), loadAverage()))
        return out.joined(separator: "\n")
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// Authorizes and captures every item at the acquirer, and appends the money events.
    static func setUp(captures: Int, acquirer: AcquirerModel, writer: LedgerWriter, at now: Date) async throws -> Int {
        let producers = 8
        let chunk = (captures + producers - 1) / producers
        return try await withThrowingTaskGroup(of: Int.self) { group in
            for producer in 0..<producers {
                let range = (producer * chunk)..<min(captures, (producer + 1) * chunk)
                group.addTask {
                    var written = 0
                    var pending: [AppendRequest] = []
                    for n in range {
                        let orderID = OrderID(String(format: "bench-%08d", n))!
                        let amount = Money(minorUnits: 1_000 + Int64(n % 9_000), currency: .usd)
                        _ = try await acquirer.authorize(
                            AuthorizationRequest(
                                merchantReference: orderID.rawValue,
                                amount: amount,
                                paymentMethod: .token(n % 3 == 0 ? "tok_mastercard" : "tok_visa")
                            )
                        )
                        let capture = try await acquirer.capture(
                            CaptureRequest(
                                authorizationReference: orderID.rawValue,
                                modificationReference: "cap-\(orderID.rawValue)",
                                amount: amount,
                                isFinal: true
                            )
                        )
                        var events: [HoldEvent] = [
                            .captured(
                                HoldCaptured(
                                    orderID: orderID,
                                    amount: amount,
                                    isFinal: true,
                                    released: .zero(.usd),
                                    modificationReference: capture.modificationReference,
                                    pspModificationReference: capture.modificationPSPReference,
                                    capturedAt: now
                                )
                            )
                        ]
                        if n % 100 == 0 {
                            let refund = try await acquirer.refund(
                                RefundRequest(
                                    authorizationReference: orderID.rawValue,
                                    modificationReference: "ref-\(orderID.rawValue)",
                                    amount: Money(minorUnits: 100, currency: .usd)
                                )
                            )
                            events.append(
                                .refunded(
                                    HoldRefunded(
                                        orderID: orderID,
                                        amount: refund.amount,
                                        reason: "bench",
                                        modificationReference: refund.modificationReference,
                                        pspModificationReference: refund.modificationPSPReference,
                                        refundedAt: now
                                    )
                                )
                            )
                        }
                        written += events.count
                        pending.append(
                            AppendRequest(
                                stream: StreamID(category: "hold", id: orderID.rawValue),
                                expectedVersion: .noStream,
                                events: try events.map { try DomainEvent.hold($0).newEvent(eventID: UUID(), effectiveAt: now) },
                                metadata: EventMetadata(actor: "bench")
                            )
                        )
                        if pending.count == 500 || n == range.upperBound - 1 {
                            try await withThrowingTaskGroup(of: Void.self) { appends in
                                for request in pending { appends.addTask { _ = try await writer.append(request) } }
                                try await appends.waitForAll()
                            }
                            pending = []
                        }
                    }
                    return written
                }
            }
            return try await group.reduce(0, +)
        }
    }

    /// When each progress step was first reported.
    /// When each progress step was reported, with the resident set then and its peak since the step before.
    final class Marks: @unchecked Sendable {
        private let lock = NSLock()
        private var marks: [(name: String, at: Duration, resident: Int, peak: Int)] = []
        func add(_ name: String, at: Duration, resident: Int, peak: Int) {
            lock.withLock { marks.append((name, at, resident, peak)) }
        }
        func first(_ name: String) -> Duration? { lock.withLock { marks.first { $0.name == name }?.at } }
        /// Every step, in order, with its time since the run started.
        var timeline: String {
            lock.withLock {
                marks.map { String(format: "    %7.2f s  ", SettlementBenchmark.seconds($0.at)) + $0.name }.joined(separator: "\n")
            }
        }
        func resident(at: Duration) -> Int { lock.withLock { marks.first { $0.at == at }?.resident ?? 0 } }
        /// The highest peak reported by the marks after `start` up to `end`.
        func peak(after start: Duration, through end: Duration) -> Int {
            lock.withLock { marks.filter { $0.at > start && $0.at <= end }.map(\.peak).max() ?? 0 }
        }
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// The process's resident set and its peak since the last reset, in bytes (Linux `/proc/self/status`).
    static func memory() -> (resident: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func kib(_ key: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
        }
        return (kib("VmRSS"), kib("VmHWM"))
    }

    /// Resets the peak resident set (`VmHWM`) to the current one.
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }
}
