import LedgerCore

/// The durable subscriptions (issue 56, a read port): each named consumer's filter and checkpoint. On PostgreSQL,
/// LedgerPostgres' `SubscriptionStore` (`ledger.subscriptions`, today's SQL).
package protocol SubscriptionRecords: Sendable {
    /// Creates the subscription, or answers the one stored under `name` as it is.
    func create(name: String, types: [String], streamPrefixes: [String], checkpoint: Int64?) async throws -> StoredSubscription
    func subscription(_ name: String) async throws -> StoredSubscription?
    func all() async throws -> [StoredSubscription]
    /// Moves the checkpoint to `position` (never back); nil: no such subscription.
    func acknowledge(_ name: String, through position: Int64) async throws -> StoredSubscription?
    /// False: no such subscription.
    func delete(_ name: String) async throws -> Bool
}
