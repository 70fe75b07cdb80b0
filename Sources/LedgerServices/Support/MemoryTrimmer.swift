import Logging
import ServiceLifecycle

/// Returns the allocator's free pages to the system every `interval` (``MemoryReturn/trimNow()``). Issue 57: over 20
/// minutes of a day at the machine's maximum the daemon's RSS went 204 → 555 MiB while the memory in use went only
/// 254 → 285 MB. With the trims a pass returns about 100 MB, but the peaks stay: most of the free memory sits in
/// partly used pages, which no trim returns (docs/performance.md, session 7). Each pass is the `memory_trim`
/// background job (its duration in `ledger_job_duration_seconds`: 5–25 ms there).
public struct MemoryTrimmer: Service {
    let interval: Duration
    let logger: Logger
    let jobs: JobMetrics

    public init(interval: Duration, logger: Logger, jobs: JobMetrics = JobMetrics()) {
        self.interval = interval
        self.logger = logger
        self.jobs = jobs
    }

    public func run() async throws {
        await PeriodicJob("memory trim", metric: .memoryTrim, wait: .afterEachPass(interval), jobs: jobs, logger: logger).run {
            MemoryReturn.trimNow()
        }
    }
}
