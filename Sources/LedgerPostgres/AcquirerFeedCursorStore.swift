import Foundation
import LedgerEngine
import Logging
import PostgresNIO

/// `ledger.acquirer_feed_cursors` (sql/0016): the position up to which the ledger recorded an acquirer
/// feed (the dispute notifications). The position only grows, whichever daemon writes last.
package struct AcquirerFeedCursorStore: PostgresStore, FeedCursors {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// The recorded position of `feed` (0: nothing read yet).
    package func position(of feed: String) async throws -> Int {
        let rows = try await client.query("SELECT position FROM ledger.acquirer_feed_cursors WHERE feed = \(feed)", logger: logger)
        for try await position in rows.decode(Int64.self) { return Int(position) }
        return 0
    }

    /// Moves `feed`'s position to `position` unless it is already further (committed before this returns).
    package func advance(_ feed: String, to position: Int, at now: Date) async throws {
        try await client.query(
            """
            INSERT INTO ledger.acquirer_feed_cursors (feed, position, updated_at) VALUES (\(feed), \(Int64(position)), \(now))
            ON CONFLICT (feed) DO UPDATE SET position = GREATEST(ledger.acquirer_feed_cursors.position, EXCLUDED.position),
                updated_at = EXCLUDED.updated_at
            """,
            logger: logger
        )
    }
}
