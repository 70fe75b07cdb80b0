import Foundation
import LedgerCore
import LedgerEngine
import Logging
import PostgresNIO

/// Reads of the event log: the head, a stream, a range of positions.
public struct EventStore: PostgresStore {
    public let connection: StoreConnection

    public init(connection: StoreConnection) { self.connection = connection }

    /// The last committed position and its hash (position 0 and the genesis hash when empty).
    public func head() async throws -> (position: Int64, hash: [UInt8]) {
        let rows = try await client.query("SELECT position, hash FROM ledger.head WHERE singleton", logger: logger)
        for try await (position, hash) in rows.decode((Int64, ByteBuffer).self) {
            return (position, Array(hash.readableBytesView))
        }
        throw AppendError.storageFailure("the ledger head row is missing")
    }

    /// A stream's events in version order.
    public func readStream(_ streamID: StreamID) async throws -> [RecordedEvent] {
        try await Self.decode(
            client.query(
                "\(unescaped: Self.columns) WHERE stream_id = \(streamID.rawValue) ORDER BY stream_version",
                logger: logger
            )
        )
    }

    /// Up to `limit` of a stream's events after `version`, in version order: one page of the stream.
    public func readStream(_ streamID: StreamID, after version: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await Self.decode(
            client.query(
                "\(unescaped: Self.columns) WHERE stream_id = \(streamID.rawValue) AND stream_version > \(version) ORDER BY stream_version LIMIT \(limit)",
                logger: logger
            )
        )
    }

    /// A stream's events after `version`, in version order: the tail a cached state has not seen.
    public func readStream(_ streamID: StreamID, after version: Int64) async throws -> [RecordedEvent] {
        try await Self.decode(
            client.query(
                "\(unescaped: Self.columns) WHERE stream_id = \(streamID.rawValue) AND stream_version > \(version) ORDER BY stream_version",
                logger: logger
            )
        )
    }

    /// Every event of `streams`, in position order (one query, for loading many short streams at once).
    /// One index range per stream, whatever the planner's statistics say (`OFFSET 0` keeps the lateral subquery
    /// from being flattened into a join the planner may hash): with `stream_id = ANY(…)` the few product streams
    /// that hold most of the log make every stream look long, and on a large log the planner chose a parallel scan
    /// of the whole table, 110–150 ms for the 1,000 streams of an expiry page of a 700,000-event ledger against
    /// 10 ms by lookups. The range is `events_by_stream_position` (sql/0020), bounded here by the largest position:
    /// without that index the bound made each lookup a BitmapAnd with every position of the log
    /// (`StatementCostTests` guards it).
    public func readStreams(_ streams: [StreamID]) async throws -> [RecordedEvent] {
        try await readStreams(streams, through: .max)
    }

    /// Up to `limit` events with position ≥ `position` (and ≤ `through`, when given), in order.
    public func read(from position: Int64, through: Int64? = nil, limit: Int) async throws -> [RecordedEvent] {
        try await Self.decode(
            client.query(
                """
                \(unescaped: Self.columns)
                WHERE position >= \(position) AND position <= \(through ?? Int64.max)
                ORDER BY position LIMIT \(Int64(limit))
                """,
                logger: logger
            )
        )
    }

    /// The same page read on a connection (e.g. inside a transaction that holds the head lock).
    public static func read(connection: PostgresConnection, from position: Int64, limit: Int, logger: Logger) async throws -> [RecordedEvent] {
        try await decode(
            connection.query(
                "\(unescaped: columns) WHERE position >= \(position) ORDER BY position LIMIT \(Int64(limit))",
                logger: logger
            )
        )
    }

    /// The hash of the event at `position`, or nil when there is no such event.
    public func hash(at position: Int64) async throws -> [UInt8]? {
        let rows = try await client.query("SELECT hash FROM ledger.events WHERE position = \(position)", logger: logger)
        for try await hash in rows.decode(ByteBuffer.self) { return Array(hash.readableBytesView) }
        return nil
    }

    /// Times as whole microseconds and the stored JSON texts: exactly what the hash covers (sql/0017).
    static let selectList = """
        position, stream_id, stream_version, event_id, type, schema_version, data_text, metadata_text,
               ledger.epoch_us(effective_at), ledger.epoch_us(recorded_at), prev_hash, hash
        """
    static let columns = "SELECT \(selectList) FROM ledger.events"

    static func decode(_ rows: PostgresRowSequence) async throws -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        for try await row in rows {
            let (position, stream, version, eventID, type, schemaVersion, data, metadata, effective, recorded, prev, hash) =
                try row.decode((Int64, String, Int64, UUID, String, Int32, String, String, Int64, Int64, ByteBuffer, ByteBuffer).self)
            guard let streamID = StreamID(stream) else {
                throw AppendError.storageFailure("invalid stream id at position \(position)")
            }
            events.append(
                RecordedEvent(
                    position: position,
                    streamID: streamID,
                    streamVersion: version,
                    eventID: eventID,
                    type: type,
                    schemaVersion: schemaVersion,
                    data: data,
                    metadata: metadata,
                    effectiveAtMicros: effective,
                    recordedAtMicros: recorded,
                    prevHash: Array(prev.readableBytesView),
                    hash: Array(hash.readableBytesView)
                )
            )
        }
        return events
    }
}

/// The reads the engine's command runner and the services make, in SQL.
extension EventStore: StreamReads, HeadReads, PositionReads, EventAtPosition, FeedReads {}
