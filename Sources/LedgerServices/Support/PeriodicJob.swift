import Logging
import ServiceLifecycle

/// The one loop of the daemon's periodic background jobs — the expiry sweep, recovery, the dispute poll, inventory
/// snapshots, the daily checkpoint, nightly settlement and the transparency log's builder. Each of them says what one
/// pass does; this loop runs the passes:
///
/// - a pass, then a wait (``Wait/afterEachPass(_:)``), or a wait until the next due time, then a pass
///   (``Wait/beforeEachPass(_:)``, the daily checkpoint);
/// - a pass's outcome and duration are recorded under its ``BackgroundJob`` name (``JobMetrics``), when it has one;
/// - a failed pass is logged (at `failureLevel`) and never ends the loop; with `backOff`, the next pass comes after
///   1 s, 2 s, 4 s … up to the interval instead of a whole interval later (the database or the acquirer briefly away).
///   A pass that logged its own failures throws ``AlreadyLogged`` to back off without a second log line;
/// - graceful shutdown or cancellation ends a wait at once; a pass cut short by it is neither logged nor counted.
public struct PeriodicJob: Sendable {
    public enum Wait: Sendable {
        case afterEachPass(Duration)
        /// How long until the next pass is due, asked before each pass.
        case beforeEachPass(@Sendable () -> Duration)
    }

    /// Thrown by a pass that logged its own failures: back off, log nothing more.
    public struct AlreadyLogged: Error {
        public init() {}
    }

    /// What the log calls a pass ("expiry sweep").
    let description: String
    let metric: BackgroundJob?
    let wait: Wait
    let backOff: Bool
    let failureLevel: Logger.Level
    /// The first wait after a failed pass when backing off (doubled after each failure, up to the interval).
    let firstRetry: Duration
    let jobs: JobMetrics
    let logger: Logger

    package init(
        _ description: String,
        metric: BackgroundJob?,
        wait: Wait,
        backOff: Bool = false,
        failureLevel: Logger.Level = .warning,
        firstRetry: Duration = .seconds(1),
        jobs: JobMetrics,
        logger: Logger
    ) {
        self.description = description
        self.metric = metric
        self.wait = wait
        self.backOff = backOff
        self.failureLevel = failureLevel
        self.firstRetry = firstRetry
        self.jobs = jobs
        self.logger = logger
    }

    /// Runs passes until graceful shutdown or cancellation.
    package func run(_ pass: @escaping @Sendable () async throws -> Void) async {
        try? await cancelWhenGracefulShutdown {
            var retry = firstRetry
            while !Task.isCancelled {
                if case .beforeEachPass(let due) = wait { try await Task.sleep(for: due()) }
                var failed = false
                do {
                    if let metric { try await jobs.run(metric, pass) } else { try await pass() }
                } catch is AlreadyLogged {
                    failed = true
                } catch  where !Task.isCancelled {
                    failed = true
                    logger.log(level: failureLevel, "\(description) failed", metadata: ["error": "\(String(reflecting: error))"])
                }
                guard case .afterEachPass(let interval) = wait else { continue }
                if failed && backOff {
                    try await Task.sleep(for: min(retry, interval))
                    retry = min(retry * 2, interval)
                } else {
                    retry = firstRetry
                    try await Task.sleep(for: interval)
                }
            }
        }
    }
}
