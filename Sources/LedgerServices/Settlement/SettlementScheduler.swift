import Foundation
import LedgerCore
import Logging
import ServiceLifecycle

/// `LEDGERD_SETTLEMENT_AUTO`: settles each business day once its cut-off has passed, from `serve`.
/// Checks every minute; the last business day whose cut-off passed is settled (a finished batch
/// appends nothing, so checking again is harmless), and so is every business day of the past week
/// a stopped daemon missed. A run that fails (the database or the acquirer briefly away) is tried
/// again after 1 s, then 2 s, 4 s, … up to the interval, not only a whole interval later.
public struct SettlementScheduler: Service {
    package init(
        settlement: SettlementService,
        logger: Logger,
        interval: Duration = .seconds(60),
        jobs: JobMetrics = JobMetrics()
    ) {
        self.settlement = settlement
        self.logger = logger
        self.interval = interval
        self.jobs = jobs
    }

    let settlement: SettlementService
    let logger: Logger
    let jobs: JobMetrics
    var interval: Duration = .seconds(60)

    public func run() async throws {
        let (settlement, jobs, logger) = (settlement, jobs, logger)
        // One metric run per business date (not per pass): each date is its own settlement.
        await PeriodicJob("settlement", metric: nil, wait: .afterEachPass(interval), backOff: true, jobs: jobs, logger: logger).run {
            var failed = false
            for date in self.dueDates(now: settlement.clock()) {
                do {
                    let summary = try await jobs.run(.settlement) { try await settlement.run(businessDate: date) }
                    let appended = summary.batches.reduce(0) { $0 + $1.appendedEvents }
                    if appended > 0 { logger.info("settled", metadata: ["business_date": "\(date)", "events": "\(appended)"]) }
                } catch  where !Task.isCancelled {
                    failed = true
                    logger.warning(
                        "settlement run failed; retrying later",
                        metadata: ["business_date": "\(date)", "error": "\(String(reflecting: error))"]
                    )
                }
            }
            if failed { throw PeriodicJob.AlreadyLogged() }
        }
    }

    /// Business days of the last week whose cut-off has passed, oldest first.
    func dueDates(now: Date) -> [BusinessDate] {
        let last = settlement.settings.lastClosedBusinessDay(now: now)
        return (-7...0).map { last.adding(days: Int64($0)) }.filter {
            settlement.settings.calendar.isBusinessDay($0) && settlement.settings.cutOff.instant(closing: $0) <= now
        }
    }
}
