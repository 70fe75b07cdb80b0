import Foundation
import Metrics

/// The daemon's background jobs, as the `name` label of their metrics names them (not `job`: Prometheus sets `job` on
/// every scraped series itself and would rename ours `exported_job`).
public enum BackgroundJob: String, Sendable, CaseIterable {
    /// ``SettlementScheduler``: one run per business date it settles (or finds settled).
    case settlement
    /// ``ExpirySweeper``: one sweep of due holds.
    case expiry
    /// ``CheckpointScheduler``: the daily checkpoint.
    case checkpoint
    /// ``InventorySnapshotter``: one catch-up of the inventory snapshots.
    case inventorySnapshot = "inventory_snapshot"
    /// ``WebhookDispatcher``: one worker's pass over the due endpoints.
    case webhookDispatch = "webhook_dispatch"
    /// ``DisputePoller``: one read of the acquirer's dispute notifications.
    case disputePoll = "dispute_poll"
    /// ``MemoryTrimmer``: the allocator's free pages returned to the system.
    case memoryTrim = "memory_trim"
}

/// The metrics of the background jobs — the one place they are recorded (the loops only say what ran):
///
/// - `ledger_job_runs_total{name,outcome}`: runs by outcome (`success`, `failure`; a run cut short by shutdown is
///   not counted);
/// - `ledger_job_duration_seconds{name}`: how long each run took;
/// - `ledger_job_last_success_timestamp_seconds{name}`: when a run last succeeded (Unix seconds, wall clock), so an
///   alert can say "no expiry sweep succeeded for an hour";
/// - `ledger_holds_expired_total`: holds the expiry sweeper expired;
/// - `ledger_webhook_deliveries_total{outcome}`: webhook POSTs by outcome (`delivered`, `failed`).
///
/// Their `# HELP` texts are with the others' in LedgerApp's `MetricsHelp`. Without a factory (tests and
/// benchmarks that build a loop alone) nothing is recorded.
public struct JobMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.factory = factory
    }

    /// Runs one pass of `job` and records its outcome, duration and (on success) the time; rethrows its error.
    @discardableResult
    public func run<T>(_ job: BackgroundJob, _ body: () async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        do {
            let result = try await body()
            finished(job, outcome: "success", after: ContinuousClock.now - started)
            Gauge(label: "ledger_job_last_success_timestamp_seconds", dimensions: [("name", job.rawValue)], factory: factory)
                .record(Date().timeIntervalSince1970)
            return result
        } catch {
            if !Task.isCancelled { finished(job, outcome: "failure", after: ContinuousClock.now - started) }
            throw error
        }
    }

    /// Counts holds the expiry sweeper expired.
    public func holdsExpired(_ count: Int) {
        guard count > 0 else { return }
        Counter(label: "ledger_holds_expired_total", factory: factory).increment(by: count)
    }

    /// Counts one webhook POST.
    public func webhookDelivery(delivered: Bool) {
        Counter(label: "ledger_webhook_deliveries_total", dimensions: [("outcome", delivered ? "delivered" : "failed")], factory: factory)
            .increment()
    }

    private func finished(_ job: BackgroundJob, outcome: String, after elapsed: Duration) {
        Counter(label: "ledger_job_runs_total", dimensions: [("name", job.rawValue), ("outcome", outcome)], factory: factory).increment()
        let (seconds, attoseconds) = elapsed.components
        Metrics.Timer(label: "ledger_job_duration_seconds", dimensions: [("name", job.rawValue)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
