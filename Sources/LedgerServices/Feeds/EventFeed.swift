import LedgerCore
import LedgerEngine
import ServiceLifecycle

/// The log as a feed that follows new commits: pages of events after a position, in position order,
/// none skipped (``FeedReads/feedPage(after:through:matching:limit:)``: `EventStore` says why) and none repeated — and only
/// durable ones: no page reaches past the durable head (``HeadWatch``), so no consumer is ever served an event a
/// failover could take back (a commit whose wait for the synchronous standby was cancelled).
public struct EventFeed: Sendable {
    public static let pageSize = 1_000

    /// The event store (on PostgreSQL, LedgerPostgres' `EventStore`; the replica's when auditors read one).
    let store: any FeedReads
    /// The durable head (on PostgreSQL, LedgerPostgres' `HeadWatcher`).
    let watcher: any HeadWatch

    /// Whether the store reads the database the watcher watches (the primary, not a replica that may lag behind it):
    /// then the live feed, once woken by the durable head's growth, reads the page through that head at once, without
    /// reading the store's head first. From a replica the page needs the replica's own head, so as not to read past
    /// what it has yet.
    let storeIsWatched: Bool

    package init(store: any FeedReads, watcher: any HeadWatch, storeIsWatched: Bool = false) {
        self.store = store
        self.watcher = watcher
        self.storeIsWatched = storeIsWatched
    }

    /// How long a page waits for a barrier to make what the store holds durable before it settles for the durable
    /// head as it is (a standby that does not answer must not hold a reader longer than this).
    static let settle: Duration = .seconds(1)

    /// The next page after `position`.
    public func page(after position: Int64, matching filter: EventFilter, limit: Int = pageSize) async throws -> FeedPage {
        try await durablePage(after: position, matching: filter, limit: limit)
    }

    /// A page bounded by the durable head: the store's head read first (the replica's, when auditors read one), and
    /// when the durable head is behind it, a barrier given ``settle`` to close the gap.
    func durablePage(after position: Int64, matching filter: EventFilter, limit: Int) async throws -> FeedPage {
        try await store.feedPage(after: position, through: durableHead(), matching: filter, limit: limit)
    }

    /// The last position a consumer may be served now (``HeadWatch/servable(committed:settle:)``, on this feed's
    /// store's head).
    public func durableHead() async throws -> Int64 {
        try await watcher.servable(committed: store.head().position, settle: Self.settle)
    }

    /// The page after `position`, waiting up to `wait` for one when there is nothing yet (a long poll).
    public func page(after position: Int64, matching filter: EventFilter, limit: Int, wait: Duration) async throws -> FeedPage {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: wait)
        var cursor = position
        while true {
            let page = try await durablePage(after: cursor, matching: filter, limit: limit)
            cursor = page.through
            let remaining = clock.now.duration(to: deadline)
            if !page.events.isEmpty || remaining <= .zero || Task.isCancelled || Task.isShuttingDownGracefully {
                return FeedPage(events: page.events, through: page.through)
            }
            let watcher = self.watcher
            let seen = cursor
            _ = await cancelWhenGracefulShutdown { await watcher.wait(beyond: seen, timeout: remaining) }
        }
    }

    /// Every event after `position` that passes `filter`, then each new one as it commits, page by page.
    /// An empty page is a keep-alive: nothing arrived for `keepAlive`. Ends on cancellation or at the
    /// daemon's graceful shutdown.
    public func follow(after position: Int64, matching filter: EventFilter, keepAlive: Duration) -> Follow {
        Follow(feed: self, cursor: position, filter: filter, keepAlive: keepAlive)
    }

    /// The pages of ``follow(after:matching:keepAlive:)``, read as they are asked for (a slow reader
    /// slows the reads, nothing piles up in memory).
    public struct Follow: AsyncSequence, Sendable {
        public typealias Element = FeedPage
        let feed: EventFeed
        let cursor: Int64
        let filter: EventFilter
        let keepAlive: Duration

        public func makeAsyncIterator() -> Iterator { Iterator(feed: feed, cursor: cursor, filter: filter, keepAlive: keepAlive) }

        public struct Iterator: AsyncIteratorProtocol {
            let feed: EventFeed
            var cursor: Int64
            let filter: EventFilter
            let keepAlive: Duration

            /// Whether a page was read: from then on, a feed whose store is the watched database
            /// (``EventFeed/storeIsWatched``) reads each next page through the durable head the watcher knows, without
            /// reading the store's head (the first page reads it, so a follow starts from what is committed now).
            var started = false

            public mutating func next() async throws -> FeedPage? {
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    let page: FeedPage
                    if started && feed.storeIsWatched {
                        let watcher = feed.watcher
                        let (seen, keepAlive) = (cursor, keepAlive)
                        // At once when the durable head is already past the cursor.
                        let head = await cancelWhenGracefulShutdown { await watcher.wait(beyond: seen, timeout: keepAlive) }
                        guard head > seen else {
                            if Task.isCancelled || Task.isShuttingDownGracefully { return nil }
                            return FeedPage(events: [], through: cursor)
                        }
                        page = try await feed.store.feedPage(after: cursor, through: head, matching: filter, limit: EventFeed.pageSize)
                        cursor = page.through
                        if !page.events.isEmpty { return page }
                        continue
                    }
                    page = try await feed.durablePage(after: cursor, matching: filter, limit: EventFeed.pageSize)
                    started = true
                    cursor = page.through
                    if !page.events.isEmpty { return page }
                    if feed.storeIsWatched { continue }
                    let watcher = feed.watcher
                    let (seen, keepAlive) = (cursor, keepAlive)
                    let head = await cancelWhenGracefulShutdown { await watcher.wait(beyond: seen, timeout: keepAlive) }
                    if head <= seen && !Task.isCancelled && !Task.isShuttingDownGracefully {
                        return FeedPage(events: [], through: cursor)
                    }
                }
                return nil
            }
        }
    }
}
