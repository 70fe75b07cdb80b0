import LedgerCore

/// The log's durable head, as the writer needs it: nothing is answered before it is durable (issue 30, item 4). The
/// daemon's is LedgerPostgres' `HeadWatcher` (the synchronous standby's confirmation); a tool, a benchmark or a
/// simulation keeps none.
package protocol DurableHead: Sendable {
    /// A batch committed through `position`, its commit having waited for the durability the log promises.
    func confirm(_ position: Int64)
    /// Waits until everything committed so far is durable; the position it covers.
    @discardableResult func barrier() async throws -> Int64
}

/// The durable head as the feed's readers follow it (issue 56, a read port): the last position a consumer may be served,
/// and a wait for it to grow. The daemon's is LedgerPostgres' `HeadWatcher`.
package protocol HeadWatch: Sendable {
    /// The last position a consumer may be served, given the head `committed` (nil: read it): when the durable head is
    /// behind it, a barrier given `settle` to close the gap first.
    func servable(committed: Int64?, settle: Duration) async throws -> Int64
    /// Waits (at most `timeout`) until the durable head passes `position`; the head then.
    func wait(beyond position: Int64, timeout: Duration) async -> Int64
}

/// The log's pages by position as the feed serves them (issue 56, a read port). On PostgreSQL, LedgerPostgres' `EventStore`.
package protocol FeedReads: HeadReads {
    /// The events after `position` up to `head` that `filter` keeps, at most `limit`, none skipped.
    func feedPage(after position: Int64, through head: Int64, matching filter: EventFilter, limit: Int) async throws -> FeedPage
}
