import Logging
import ServiceLifecycle

/// Returns the allocator's free pages to the system every `interval` (``MemoryReturn/trimNow()``), so that a daemon
/// under a steady load keeps the resident set of what it uses, not of what its arenas once held (issue 57: without
/// it, 204 → 555 MiB over 20 minutes of a day at the machine's maximum, the memory in use growing 254 → 285 MB).
/// Each pass is the `memory_trim` background job (its duration in `ledger_job_duration_seconds`).
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
