import Foundation
import LedgerCore
import LedgerEngine
import Logging
import PostgresNIO

/// A webhook endpoint as stored (`ledger.webhook_endpoints`, sql/0012). Its secrets are sealed: this
/// module never sees them in clear.
public struct StoredWebhook: Sendable, Hashable {
    public var id: UUID
    public var url: String
    public var types: [String]
    public var sealedSecret: [UInt8]
    public var sealedPreviousSecret: [UInt8]?
    public var previousSecretUntilMicros: Int64?
    /// `active`, `paused` (by an operator, or after the give-up time) or `deleted` (sql/0025).
    public var state: String
    /// Every event at or before it was delivered or does not match.
    public var cursor: Int64
    /// Failed attempts at the event after the cursor.
    public var attempts: Int
    public var firstFailedAtMicros: Int64?
    public var nextAttemptAtMicros: Int64
    public var createdAtMicros: Int64
    /// The ledger's head when this row was read.
    public var head: Int64

    public init(
        id: UUID,
        url: String,
        types: [String],
        sealedSecret: [UInt8],
        sealedPreviousSecret: [UInt8]?,
        previousSecretUntilMicros: Int64?,
        state: String,
        cursor: Int64,
        attempts: Int,
        firstFailedAtMicros: Int64?,
        nextAttemptAtMicros: Int64,
        createdAtMicros: Int64,
        head: Int64
    ) {
        self.id = id
        self.url = url
        self.types = types
        self.sealedSecret = sealedSecret
        self.sealedPreviousSecret = sealedPreviousSecret
        self.previousSecretUntilMicros = previousSecretUntilMicros
        self.state = state
        self.cursor = cursor
        self.attempts = attempts
        self.firstFailedAtMicros = firstFailedAtMicros
        self.nextAttemptAtMicros = nextAttemptAtMicros
        self.createdAtMicros = createdAtMicros
        self.head = head
    }
}

/// An endpoint's delivery state after an attempt, written back by the dispatcher.
public struct WebhookProgress: Sendable, Hashable {
    public var cursor: Int64
    public var attempts: Int
    public var firstFailedAtMicros: Int64?
    public var nextAttemptAtMicros: Int64
    public var paused: Bool

    public init(cursor: Int64, attempts: Int, firstFailedAtMicros: Int64?, nextAttemptAtMicros: Int64, paused: Bool) {
        self.cursor = cursor
        self.attempts = attempts
        self.firstFailedAtMicros = firstFailedAtMicros
        self.nextAttemptAtMicros = nextAttemptAtMicros
        self.paused = paused
    }
}

/// The webhooks' SQL: endpoints, their delivery history, and the dispatcher's claim of a due endpoint. An operator's
/// change (register, redeliver, rotate) is answered once committed (``DatabaseClient/committed(_:logger:)``): they are
/// told of it only once it outlives a failover.
public struct WebhookStore: PostgresStore {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    /// Registers an endpoint whose first event is the one after `cursor` (nil: after the head now).
    public func insert(id: UUID, url: String, types: [String], sealedSecret: [UInt8], cursor: Int64?, nowMicros: Int64) async throws -> StoredWebhook
    {
        try await client.committed(
            """
            INSERT INTO ledger.webhook_endpoints (id, url, types, sealed_secret, cursor, next_attempt_at, created_at)
            SELECT \(id), \(url), \(types)::text[], \(ByteBuffer(bytes: sealedSecret)), coalesce(\(cursor), h.position),
                   timestamptz 'epoch' + \(nowMicros) * interval '1 microsecond', timestamptz 'epoch' + \(nowMicros) * interval '1 microsecond'
            FROM ledger.head h WHERE h.singleton
            """,
            logger: logger
        )
        guard let stored = try await endpoint(id) else { throw AppendError.storageFailure("webhook \(id) vanished") }
        return stored
    }

    public func endpoint(_ id: UUID) async throws -> StoredWebhook? {
        try await Self.decode(client.query("\(unescaped: Self.columns) WHERE w.id = \(id)", logger: logger)).first
    }

    /// Every endpoint, oldest first.
    public func all() async throws -> [StoredWebhook] {
        try await Self.decode(client.query("\(unescaped: Self.columns) ORDER BY w.created_at, w.id", logger: logger))
    }

