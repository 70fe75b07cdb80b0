import Foundation
import Logging
import ServiceLifecycle

/// Runs the payout matching without an import, at start and then every `interval`: a payout whose funding window has
/// run out with nothing received becomes `payout_not_received` even when no statement arrives (an import runs the same
/// pass, ``BankStatementService/matchPayouts(file:)``; each pass appends after the stream's version, so two at once
/// record each break once).
public struct BankMatchingSweeper: Service {
    package init(bank: BankStatementService, interval: Duration, logger: Logger, jobs: JobMetrics = JobMetrics()) {
        self.bank = bank
        self.interval = interval
        self.logger = logger
        self.jobs = jobs
    }

    let bank: BankStatementService
    let interval: Duration
    let logger: Logger
    let jobs: JobMetrics

    public func run() async throws {
        let bank = bank
        await PeriodicJob("bank matching", metric: nil, wait: .afterEachPass(interval), jobs: jobs, logger: logger).run {
            _ = try await bank.matchPayouts()
        }
    }
}
