import LedgerEngine
import Logging
import PostgresNIO

/// Reads of `ledger.idempotency_keys`, the keys and request hashes that appends store in the same
/// transaction as their events (the writer writes them; see ``IdempotencyKey``).
///
/// A use case probes a key before it calls the acquirer: a repeated request is answered from the
/// ledger without a second external call, and a key reused for another request is refused. The probe
/// is only a fast path: the append checks the key again under the head lock, so a race between two
/// requests with one key still appends once.
package struct IdempotencyStore: PostgresStore, IdempotencyRecords {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// The hash of the request stored with `key`, or nil when no append used the key yet.
    package func requestHash(forKey key: String) async throws -> [UInt8]? {
        let rows = try await client.query("SELECT request_hash FROM ledger.idempotency_keys WHERE key = \(key)", logger: logger)
        for try await hash in rows.decode(ByteBuffer.self) { return Array(hash.readableBytesView) }
        return nil
    }

    /// The positions of the events the append that stored `key` appended, or nil when no append used the key.
    package func positions(forKey key: String) async throws -> ClosedRange<Int64>? {
        let rows = try await client.query(
            "SELECT first_position, last_position FROM ledger.idempotency_keys WHERE key = \(key)",
            logger: logger
        )
        for try await (first, last) in rows.decode((Int64, Int64).self) where first <= last { return first...last }
        return nil
    }

    /// The result the append that stored `key` answered, as a replay answers it; nil when no append used the key.
    package func storedResult(forKey key: String) async throws -> AppendResult? {
        let rows = try await client.query("SELECT result::text FROM ledger.idempotency_keys WHERE key = \(key)", logger: logger)
        for try await json in rows.decode(String.self) { return try AppendResult.replaying(stored: json, key: key) }
        return nil
    }
}
