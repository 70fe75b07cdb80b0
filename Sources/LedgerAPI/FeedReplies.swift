import Foundation
import LedgerCore
import LedgerServices

/// A durable subscription: `POST /subscriptions`, each entry of `GET /subscriptions`, and the
/// `subscription` member of its pages. `lag` is how many positions the head is past the checkpoint.
public struct SubscriptionReply: Codable, Sendable, Hashable {
    public let name: String
    public let types, stream_prefixes: [String]
    public let checkpoint, head, lag: Int64
    public let created_at: String
    public let acked_at: String?

    public init(_ s: StoredSubscription) {
        name = s.name
        types = s.types
        stream_prefixes = s.streamPrefixes
        checkpoint = s.checkpoint
        head = s.head
        lag = max(0, s.head - s.checkpoint)
        created_at = RFC3339.format(s.createdAtMicros)
        acked_at = s.ackedAtMicros.map(RFC3339.format)
    }
}

/// `GET /subscriptions`.
public struct SubscriptionListReply: Codable, Sendable, Hashable {
    public let subscriptions: [SubscriptionReply]
    public init(_ all: [StoredSubscription]) { subscriptions = all.map(SubscriptionReply.init) }
}

/// A webhook endpoint (never its secrets): `POST /webhooks`, `GET /webhooks`, `GET /webhooks/{id}`,
/// redelivery and rotation. `state` is `active` or `paused`; `cursor` the last position delivered
/// (or skipped as not matching); `attempts` the failed attempts at the next event.
public struct WebhookReply: Codable, Sendable, Hashable {
    public let id, url, state: String
    public let types: [String]
    public let cursor, head, lag: Int64
    public let attempts: Int
    public let next_attempt_at, created_at: String
    public let previous_secret_valid_until: String?

    public init(_ w: WebhookView) {
        id = w.id.uuidString.lowercased()
        url = w.url
        state = w.state
        types = w.types
        cursor = w.cursor
        head = w.head
        lag = max(0, w.head - w.cursor)
        attempts = w.attempts
        next_attempt_at = RFC3339.format(w.nextAttemptAtMicros)
        created_at = RFC3339.format(w.createdAtMicros)
        previous_secret_valid_until = w.previousSecretUntilMicros.map(RFC3339.format)
    }
}

/// `GET /webhooks`.
public struct WebhookListReply: Codable, Sendable, Hashable {
    public let webhooks: [WebhookReply]
    public init(_ all: [WebhookView]) { webhooks = all.map(WebhookReply.init) }
}

/// One attempt of `GET /webhooks/{id}/deliveries`: the event's position, the attempt's number for that
/// event, the answer's status (absent when none came), its latency, and when a failed one is retried.
public struct WebhookDeliveryReply: Codable, Sendable, Hashable {
    public let id, position: Int64
    public let attempt: Int
    public let attempted_at: String
    public let status_code: Int?
    public let error: String?
    public let latency_ms: Double
    public let delivered: Bool
    public let retry_at: String?

    public init(_ d: StoredDelivery) {
        id = d.id
        position = d.position
        attempt = d.attempt
        attempted_at = RFC3339.format(d.attemptedAtMicros)
        status_code = d.statusCode
        error = d.error
        // A duration, not money: milliseconds with microsecond resolution.
        latency_ms = Double(d.latencyMicros) / 1_000
        delivered = d.delivered
        retry_at = d.retryAtMicros.map(RFC3339.format)
    }
}

/// `GET /webhooks/{id}/deliveries?after=&limit=`: attempts oldest first; `next_after` pages on.
public struct WebhookDeliveryListReply: Codable, Sendable, Hashable {
    public let deliveries: [WebhookDeliveryReply]
    public let next_after: Int64?
    public init(_ all: [StoredDelivery], limit: Int) {
        deliveries = all.map(WebhookDeliveryReply.init)
        next_after = all.count == limit ? all.last?.id : nil
    }
}

/// A journal line on the wire: the account and a decimal amount on one side.
public struct JournalLineReply: Codable, Sendable, Hashable {
    public let account, account_name, debit, credit: String
}

/// A journal entry on the wire: the event it records and its balanced lines.
public struct JournalEntryReply: Codable, Sendable, Hashable {
    public let position: Int64
    public let event_type, recorded_at, effective_at, reference, currency: String
    public let lines: [JournalLineReply]

    public init(_ e: JournalEntry) {
        position = e.position
        event_type = e.eventType
        recorded_at = RFC3339.format(e.recordedAtMicros)
        effective_at = RFC3339.format(e.effectiveAtMicros)
        reference = e.reference
        currency = e.currency.code
        lines = e.lines.map {
            JournalLineReply(
                account: $0.account.code,
                account_name: $0.account.name,
                debit: Money(minorUnits: $0.debitMinorUnits, currency: e.currency).decimalString,
                credit: Money(minorUnits: $0.creditMinorUnits, currency: e.currency).decimalString
            )
        }
    }
}

/// An account's movement over the period, per currency.
public struct JournalTotalReply: Codable, Sendable, Hashable {
    public let account, account_name, currency, debit, credit: String
}

/// `GET /journal?from=&to=`: the period's entries in position order and each account's totals.
public struct JournalReply: Codable, Sendable, Hashable {
    public let from, to: String
    public let entries: [JournalEntryReply]
    /// The totals of this page's entries.
    public let totals: [JournalTotalReply]
    /// Ask again with `after=` this for the next page; absent on the last.
    public let next_after: Int64?

    public init(fromMicros: Int64, toMicros: Int64, entries: [JournalEntry], nextAfter: Int64? = nil) {
        from = RFC3339.format(fromMicros)
        to = RFC3339.format(toMicros)
        next_after = nextAfter
        self.entries = entries.map(JournalEntryReply.init)
        var sums: [String: [JournalAccount: (debit: Int64, credit: Int64)]] = [:]
        var currencies: [String: Currency] = [:]
        for entry in entries {
            currencies[entry.currency.code] = entry.currency
            for line in entry.lines {
                let current = sums[entry.currency.code, default: [:]][line.account] ?? (0, 0)
                sums[entry.currency.code, default: [:]][line.account] = (current.debit + line.debitMinorUnits, current.credit + line.creditMinorUnits)
            }
        }
        totals = sums.keys.sorted().flatMap { code in
            let currency = currencies[code]!
            return JournalAccount.allCases.compactMap { account -> JournalTotalReply? in
                guard let sum = sums[code]?[account] else { return nil }
                return JournalTotalReply(
                    account: account.code,
                    account_name: account.name,
                    currency: code,
                    debit: Money(minorUnits: sum.debit, currency: currency).decimalString,
                    credit: Money(minorUnits: sum.credit, currency: currency).decimalString
                )
            }
        }
    }
}
