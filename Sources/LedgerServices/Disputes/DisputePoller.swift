import Foundation
import LedgerCore
import LedgerEngine
import Logging
import ServiceLifecycle

/// What one poll of the acquirer's dispute feed did.
public struct DisputePollSummary: Sendable, Hashable {
    /// Notifications read (each recorded, found already recorded, or refused).
    public var read: Int
    /// Notifications the ledger refused (an unknown order, an illegal stage): logged and passed, so that
    /// one bad notification does not stop the feed.
    public var refused: Int
    /// The feed position recorded after the poll.
    public var position: Int

    public init(read: Int, refused: Int, position: Int) {
        self.read = read
        self.refused = refused
        self.position = position
    }
}

/// `LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS`: reads the acquirer's dispute notifications after the
/// ledger's durable cursor (`ledger.acquirer_feed_cursors`, feed `disputes`) and records each with
/// ``DisputeService/receive(_:actor:)``, then moves the cursor past it.
///
/// Exactly-once effect with at-least-once reading: the cursor moves only after a notification is
/// recorded, so a crash reads it again; a notification carries its stage number within its dispute,
/// and one whose stage the dispute's stream already records appends nothing — also when two daemons
/// record it at once (the stream's expected version makes the second decide again, on the recorded stage).
public struct DisputePoller: Service {
    package init(
        disputes: DisputeService,
        acquirer: any Acquirer,
        cursors: any FeedCursors,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        interval: Duration,
        jobs: JobMetrics = JobMetrics()
    ) {
        self.jobs = jobs
        self.disputes = disputes
        self.acquirer = acquirer
        self.cursors = cursors
        self.clock = clock
        self.logger = logger
        self.interval = interval
    }

    let disputes: DisputeService
    let acquirer: any Acquirer
    /// The feed's durable cursor (on PostgreSQL, `AcquirerFeedCursorStore`).
    let cursors: any FeedCursors
    let clock: @Sendable () -> Date
    let logger: Logger
    let interval: Duration
    let jobs: JobMetrics

    static let feed = "disputes"
    static let pageSize = 100

    /// Reads and records every notification the acquirer has after the cursor.
    @discardableResult
    public func pollOnce() async throws -> DisputePollSummary {
        var position = try await cursors.position(of: Self.feed)
        var summary = DisputePollSummary(read: 0, refused: 0, position: position)
        while true {
            let page: [AcquirerDisputeNotification]
            do { page = try await acquirer.disputeNotifications(after: position, limit: Self.pageSize) } catch {
                throw ServiceError.dependencyFailed("acquirer_unavailable", "the acquirer's dispute feed could not be read: \(error.message)")
            }
            for notification in page {
                do {
                    try await disputes.receive(DisputeNotification(notification))
                } catch let error as ServiceError where Self.isRefusal(error) {
                    summary.refused += 1
                    logger.warning(
                        "dispute notification refused; passed",
                        metadata: [
                            "sequence": "\(notification.sequence)", "dispute": "\(notification.disputeID)",
                            "stage": "\(notification.stage.rawValue)", "error": "\(error)",
                        ]
                    )
                }
                position = notification.sequence
                try await cursors.advance(Self.feed, to: position, at: clock())
                summary.read += 1
            }
            summary.position = position
            if page.count < Self.pageSize { return summary }
        }
    }

    /// A notification the ledger will never record (retrying cannot help).
    static func isRefusal(_ error: ServiceError) -> Bool {
        [.malformedRequest, .invalidInput, .notFound, .conflict].contains(error.kind)
    }

    public func run() async throws {
        let logger = logger
        await PeriodicJob("dispute poll", metric: .disputePoll, wait: .afterEachPass(interval), backOff: true, jobs: jobs, logger: logger).run {
            let summary = try await self.pollOnce()
            if summary.read > 0 {
                logger.info("dispute notifications recorded", metadata: ["read": "\(summary.read)", "position": "\(summary.position)"])
            }
        }
    }
}
