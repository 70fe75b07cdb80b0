import Crypto
import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerClient
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging
import Metrics
import PostgresNIO
import Synchronization

/// `ledgerd bench settle`: settles and reconciles one business day of `captures` captures (and a
/// refund for every 100th) against the acquirer **service** over HTTP, timing each phase and watching
/// both processes' memory.
///
/// The acquirer runs as `ledgerd serve` runs it without `LEDGERD_ACQUIRER_URL`: a supervised child
/// (`ledgerd acquirer serve`) on the bench's embedded cluster (database `acquirer`, dropped first),
/// reached through ``HTTPAcquirer``. Its clock is offset so that it reads the bench's simulated
/// set-up time when it starts.
///
/// Setup (not timed): each capture is authorized and captured at the service over HTTP, then
/// recorded as the hold lifecycle records it — a `HoldCaptured` (and `HoldRefunded`) event on the
/// order's hold stream, appended through the group-commit writer by concurrent producers. Only the
/// money events are written (settlement reads nothing else), not the orders before them.
///
/// Timed: ``SettlementService/run(businessDate:)`` for the day — select and close the batch, submit
/// it to the acquirer in pages and store its report read back in pages, clear, schedule the payout,
/// reconcile — with each phase's end taken from the run's own progress reports. Memory: the ledger
/// process's resident set at start, before the run and its peak during it (`VmHWM`, reset first
/// through `/proc/self/clear_refs`, so setup's memory is not counted); the acquirer process's
/// resident set before the run and its peak (its `VmHWM`, reset the same way when the kernel lets us).
@MemberwiseInit
public struct SettlementBenchmark: Sendable {
    public var captures: Int
    public let dataDirectory: URL
    /// sql/acquirer: the acquirer service's migrations.
    public let acquirerMigrations: URL
    public let logLevel: String
    public let logger: Logger

    public func run(migrations: [Migration]) async throws -> String {
        let logger = self.logger
        let captures = self.captures
        let atStart = Self.memory(of: "self").resident
        let (acquirerMigrations, logLevel, directory) = (self.acquirerMigrations, self.logLevel, dataDirectory)
        return try await BenchLedger.withWriter(dataDirectory: dataDirectory, migrations: migrations, logger: logger) { client, writer, endpoint in
            let day = BusinessDate("2026-06-17")!  // a Wednesday
            let settings = SettlementSettings()
            let setupInstant = settings.cutOff.instant(closing: day).addingTimeInterval(-6 * 3600)
            let clock = SimulatedClock(setupInstant)
            let acquirerSettings = SupervisedAcquirerSettings(
                merchantAccount: settings.merchantAccount,
                pricing: settings.pricing,
                calendar: settings.calendar,
                fundingLagBusinessDays: settings.fundingLagBusinessDays,
                defaultCreditLimit: Money(minorUnits: Int64.max / 4, currency: .usd),
                holdLifetimes: [],
                disputeRatePerMille: 0
            )
            let apiKey = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let (supervisor, acquirer) = try await AcquirerSupervisor.start(
                embedded: endpoint,
                directory: directory.appendingPathComponent("acquirer"),
                migrations: acquirerMigrations,
                settings: acquirerSettings,
                seed: 1,
                logLevel: logLevel,
                apiKey: apiKey,
                clockOffsetMicroseconds: setupInstant.epochMicroseconds - Date().epochMicroseconds,
                fresh: true,
                acquirer: { url in
                    HTTPAcquirer(
                        configuration: HTTPAcquirerConfiguration(
                            baseURL: url,
                            apiKey: apiKey,
                            // Generous: the set-up's hundreds of calls in flight on two shared cores wait
                            // behind the acquirer's snapshots (a pause while it copies its state).
                            connectTimeout: .seconds(60),
                            readTimeout: .seconds(900),
                            attempts: 5,
                            maximumConnections: 32
                        ),
                        logger: logger,
                        metricsFactory: NOOPMetricsHandler.instance
                    )
                },
                logger: logger
            )
            defer { supervisor.stop() }
            guard let acquirerPID = supervisor.childProcessIdentifier else { return "the acquirer service did not start" }
            let child = String(acquirerPID)
            do {
                let report = try await Self.measure(
                    captures: captures,
                    day: day,
                    settings: settings,
                    clock: clock,
                    acquirer: acquirer,
                    acquirerPID: child,
                    atStart: atStart,
                    client: client,
                    writer: writer,
                    logger: logger
                )
                try await acquirer.shutdown()
                return report
            } catch {
                try? await acquirer.shutdown()
                throw error
            }
        }
    }

