import Foundation
import Logging
import ServiceLifecycle

/// Expires holds that passed their expiry uncaptured: at start and then every `interval`
/// (``HoldService/expireDue(now:batchSize:)``). Several daemons may run it at once; every expiry is
/// a version-checked append, so each hold expires exactly once. Until a sweep records it, reads
/// already treat a lapsed hold as not reserving (see the storefront and order readers).
public struct ExpirySweeper: Service {
    package init(
        holds: HoldService,
        interval: Duration,
        pageHolds: Int,
        logger: Logger,
        jobs: JobMetrics = JobMetrics()
    ) {
        self.holds = holds
        self.interval = interval
        self.pageHolds = pageHolds
        self.logger = logger
        self.jobs = jobs
    }

    let holds: HoldService
    let interval: Duration
    /// Holds per append (`LEDGERD_EXPIRY_PAGE_HOLDS`): a page's commit holds the writer, so every request waiting to
    /// append waits for it (issue 57: at 120 requests a second with holds expiring, pages of 500 put 150–260 ms into the
    /// p99 of 30-s windows, pages of 100 up to 240 ms into a minute's, pages of 25 at most 65 ms).
    let pageHolds: Int
    let logger: Logger
    let jobs: JobMetrics

    public func run() async throws {
        let (holds, jobs, logger, pageHolds) = (holds, jobs, logger, pageHolds)
        await PeriodicJob("expiry sweep", metric: .expiry, wait: .afterEachPass(interval), jobs: jobs, logger: logger).run {
            let expired = try await holds.expireDue(batchSize: pageHolds)
            jobs.holdsExpired(expired)
            if expired > 0 { logger.info("holds expired", metadata: ["count": "\(expired)"]) }
        }
    }
}
