import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The auditor's reads of the log: an order's whole history, the filtered feed, streams up to a
/// point in time (for as-of state), and the position a time falls on. Every query is one indexed
/// statement (sql/0006_create_audit_queries.sql).
extension EventStore {
    /// Every event that belongs to an order's history, in position order: the order's and its
    /// hold's streams, every other event whose payload names the order in `order_id` (stock
    /// reserved, sold or released on product streams, a contact erasure), and the settlement
    /// batches that took its captures and refunds (`ledger.settlement_assignments`). The same condition docs/auditing.md gives auditors for psql.
    public func orderHistory(_ orderID: String) async throws -> [RecordedEvent] {
        let streams = ["order-\(orderID)", "hold-\(orderID)"]
        return try await Self.decode(
            client.query(
                """
                \(unescaped: Self.columns)
                WHERE data ->> 'order_id' = \(orderID) OR stream_id = ANY(\(streams)::text[])
                   OR (type = 'SettlementBatchClosed' AND stream_id IN (
                           SELECT 'settlement-' || a.batch_id FROM ledger.settlement_assignments a
                           WHERE a.position IN (SELECT m.position FROM ledger.events m
                                                WHERE m.data ->> 'order_id' = \(orderID) AND m.type IN ('HoldCaptured', 'HoldRefunded'))))
                ORDER BY position
                """,
                logger: logger
            )
        )
    }

    /// Up to `limit` events after `position` that pass `filter`, in position order. Time bounds
    /// become position bounds first (`ledger.position_at`: recorded_at never decreases with
    /// position), so every page is a range scan in position order and a cursor never skips or
    /// repeats an event.
    public func events(after position: Int64, through: Int64 = .max, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent] {
        var lower = position
        var upper = through
        if let from = filter.fromMicros { lower = max(lower, try await self.position(atMicros: from - 1)) }
        if let to = filter.toMicros { upper = min(upper, try await self.position(atMicros: to - 1)) }
        guard lower < upper else { return [] }
        var query: PostgresQuery = "\(unescaped: Self.columns) WHERE position > \(lower) AND position <= \(upper)"
        if !filter.types.isEmpty {
            query.binds.append(filter.types)
            query.sql += " AND type = ANY($\(query.binds.count)::text[])"
        }
        if let prefix = filter.streamPrefix {
            query.binds.append(Self.likePrefix(prefix))
            query.sql += " AND stream_id LIKE $\(query.binds.count)"
        }
        if !filter.streamPrefixes.isEmpty {
            query.binds.append(filter.streamPrefixes.map(Self.likePrefix))
            query.sql += " AND stream_id LIKE ANY($\(query.binds.count)::text[])"
        }
        if let correlation = filter.correlationID {
            query.binds.append(correlation)
            query.sql += " AND metadata ->> 'correlation_id' = $\(query.binds.count)"
        }
        query.binds.append(Int64(limit))
        query.sql += " ORDER BY position LIMIT $\(query.binds.count)"
        return try await Self.decode(client.query(query, logger: logger))
    }

    /// A consumer's next page: up to `limit` events in (position, head] that pass `filter`, where `head` is a head the
    /// caller read (``head()``) or a lower bound on it (the durable head, ``HeadWatcher``). Gap-safe: positions are
    /// assigned under the head lock, held to commit, so transactions commit in position order and every event at or
    /// before a head read is already committed (visible to the next statement); none can appear later below it. See
    /// ``FeedPage``.
    public func feedPage(after position: Int64, through head: Int64, matching filter: EventFilter, limit: Int) async throws -> FeedPage {
        guard head > position else { return FeedPage(events: [], through: position) }
        let events = try await events(after: position, through: head, matching: filter, limit: limit)
        let through = events.count == limit ? events[events.count - 1].position : head
        return FeedPage(events: events, through: through)
    }

    /// The last position recorded at or before the instant (0 when nothing was).
    public func position(atMicros micros: Int64) async throws -> Int64 {
        let rows = try await client.query(
            "SELECT ledger.position_at(timestamptz 'epoch' + \(micros) * interval '1 microsecond')",
            logger: logger
        )
        for try await position in rows.decode(Int64.self) { return position }
        return 0
    }

    /// The event at `position`, or nil.
    public func event(at position: Int64) async throws -> RecordedEvent? {
        try await Self.decode(client.query("\(unescaped: Self.columns) WHERE position = \(position)", logger: logger)).first
    }

    /// The events of `streams` up to and including `position`, in position order, looked up stream by stream:
    /// one range of `events_by_stream_position` (sql/0020) each, so the cost is the events returned, not the log
    /// below `position` (see ``readStreams(_:)``).
    public func readStreams(_ streams: [StreamID], through position: Int64) async throws -> [RecordedEvent] {
        guard !streams.isEmpty else { return [] }
        return try await Self.decode(
            client.query(
                """
                SELECT \(unescaped: Self.selectList)
                FROM unnest(\(streams.map(\.rawValue))::text[]) AS wanted(stream)
                CROSS JOIN LATERAL (
                    SELECT * FROM ledger.events e WHERE e.stream_id = wanted.stream AND e.position <= \(position) OFFSET 0
                ) events
                ORDER BY position
                """,
                logger: logger
            )
        )
    }

    /// The events of every stream whose id starts with `prefix`, up to and including `position`.
    public func readStreams(prefix: String, through position: Int64) async throws -> [RecordedEvent] {
        try await Self.decode(
            client.query(
                """
                \(unescaped: Self.columns)
                WHERE stream_id LIKE \(Self.likePrefix(prefix)) AND position <= \(position) ORDER BY position
                """,
                logger: logger
            )
        )
    }

    /// A LIKE pattern matching ids that start with `prefix` (its `\`, `%` and `_` taken literally). Per Unicode
    /// scalar, as PostgreSQL reads the pattern: a `\` followed by a combining mark is one `Character` but two
    /// code points, and must still be escaped.
    static func likePrefix(_ prefix: String) -> String {
        var pattern = ""
        for scalar in prefix.unicodeScalars {
            if scalar == "\\" || scalar == "%" || scalar == "_" { pattern.unicodeScalars.append("\\") }
            pattern.unicodeScalars.append(scalar)
        }
        return pattern + "%"
    }
}
