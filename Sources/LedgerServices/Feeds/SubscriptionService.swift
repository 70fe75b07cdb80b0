import Foundation
import LedgerCore
import LedgerEngine
import Logging

/// Durable subscriptions: a named consumer's filter and checkpoint, stored in PostgreSQL.
///
/// At-least-once: ``events(_:limit:wait:)`` returns what follows the checkpoint and moves nothing; the
/// consumer processes it, then acknowledges ``SubscriptionPage/through`` (or any position it finished).
/// A consumer that crashes before its ack reads the same events again, never fewer and never out of order.
public struct SubscriptionService: Sendable {
    public static let maximumWait: Duration = .seconds(60)
    public static let maximumLimit = 1_000

    /// The subscriptions (on PostgreSQL, LedgerPostgres' `SubscriptionStore`).
    let store: any SubscriptionRecords
    let feed: EventFeed

    package init(store: any SubscriptionRecords, feed: EventFeed) {
        self.store = store
        self.feed = feed
    }

    /// Where a new subscription starts.
    public enum Start: Sendable, Hashable {
        /// After this position (0: from the first event).
        case after(Int64)
        /// After the head at creation.
        case now
    }

    /// A page for a subscription's consumer: the events and the position to acknowledge after them.
    public struct SubscriptionPage: Sendable {
        public let subscription: StoredSubscription
        public let events: [RecordedEvent]
        /// Acknowledge this once the events are processed: everything up to it that matches is in `events`.
        public let through: Int64
    }

    /// A subscription name's bytes: ASCII letters, digits, `_`, `-` and `.` (the table's CHECK, `^[A-Za-z0-9_.-]{1,100}$`).
    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."): true
        default: false
        }
    }

    /// Creates a subscription; creating it again with the same definition returns it unchanged, with
    /// another definition is a conflict.
    public func create(name: String, types: [String], streamPrefixes: [String], from start: Start) async throws -> StoredSubscription {
        // Byte by byte, not a regular expression: an ICU `$` also matches before a trailing newline, which then
        // reached the table's CHECK as a 500 (security review 3, N9).
        guard (1...100).contains(name.utf8.count), name.utf8.allSatisfy(Self.isNameByte) else {
            throw ServiceError.invalid("invalid_name", "a subscription name is 1…100 letters, digits, '_', '-' or '.'", field: "name")
        }
        guard types.allSatisfy({ EventCatalogue.entry(forType: $0) != nil }) else {
            throw ServiceError.invalid("unknown_type", "types must name event types of the catalogue", field: "types")
        }
        guard streamPrefixes.allSatisfy({ !$0.isEmpty && $0.utf8.count <= StreamID.maximumByteLength }) else {
            throw ServiceError.invalid("invalid_stream_prefix", "a stream prefix is 1…200 bytes", field: "stream_prefixes")
        }
        let checkpoint: Int64
        if case .after(let position) = start {
            guard position >= 0 else { throw ServiceError.invalid("invalid_position", "from must be a position ≥ 0 or \"now\"", field: "from") }
            checkpoint = position
        } else {
            // "now" is the durable head: a position beyond it may yet be taken back by a failover, and another event
            // take its place, which a subscription starting after it would never see.
            checkpoint = try await feed.durableHead()
        }
        let stored = try await store.create(name: name, types: types, streamPrefixes: streamPrefixes, checkpoint: checkpoint)
        guard stored.types == types, stored.streamPrefixes == streamPrefixes else {
            throw ServiceError.conflict("subscription_exists", "a subscription named \(name) exists with another filter", field: "name")
        }
        return stored
    }

    public func all() async throws -> [StoredSubscription] { try await store.all() }

    public func subscription(_ name: String) async throws -> StoredSubscription {
        guard let stored = try await store.subscription(name) else { throw ServiceError.notFound("no subscription \(name)") }
        return stored
    }

    /// The events after the checkpoint (up to `limit`), waiting up to `wait` for the first one.
    public func events(_ name: String, limit: Int, wait: Duration) async throws -> SubscriptionPage {
        let stored = try await subscription(name)
        let page = try await feed.page(after: stored.checkpoint, matching: stored.filter, limit: limit, wait: min(wait, Self.maximumWait))
        return SubscriptionPage(subscription: stored, events: page.events, through: page.through)
    }

    /// Moves the checkpoint to `position` (never back). A position beyond the head is refused.
    public func acknowledge(_ name: String, through position: Int64) async throws -> StoredSubscription {
        let before = try await subscription(name)
        guard position >= 0, position <= before.head else {
            throw ServiceError.invalid("invalid_position", "position must be 0…\(before.head), the head", field: "position")
        }
        guard let after = try await store.acknowledge(name, through: position) else { throw ServiceError.notFound("no subscription \(name)") }
        return after
    }

    public func delete(_ name: String) async throws {
        guard try await store.delete(name) else { throw ServiceError.notFound("no subscription \(name)") }
    }
}
