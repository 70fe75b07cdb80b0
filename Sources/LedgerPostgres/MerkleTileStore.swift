import LedgerCore
import Logging
import PostgresNIO

/// `ledger.merkle_tiles` (sql/0021): the transparency log's Merkle tree as tlog tiles. The daemon only asks the
/// database to extend it (`ledger.extend_merkle_tree`, run as the table's owner from the events themselves) and
/// reads it; it never writes a hash.
package struct MerkleTileStore: PostgresStore {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// Extends the stored tree by at most `maximumTiles` full level-0 tiles, in one transaction; returns the
    /// leaves the stored full tiles cover (a multiple of 256). While another builder extends it, returns at once
    /// with what that one committed so far, or, with `wait`, waits for it and extends from its tiles (sql/0022).
    package func extend(maximumTiles: Int, wait: Bool = false) async throws -> UInt64 {
        let rows = try await client.query("SELECT ledger.extend_merkle_tree(\(Int32(maximumTiles)), \(wait))", logger: logger)
        for try await covered in rows.decode(Int64.self) { return UInt64(covered) }
        return 0
    }

    /// The head's position and the leaves the stored full level-0 tiles cover, read together.
    package func extent() async throws -> (head: UInt64, built: UInt64) {
        let rows = try await client.query(
            """
            SELECT h.position, coalesce((SELECT max(t.tile_index) + 1 FROM ledger.merkle_tiles t WHERE t.level = 0), 0) * 256
            FROM ledger.head h
            """,
            logger: logger
        )
        for try await (head, built) in rows.decode((Int64, Int64).self) { return (UInt64(head), UInt64(built)) }
        return (0, 0)
    }

    /// The asked tiles' bytes (ledger.merkle_tile: stored full tiles, partial ones computed), in one statement. A
    /// tile the stored tree does not reach yet is absent from the answer.
    package func tiles(_ tiles: [LogTile]) async throws -> [LogTile: [UInt8]] {
        guard !tiles.isEmpty else { return [:] }
        let levels = tiles.map { Int32($0.level) }
        let indices = tiles.map { Int64($0.index) }
        let widths = tiles.map { Int32($0.width) }
        let rows = try await client.query(
            """
            SELECT t.ordinality::integer, ledger.merkle_tile(t.level, t.tile_index, t.width)
            FROM unnest(\(levels)::integer[], \(indices)::bigint[], \(widths)::integer[]) WITH ORDINALITY AS t(level, tile_index, width, ordinality)
            """,
            logger: logger
        )
        var answer: [LogTile: [UInt8]] = [:]
        for try await (ordinal, bytes) in rows.decode((Int32, ByteBuffer?).self) {
            if let bytes { answer[tiles[Int(ordinal) - 1]] = Array(bytes.readableBytesView) }
        }
        return answer
    }

    /// The leaf data (the events' chain hashes) of leaves `first ..< first + count`, in order.
    package func leafData(first: UInt64, count: Int) async throws -> [[UInt8]] {
        let rows = try await client.query(
            """
            SELECT hash FROM ledger.events
            WHERE position > \(Int64(first)) AND position <= \(Int64(first) + Int64(count)) ORDER BY position
            """,
            logger: logger
        )
        var hashes: [[UInt8]] = []
        for try await hash in rows.decode(ByteBuffer.self) { hashes.append(Array(hash.readableBytesView)) }
        return hashes
    }
}