    static func measure(
        captures: Int,
        day: BusinessDate,
        settings: SettlementSettings,
        clock: SimulatedClock,
        acquirer: HTTPAcquirer,
        acquirerPID child: String,
        atStart: Int,
        client: DatabaseClient,
        writer: LedgerWriter,
        logger: Logger
    ) async throws -> String {
        let setupStarted = ContinuousClock.now
        let items = try await Self.setUp(captures: captures, acquirer: acquirer, writer: writer, at: clock.now)
        let setup = ContinuousClock.now - setupStarted
        let setupPeak = Self.memory(of: "self").peak
        print(
            String(
                format: "setup: %d captures and refunds at the acquirer service over HTTP and in the ledger in %.1f s",
                items,
                Self.seconds(setup)
            )
        )

        clock.set(settings.cutOff.instant(closing: day).addingTimeInterval(1))
        let marks = Marks()
        let started = ContinuousClock.now
        let service = SettlementService(
            writer: writer,
            store: EventStore(client: client, logger: logger),
            client: client,
            acquirer: acquirer,
            settings: settings,
            clock: { clock.now },
            logger: logger,
            progressSink: { step in
                let memory = SettlementBenchmark.memory(of: "self")
                SettlementBenchmark.resetPeak(of: "self")
                marks.add(
                    step.step == "recorded" ? step.detail ?? step.step : step.step,
                    at: ContinuousClock.now - started,
                    resident: memory.resident,
                    peak: memory.peak
                )
            }
        )
        let memoryBefore = Self.memory(of: "self").resident
        // Its peak over the day (setup) before it is reset: the issue bounds the acquirer at any point of the day.
        let acquirerBefore = Self.memory(of: child)
        let acquirerReset = Self.resetPeak(of: child)
        Self.resetPeak(of: "self")
        let summary = try await service.run(businessDate: day)
        let total = ContinuousClock.now - started
        let peak = max(Self.memory(of: "self").peak, marks.peak(after: .zero, through: total))
        let acquirerAfter = Self.memory(of: child)
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
        var lines = ["settled \(captures) captures + \(refunds) refunds with the acquirer service, gross \(gross), payout \(payout)"]
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
        func mib(_ bytes: Int) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }
        lines.append(
            "memory, ledger process: resident \(mib(atStart)) at start, peak \(mib(setupPeak)) during setup; "
                + "\(mib(memoryBefore)) before the run, peak \(mib(peak)) during it: delta +\(mib(peak - memoryBefore))"
                + (peak - memoryBefore <= 200 << 20 ? " (within +200 MiB)" : " (OVER +200 MiB)")
        )
        lines.append(
            "memory, acquirer process (pid \(child)): peak \(mib(acquirerBefore.peak)) during setup, resident \(mib(acquirerBefore.resident)) before the run, "
                + "peak \(mib(acquirerAfter.peak)) \(acquirerReset ? "during it" : "over its life (its peak could not be reset)"), "
                + "\(mib(acquirerAfter.resident)) after"
        )
        return lines.joined(separator: "\n")
    }

    /// Authorizes and captures every item at the acquirer, and appends the money events.
    static func setUp(captures: Int, acquirer: any Acquirer, writer: LedgerWriter, at now: Date) async throws -> Int {
        let producers = 48
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
                                events: try events.map { try DomainEvent.hold($0).newEvent(eventID: UUID.newTimeOrdered(), effectiveAt: now) },
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

    /// A process's resident set and its peak since the last reset, in bytes (Linux `/proc/<pid>/status`;
    /// `process` is a pid or `self`).
    static func memory(of process: String) -> (resident: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else { return (0, 0) }
        func kib(_ key: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
            // "VmRSS:\t  123456 kB": a tab, then the number right-aligned in 8 columns (no space once it has 8 digits).
            return (Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "0") ?? 0) * 1024
        }
        return (kib("VmRSS"), kib("VmHWM"))
    }

    /// Resets a process's peak resident set (`VmHWM`) to its current one; false when the kernel refused.
    @discardableResult
    static func resetPeak(of process: String) -> Bool {
        (try? "5".write(toFile: "/proc/\(process)/clear_refs", atomically: false, encoding: .utf8)) != nil
    }
}
