import Crypto
import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The inventory snapshots (`ledger.inventory_snapshots`, sql/0013) and the events an
/// ``InventoryHistory`` folds between them.
public struct InventorySnapshotStore: PostgresStore {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    /// A stored snapshot, with the log's hash at its position (nil when the log has no such event).
    public struct Stored: Sendable {
        public let position: Int64
        public let state: [UInt8]
        public let stateSHA256: [UInt8]
        public let eventHash: [UInt8]
        public let logHash: [UInt8]?

        /// Why this snapshot cannot be used, or nil when its bytes hash to its digest and it names the
        /// log's event at its position.
        public var defect: String? {
            if Array(SHA256.hash(data: state)) != stateSHA256 { return "its bytes do not hash to its state_sha256" }
            guard let logHash else { return "the log has no event at its position" }
            if logHash != eventHash { return "its event_hash is not the log's hash at its position" }
            return nil
        }
    }

    /// The snapshots at or before `position`, nearest first, at most `limit` of them.
    public func snapshots(atOrBefore position: Int64, limit: Int) async throws -> [Stored] {
        let rows = try await client.query(
            """
            SELECT s.position, s.state, s.state_sha256, s.event_hash, e.hash
            FROM ledger.inventory_snapshots s LEFT JOIN ledger.events e ON e.position = s.position
            WHERE s.position <= \(position) ORDER BY s.position DESC LIMIT \(Int64(limit))
            """,
            logger: logger
        )
        var found: [Stored] = []
        for try await (position, state, digest, eventHash, logHash) in rows.decode((Int64, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer?).self) {
            found.append(
                Stored(
                    position: position,
                    state: Array(state.readableBytesView),
                    stateSHA256: Array(digest.readableBytesView),
                    eventHash: Array(eventHash.readableBytesView),
                    logHash: logHash.map { Array($0.readableBytesView) }
                )
            )
        }
        return found
    }

    /// Every snapshot's position, in order.
    public func positions() async throws -> [Int64] {
        let rows = try await client.query("SELECT position FROM ledger.inventory_snapshots ORDER BY position", logger: logger)
        var positions: [Int64] = []
        for try await position in rows.decode(Int64.self) { positions.append(position) }
        return positions
    }

    /// The last snapshot's position and its state's length in bytes (nil when there is none).
    public func last() async throws -> (position: Int64, bytes: Int)? {
        let rows = try await client.query(
            "SELECT position, octet_length(state) FROM ledger.inventory_snapshots ORDER BY position DESC LIMIT 1",
            logger: logger
        )
        for try await (position, bytes) in rows.decode((Int64, Int32).self) { return (position, Int(bytes)) }
        return nil
    }

    /// Stores a snapshot's bytes (``InventoryHistory/snapshotBytes()`` of the history at `position`),
    /// with their SHA-256 and the log's hash at that position. Another writer's snapshot at the same
    /// position (the same bytes) wins quietly. Returns whether a row was inserted.
    @discardableResult
    public func insert(position: Int64, state bytes: [UInt8]) async throws -> Bool {
        let digest = Array(SHA256.hash(data: bytes))
        let rows = try await client.query(
            """
            INSERT INTO ledger.inventory_snapshots (position, state, state_sha256, event_hash)
            SELECT e.position, \(ByteBuffer(bytes: bytes)), \(ByteBuffer(bytes: digest)), e.hash
            FROM ledger.events e WHERE e.position = \(position)
            ON CONFLICT (position) DO NOTHING
            RETURNING position
            """,
            logger: logger
        )
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    /// The events an ``InventoryHistory`` folds, in `(after, through]`, decoded, in position order:
    /// product streams' events and hold placements (two ranges of the index `events_by_type`).
    public func historyEvents(after: Int64, through: Int64) async throws -> [(position: Int64, event: DomainEvent)] {
        guard through > after else { return [] }
        let rows = try await client.query(
            """
            SELECT position, type, schema_version, data_text FROM ledger.events
            WHERE position > \(after) AND position <= \(through)
              AND ((type = ANY(\(InventoryHistory.productEventTypes)::text[]) AND stream_id LIKE 'product-%')
                OR (type = \(InventoryHistory.holdPlacedType) AND stream_id LIKE 'hold-%'))
            ORDER BY position
            """,
            logger: logger
        )
        var events: [(position: Int64, event: DomainEvent)] = []
        for try await (position, type, schemaVersion, data) in rows.decode((Int64, String, Int32, String).self) {
            events.append((position, try DomainEvent.decode(type: type, schemaVersion: schemaVersion, json: data)))
        }
        return events
    }
}
