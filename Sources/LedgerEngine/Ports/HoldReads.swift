import Foundation
import LedgerCore
import LedgerMacros

/// The idempotency records appends store with their events (issue 56, a read port): what a use case probes before it
/// calls the acquirer, and where a replay finds the first request's events. On PostgreSQL, LedgerPostgres'
/// `IdempotencyStore` (`ledger.idempotency_keys`, today's SQL); in memory, ``InMemoryEventLog``.
package protocol IdempotencyRecords: Sendable {
    /// The hash of the request stored with `key`, or nil when no append used the key yet.
    func requestHash(forKey key: String) async throws -> [UInt8]?
    /// The positions of the events the append that stored `key` appended, or nil when no append used the key.
    func positions(forKey key: String) async throws -> ClosedRange<Int64>?
    /// The result the append that stored `key` answered (its positions and streams), as a replay answers it; nil when
    /// no append used the key.
    func storedResult(forKey key: String) async throws -> AppendResult?
}

/// A hold operation noted before the acquirer is called and deleted once its answer is recorded (sql/0015's row), so
/// that one the acquirer applied while the ledger died, or never heard the answer to, is found and recorded by recovery.
@MemberwiseInit
package struct HoldIntent: Sendable, Hashable {
    package var modificationReference: String
    package var orderID: String
    /// `capture`, `increment`, `void` or `refund`.
    package var kind: String
    package var ledgerKey: String?
    package var requestHash: [UInt8]?
    package var idempotencyKey: String?
    package var actor: String
    package var notedAt: Date
}

/// The hold operations' notes (issue 56, a port): written before the acquirer call, dropped after its answer is
/// recorded, read by recovery. On PostgreSQL, LedgerPostgres' `HoldIntentLog` over `HoldIntentStore`
/// (`ledger.hold_operation_intents`, today's SQL); in memory, ``InMemoryHoldIntents``.
package protocol HoldIntents: Sendable {
    /// Notes `intent` (the first note of a reference stays); returns once it is durable.
    func note(_ intent: HoldIntent) async throws
    /// Deletes the note of `modificationReference`, at the latest with the next note (a lost deletion is harmless:
    /// recovery finds the modification recorded and deletes the note).
    func drop(_ modificationReference: String)
    /// Deletes the note of `modificationReference` now (nothing when there is none).
    func delete(_ modificationReference: String) async throws
    /// Notes made before `cutoff`, oldest first (then by reference), at most `limit`.
    func due(before cutoff: Date, limit: Int) async throws -> [HoldIntent]
}

/// Where a page of due holds ends: its last hold's expiry (read-model text, ``OrderReadModel/timestamp(_:)``) and key.
@MemberwiseInit
package struct DueHoldCursor: Sendable, Hashable {
    package var expiresAt: String
    package var key: String
}

/// The holds the expiry sweeper looks at (issue 56, a read port). On PostgreSQL, LedgerPostgres'
/// `ProjectionHoldReader` (the `holds` read model with `ledger.hold_lapsed`, sql/0010); in memory,
/// ``InMemoryEventLog`` over the same rows with the same rule.
package protocol DueHolds: Sendable {
    /// Orders whose hold has lapsed at `now` (still `open`, `expires_at` at or before `now`), by (expiry, key), after
    /// `cursor` when given, at most `limit`; and the cursor after the page (the given one when the page is empty).
    func dueHolds(now: Date, limit: Int, after cursor: DueHoldCursor?) async throws -> (ids: [OrderID], next: DueHoldCursor?)
}
