import Foundation

/// How far the ledger recorded an acquirer feed (issue 56, a read port): the dispute poller's cursor. On PostgreSQL,
/// LedgerPostgres' `AcquirerFeedCursorStore` (`ledger.acquirer_feed_cursors`, sql/0016).
package protocol FeedCursors: Sendable {
    /// The recorded position of `feed` (0: nothing read yet).
    func position(of feed: String) async throws -> Int
    /// Moves `feed` to `position` (never back, whichever daemon writes last).
    func advance(_ feed: String, to position: Int, at now: Date) async throws
}
