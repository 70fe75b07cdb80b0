import Foundation
import LedgerCore
import LedgerEngine
import Logging
import PostgresNIO

/// The subscriptions' SQL: create, read (with the head, for lag), acknowledge, delete. Each change is answered once
/// committed (``DatabaseClient/committed(_:logger:)``): the client is told of it only once it outlives a failover.
public struct SubscriptionStore: PostgresStore, SubscriptionRecords {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    /// Creates the subscription at `checkpoint` (nil: the head now); an existing one of that name is
    /// left as it is. The stored subscription either way.
    public func create(name: String, types: [String], streamPrefixes: [String], checkpoint: Int64?) async throws -> StoredSubscription {
        try await client.committed(
            """
            INSERT INTO ledger.subscriptions (name, types, stream_prefixes, checkpoint)
            SELECT \(name), \(types)::text[], \(streamPrefixes)::text[], coalesce(\(checkpoint), h.position)
            FROM ledger.head h WHERE h.singleton
            ON CONFLICT (name) DO NOTHING
            """,
            logger: logger
        )
        guard let stored = try await subscription(name) else { throw AppendError.storageFailure("subscription \(name) vanished") }
        return stored
    }

    public func subscription(_ name: String) async throws -> StoredSubscription? {
        try await Self.decode(client.query("\(unescaped: Self.columns) WHERE s.name = \(name)", logger: logger)).first
    }

    /// Every subscription, by name.
    public func all() async throws -> [StoredSubscription] {
        try await Self.decode(client.query("\(unescaped: Self.columns) ORDER BY s.name", logger: logger))
    }

    /// Moves the checkpoint forward to `position` (never back; at most the head). The stored
    /// subscription after it, or nil when there is none of that name.
    public func acknowledge(_ name: String, through position: Int64) async throws -> StoredSubscription? {
        try await client.committed(
            """
            UPDATE ledger.subscriptions s SET checkpoint = greatest(s.checkpoint, least(\(position), h.position)), acked_at = now()
            FROM ledger.head h WHERE h.singleton AND s.name = \(name)
            """,
            logger: logger
        )
        return try await subscription(name)
    }

    /// Deletes it; whether there was one.
    public func delete(_ name: String) async throws -> Bool {
        try await !client.committed("DELETE FROM ledger.subscriptions WHERE name = \(name) RETURNING name", logger: logger).isEmpty
    }

    static let columns = """
        SELECT s.name, s.types, s.stream_prefixes, s.checkpoint, ledger.epoch_us(s.created_at),
               CASE WHEN s.acked_at IS NULL THEN NULL ELSE ledger.epoch_us(s.acked_at) END, h.position
        FROM ledger.subscriptions s CROSS JOIN ledger.head h
        """

    static func decode(_ rows: PostgresRowSequence) async throws -> [StoredSubscription] {
        var out: [StoredSubscription] = []
        for try await (name, types, prefixes, checkpoint, created, acked, head) in rows.decode(
            (String, [String], [String], Int64, Int64, Int64?, Int64).self
        ) {
            out.append(
                StoredSubscription(
                    name: name,
                    types: types,
                    streamPrefixes: prefixes,
                    checkpoint: checkpoint,
                    createdAtMicros: created,
                    ackedAtMicros: acked,
                    head: head
                )
            )
        }
        return out
    }
}