    /// Up to `limit` attempts of an endpoint after attempt `afterID`, oldest first.
    public func deliveries(_ endpointID: UUID, after afterID: Int64, limit: Int) async throws -> [StoredDelivery] {
        let rows = try await client.query(
            """
            SELECT id, endpoint_id, position, attempt, ledger.epoch_us(attempted_at), status_code, error, latency_us, delivered,
                   CASE WHEN retry_at IS NULL THEN NULL ELSE ledger.epoch_us(retry_at) END
            FROM ledger.webhook_deliveries WHERE endpoint_id = \(endpointID) AND id > \(afterID) ORDER BY id LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var out: [StoredDelivery] = []
        for try await (id, endpoint, position, attempt, at, status, error, latency, delivered, retry) in rows.decode(
            (Int64, UUID, Int64, Int32, Int64, Int32?, String?, Int64, Bool, Int64?).self
        ) {
            out.append(
                StoredDelivery(
                    id: id,
                    endpointID: endpoint,
                    position: position,
                    attempt: Int(attempt),
                    attemptedAtMicros: at,
                    statusCode: status.map(Int.init),
                    error: error,
                    latencyMicros: latency,
                    delivered: delivered,
                    retryAtMicros: retry
                )
            )
        }
        return out
    }

    /// Delivers again from `position` (the cursor goes to the one before it), at once, and resumes a
    /// paused endpoint. Waits for a dispatcher that is delivering to the endpoint (its row lock). Nil for a deleted one.
    public func redeliver(_ id: UUID, from position: Int64, nowMicros: Int64) async throws -> StoredWebhook? {
        let changed = try await client.committed(
            """
            UPDATE ledger.webhook_endpoints SET cursor = \(max(0, position - 1)), attempts = 0, first_failed_at = NULL,
                   next_attempt_at = timestamptz 'epoch' + \(nowMicros) * interval '1 microsecond', state = 'active'
            WHERE id = \(id) AND state <> 'deleted' RETURNING id
            """,
            logger: logger
        )
        return changed.isEmpty ? nil : try await endpoint(id)
    }

    /// Installs a new sealed secret; the current one stays valid until `previousUntilMicros`. Nil for a deleted endpoint.
    public func rotate(_ id: UUID, sealedSecret: [UInt8], previousUntilMicros: Int64) async throws -> StoredWebhook? {
        let changed = try await client.committed(
            """
            UPDATE ledger.webhook_endpoints SET sealed_previous_secret = sealed_secret, sealed_secret = \(ByteBuffer(bytes: sealedSecret)),
                   previous_secret_until = timestamptz 'epoch' + \(previousUntilMicros) * interval '1 microsecond'
            WHERE id = \(id) AND state <> 'deleted' RETURNING id
            """,
            logger: logger
        )
        return changed.isEmpty ? nil : try await endpoint(id)
    }

    /// Applies `change` to an endpoint that is not deleted, once committed; nil when there is no such endpoint or it was
    /// deleted. Waits for a dispatcher that is delivering to the endpoint (its row lock), so a pause or a delete holds
    /// from the next attempt on.
    public func apply(_ change: WebhookChange, to id: UUID, nowMicros: Int64) async throws -> StoredWebhook? {
        let query: PostgresQuery =
            switch change {
            case .pause:
                "UPDATE ledger.webhook_endpoints SET state = 'paused' WHERE id = \(id) AND state <> 'deleted' RETURNING id"
            case .resume:
                """
                UPDATE ledger.webhook_endpoints SET state = 'active', attempts = 0, first_failed_at = NULL,
                       next_attempt_at = timestamptz 'epoch' + \(nowMicros) * interval '1 microsecond'
                WHERE id = \(id) AND state <> 'deleted' RETURNING id
                """
            case .delete:
                """
                UPDATE ledger.webhook_endpoints SET state = 'deleted', deleted_at = timestamptz 'epoch' + \(nowMicros) * interval '1 microsecond'
                WHERE id = \(id) AND state <> 'deleted' RETURNING id
                """
            }
        let changed = try await client.committed(query, logger: logger)
        return changed.isEmpty ? nil : try await endpoint(id)
    }

    /// In one transaction: claims an active endpoint that has events after its cursor and is due at
    /// `nowMicros` (row lock, `SKIP LOCKED`: another daemon's dispatcher takes another endpoint, never
    /// this one), runs `body` with it, and commits what `body` recorded. Nil when no endpoint is due.
    /// If the process dies in `body`, nothing of it is committed and the endpoint is due again. Events after `head`
    /// (the durable head, ``HeadWatcher``) are neither due nor delivered.
    public func withDueEndpoint<T: Sendable>(
        nowMicros: Int64,
        through head: Int64,
        _ body: (StoredWebhook, WebhookTransaction) async throws -> T
    ) async throws -> T? {
        try await client.withTransaction(logger: logger) { connection -> T? in
            let rows = try await connection.query(
                """
                \(unescaped: Self.columns)
                WHERE w.state = 'active' AND w.next_attempt_at <= timestamptz 'epoch' + \(nowMicros) * interval '1 microsecond' AND w.cursor < least(h.position, \(head))
                ORDER BY w.next_attempt_at LIMIT 1 FOR UPDATE OF w SKIP LOCKED
                """,
                logger: logger
            )
            guard let endpoint = try await Self.decode(rows).first else { return nil }
            return try await body(endpoint, WebhookTransaction(connection: connection, head: head, logger: logger))
        }
    }

    /// How many endpoints are active, and the earliest next attempt of one with events through `head` (the durable
    /// head) to deliver (nil: none).
    public func schedule(through head: Int64) async throws -> (active: Int, nextDueMicros: Int64?) {
        let rows = try await client.query(
            """
            SELECT count(*) FILTER (WHERE w.state = 'active'),
                   ledger.epoch_us(min(w.next_attempt_at) FILTER (WHERE w.state = 'active' AND w.cursor < least(h.position, \(head))))
            FROM ledger.webhook_endpoints w CROSS JOIN ledger.head h
            """,
            logger: logger
        )
        for try await (active, due) in rows.decode((Int64, Int64?).self) { return (Int(active), due) }
        return (0, nil)
    }

    static let columns = """
        SELECT w.id, w.url, w.types, w.sealed_secret, w.sealed_previous_secret,
               CASE WHEN w.previous_secret_until IS NULL THEN NULL ELSE ledger.epoch_us(w.previous_secret_until) END,
               w.state, w.cursor, w.attempts,
               CASE WHEN w.first_failed_at IS NULL THEN NULL ELSE ledger.epoch_us(w.first_failed_at) END,
               ledger.epoch_us(w.next_attempt_at), ledger.epoch_us(w.created_at), h.position
        FROM ledger.webhook_endpoints w CROSS JOIN ledger.head h
        """

    static func decode(_ rows: PostgresRowSequence) async throws -> [StoredWebhook] {
        var out: [StoredWebhook] = []
        for try await row in rows {
            let (id, url, types, secret, previous, previousUntil, state, cursor, attempts, firstFailed, next, created, head) = try row.decode(
                (UUID, String, [String], ByteBuffer, ByteBuffer?, Int64?, String, Int64, Int32, Int64?, Int64, Int64, Int64).self
            )
            out.append(
                StoredWebhook(
                    id: id,
                    url: url,
                    types: types,
                    sealedSecret: Array(secret.readableBytesView),
                    sealedPreviousSecret: previous.map { Array($0.readableBytesView) },
                    previousSecretUntilMicros: previousUntil,
                    state: state,
                    cursor: cursor,
                    attempts: Int(attempts),
                    firstFailedAtMicros: firstFailed,
                    nextAttemptAtMicros: next,
                    createdAtMicros: created,
                    head: head
                )
            )
        }
        return out
    }
}

/// The dispatcher's statements inside the transaction that holds an endpoint's row lock.
public struct WebhookTransaction: Sendable {
    let connection: PostgresConnection
    /// The durable head: no page reaches past it.
    let head: Int64
    let logger: Logger

    /// The endpoint's next events: up to `limit` in (after, head] of `types` (empty: all), the head the ledger's or
    /// the durable one if lower, and the position through which that page is complete (see ``FeedPage``).
    public func page(after position: Int64, types: [String], limit: Int) async throws -> FeedPage {
        var head: Int64 = 0
        for try await value in try await connection.query("SELECT position FROM ledger.head WHERE singleton", logger: logger)
            .decode(Int64.self)
        {
            head = min(value, self.head)
        }
        guard head > position else { return FeedPage(events: [], through: position) }
        var query: PostgresQuery = "\(unescaped: EventStore.columns) WHERE position > \(position) AND position <= \(head)"
        if !types.isEmpty {
            query.binds.append(types)
            query.sql += " AND type = ANY($\(query.binds.count)::text[])"
        }
        query.binds.append(Int64(limit))
        query.sql += " ORDER BY position LIMIT $\(query.binds.count)"
        let events = try await EventStore.decode(connection.query(query, logger: logger))
        return FeedPage(events: events, through: events.count == limit ? events[events.count - 1].position : head)
    }

    /// Writes what this transaction did back: the attempts made (one multi-row INSERT into the delivery
    /// history) and the endpoint's delivery state. One round trip per event would halve a fast receiver's rate.
    public func finish(_ endpointID: UUID, attempts: [WebhookAttempt], progress: WebhookProgress) async throws {
        if !attempts.isEmpty {
            // NULLs travel as sentinels (-1, ""), arrays of optionals being awkward to bind.
            try await connection.query(
                """
                INSERT INTO ledger.webhook_deliveries (endpoint_id, position, attempt, attempted_at, status_code, error, latency_us, delivered, retry_at)
                SELECT \(endpointID), a.position, a.attempt, timestamptz 'epoch' + a.attempted_us * interval '1 microsecond',
                       NULLIF(a.status_code, -1), NULLIF(a.error, ''), a.latency_us, a.delivered,
                       CASE WHEN a.retry_us < 0 THEN NULL ELSE timestamptz 'epoch' + a.retry_us * interval '1 microsecond' END
                FROM unnest(\(attempts.map(\.position))::bigint[], \(attempts.map { Int32($0.attempt) })::int[],
                            \(attempts.map(\.attemptedAtMicros))::bigint[], \(attempts.map { Int32($0.statusCode ?? -1) })::int[],
                            \(attempts.map { $0.error ?? "" })::text[], \(attempts.map(\.latencyMicros))::bigint[],
                            \(attempts.map(\.delivered))::bool[], \(attempts.map { $0.retryAtMicros ?? -1 })::bigint[])
                     AS a(position, attempt, attempted_us, status_code, error, latency_us, delivered, retry_us)
                """,
                logger: logger
            )
        }
        try await connection.query(
            """
            UPDATE ledger.webhook_endpoints SET cursor = \(progress.cursor), attempts = \(Int32(progress.attempts)),
                   first_failed_at = CASE WHEN \(progress.firstFailedAtMicros)::bigint IS NULL THEN NULL
                                          ELSE timestamptz 'epoch' + \(progress.firstFailedAtMicros)::bigint * interval '1 microsecond' END,
                   next_attempt_at = timestamptz 'epoch' + \(progress.nextAttemptAtMicros) * interval '1 microsecond',
                   state = \(progress.paused ? "paused" : "active")
            WHERE id = \(endpointID)
            """,
            logger: logger
        )
    }
}

/// One delivery attempt, as the history keeps it.
public struct WebhookAttempt: Sendable, Hashable {
    public var position: Int64
    public var attempt: Int
    public var attemptedAtMicros: Int64
    public var statusCode: Int?
    public var error: String?
    public var latencyMicros: Int64
    public var delivered: Bool
    public var retryAtMicros: Int64?

    public init(
        position: Int64,
        attempt: Int,
        attemptedAtMicros: Int64,
        statusCode: Int?,
        error: String?,
        latencyMicros: Int64,
        delivered: Bool,
        retryAtMicros: Int64?
    ) {
        self.position = position
        self.attempt = attempt
        self.attemptedAtMicros = attemptedAtMicros
        self.statusCode = statusCode
        self.error = error
        self.latencyMicros = latencyMicros
        self.delivered = delivered
        self.retryAtMicros = retryAtMicros
    }
}
