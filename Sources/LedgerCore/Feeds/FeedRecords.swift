import struct Foundation.UUID

/// A durable subscription as stored (`ledger.subscriptions`, sql/0012).
public struct StoredSubscription: Sendable, Hashable {
    public var name: String
    public var types: [String]
    public var streamPrefixes: [String]
    /// Every event at or before it was acknowledged by the consumer.
    public var checkpoint: Int64
    public var createdAtMicros: Int64
    public var ackedAtMicros: Int64?
    /// The ledger's head when this row was read.
    public var head: Int64

    public init(
        name: String,
        types: [String],
        streamPrefixes: [String],
        checkpoint: Int64,
        createdAtMicros: Int64,
        ackedAtMicros: Int64?,
        head: Int64
    ) {
        self.name = name
        self.types = types
        self.streamPrefixes = streamPrefixes
        self.checkpoint = checkpoint
        self.createdAtMicros = createdAtMicros
        self.ackedAtMicros = ackedAtMicros
        self.head = head
    }

    /// Its events' filter.
    public var filter: EventFilter {
        var filter = EventFilter(types: types)
        filter.streamPrefixes = streamPrefixes
        return filter
    }
}

/// What an operator makes of a webhook endpoint (security review 4, L6; `WebhookStore.apply`).
public enum WebhookChange: String, Sendable, CaseIterable {
    /// The dispatcher skips it; its cursor stays, so a resume delivers what was held, in order.
    case pause
    /// Active and due at once, its retry state reset (the give-up time counts from its next failure).
    case resume
    /// For good: never delivered to or changed again; its row and delivery history stay for audit (sql/0025).
    case delete
}

/// One attempt to deliver an event to an endpoint (`ledger.webhook_deliveries`).
public struct StoredDelivery: Sendable, Hashable {
    public var id: Int64
    public var endpointID: UUID
    public var position: Int64
    public var attempt: Int
    public var attemptedAtMicros: Int64
    public var statusCode: Int?
    public var error: String?
    public var latencyMicros: Int64
    public var delivered: Bool
    public var retryAtMicros: Int64?

    public init(
        id: Int64,
        endpointID: UUID,
        position: Int64,
        attempt: Int,
        attemptedAtMicros: Int64,
        statusCode: Int?,
        error: String?,
        latencyMicros: Int64,
        delivered: Bool,
        retryAtMicros: Int64?
    ) {
        self.id = id
        self.endpointID = endpointID
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
