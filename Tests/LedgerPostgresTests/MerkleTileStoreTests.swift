import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The stored Merkle tree (sql/0021) on the real database: built by the owner's function from the events, equal
/// to the tree recomputed from them, append-only, unwritable by the application, resumable, and every proof read
/// from its tiles verifies — or, once a stored node is forged, fails against the signed root.
@Suite(.machine(.shared)) struct MerkleTileStoreTests {
    /// Appends `count` events through the real writer, in requests of up to 50.
    static func append(_ db: TestDatabase, count: Int) async throws {
        try await db.withWriter { writer, _ in
            var n = 0
            while n < count {
                let batch = min(50, count - n)
                _ = try await writer.append(
                    AppendRequest(stream: stream("merkle-\(n % 7)"), expectedVersion: .any, events: (0..<batch).map { sampleEvent(n + $0) })
                )
                n += batch
            }
        }
    }

    /// Adds `count` events after the head in one statement as the owner (for trees of several levels; their chain
    /// links are not a real chain, which the tree does not look at).
    static func bulkAppend(_ db: TestDatabase, count: Int) async throws {
        try await db.withOwner { client in
            try await client.query(
                """
                WITH h AS (SELECT position FROM ledger.head)
                INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version, data, metadata,
                    effective_at, recorded_at, prev_hash, hash, data_text, metadata_text)
                SELECT h.position + g, 'bulk-' || (h.position + g), 1, gen_random_uuid(), 'BulkRecorded', 1, '{}', '{}', now(), now(),
                       sha256(int8send(h.position + g - 1)), sha256(int8send(h.position + g) || '\\x42'::bytea), '{}', '{}'
                FROM h, generate_series(1, \(Int64(count))) AS g
                """
            )
            try await client.query("UPDATE ledger.head SET position = position + \(Int64(count))")
        }
    }

    /// The tree recomputed from the events, in memory.
    static func reference(_ client: DatabaseClient) async throws -> MerkleTree {
        MerkleTree(
            leafHashes: try await column(client, "SELECT hash FROM ledger.events ORDER BY position", as: ByteBuffer.self).map {
                Merkle.leafHash($0.readableBytesView)
            }
        )
    }

    /// The README's psql check for the event at position 42 in the tree of 820 leaves, the proof's hashes given as hex.
    static func rootFromInclusion(_ proof: [[UInt8]]) -> PostgresQuery {
        let hexes = proof.map { $0.map { String(format: "%02x", $0) }.joined() }
        return """
            SELECT ledger.merkle_root_from_inclusion(e.hash, e.position, 820,
                (SELECT array_agg(decode(x, 'hex') ORDER BY i) FROM unnest(\(hexes)::text[]) WITH ORDINALITY AS u(x, i)))
            FROM ledger.events e WHERE e.position = 42
            """
    }

    static func fetch(_ store: MerkleTileStore) -> TiledMerkle.Fetch { { try await store.tiles($0) } }

    @Test func theStoredTreeEqualsTheTreeRecomputedFromTheEvents() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.append(db, count: 600)
        try await Self.bulkAppend(db, count: 66_000)
        try await db.withApp { client in
            let store = MerkleTileStore(client: client, logger: TestCluster.logger)
            var covered: UInt64 = 0
            while true {
                let next = try await store.extend(maximumTiles: 64)
                if next == covered { break }
                covered = next
            }
            #expect(covered == 66_560)  // 260 full level-0 tiles
            let reference = try await Self.reference(client)
            #expect(reference.size == 66_600)
            // Every stored tile (level 0 and level 1) is the reference's, byte for byte.
            var stored = 0
            for try await (level, index, hashes, root) in try await client.query(
                "SELECT level, tile_index, hashes, root FROM ledger.merkle_tiles ORDER BY level, tile_index"
            ).decode((Int16, Int64, ByteBuffer, ByteBuffer).self) {
                let (hashes, root) = (Array(hashes.readableBytesView), Array(root.readableBytesView))
                let tile = LogTile(level: Int(level), index: UInt64(index))
                #expect(hashes == reference.tile(tile), "tile \(tile)")
                #expect(root == reference.node(MerkleNodeID(height: 8 * (Int(level) + 1), index: UInt64(index))), "root of \(tile)")
                stored += 1
            }
            #expect(stored == 260 + 1)
            #expect(try await column(client, "SELECT ok FROM ledger.verify_merkle_tree()", as: Bool.self) == [true])
            // Roots, inclusion and consistency proofs read from the tiles verify against the recomputed tree.
            var random = SplitMix(state: 29)
            for size in [UInt64(1), 255, 256, 600, 65_536, 65_537, 66_599, 66_600] + (0..<20).map({ _ in 1 + random.next(below: 66_600) }) {
                let fetch = Self.fetch(store)
                let root = reference.root(size: size)
                #expect(try await TiledMerkle.root(size: size, fetch: fetch) == root, "root of \(size)")
                let index = random.next(below: size)
                let inclusion = try await TiledMerkle.inclusion(index: index, size: size, fetch: fetch)
                try MerkleProof.verifyInclusion(
                    leafHash: reference.levels[0][Int(index)],
                    index: index,
                    size: size,
                    proof: inclusion.proof,
                    root: root
                )
                let older = random.next(below: size + 1)
                let consistency = try await TiledMerkle.consistency(from: older, to: size, fetch: fetch)
                try MerkleProof.verifyConsistency(
                    size1: older,
                    size2: size,
                    proof: consistency.proof,
                    root1: reference.root(size: older),
                    root2: root
                )
            }
        }
    }

    @Test func buildingIsResumableOneTileAtATimeAndStopsAtTheHead() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.append(db, count: 300)
        try await Self.bulkAppend(db, count: 1_000)
        try await db.withApp { client throws in
            let store = MerkleTileStore(client: client, logger: TestCluster.logger)
            // Each call is its own transaction of whole tiles: a kill between two calls loses nothing built.
            for expected in stride(from: UInt64(256), through: 1_280, by: 256) {
                #expect(try await store.extend(maximumTiles: 1) == expected)
            }
            #expect(try await store.extend(maximumTiles: 10) == 1_280)
            #expect(try await store.extent() == (head: 1_300, built: 1_280))
            // The partial right edge is computed from the events: width 20.
            let partial = LogTile(level: 0, index: 5, width: 20)
            #expect(try await store.tiles([partial])[partial] == (try await Self.reference(client)).tile(partial))
            // A tile beyond the events is not made up.
            let beyond = LogTile(level: 0, index: 5, width: 21)
            #expect(try await store.tiles([beyond])[beyond] == nil)
        }
    }

    /// Two builders (sql/0022): while one holds the tree, another returns at once with what is committed, or, asked
    /// to wait, waits for the first one's transaction and goes on from the tiles it committed.
    @Test func aWaitingBuilderGoesOnFromTheOtherBuildersTiles() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.bulkAppend(db, count: 1_300)
        try await db.withApp { client throws in
            let store = MerkleTileStore(client: client, logger: TestCluster.logger)
            try await client.withConnection { other in
                _ = try await other.query("BEGIN", logger: TestCluster.logger)
                let rows = try await other.query("SELECT ledger.extend_merkle_tree(2)", logger: TestCluster.logger)
                var first: [Int64] = []
                for try await covered in rows.decode(Int64.self) { first.append(covered) }
                #expect(first == [512])
                #expect(try await store.extend(maximumTiles: 10) == 0)  // at once: nothing committed yet
                let waiting = Task { try await store.extend(maximumTiles: 10, wait: true) }
                // Readiness: the waiting builder is blocked on the lock.
                let deadline = ContinuousClock.now + .seconds(120)
                let waiters: PostgresQuery = """
                    SELECT count(*) FROM pg_locks
                    WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """
                while try await column(client, waiters, as: Int64.self) == [0], ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                _ = try await other.query("COMMIT", logger: TestCluster.logger)
                #expect(try await waiting.value == 1_280)
            }
            #expect(try await column(client, "SELECT count(*) FROM ledger.merkle_tiles WHERE level = 0", as: Int64.self) == [5])
            #expect(try await column(client, "SELECT ok FROM ledger.verify_merkle_tree()", as: Bool.self) == [true])
        }
    }

    @Test func tilesAreAppendOnlyAndOnlyTheOwnersFunctionWritesThem() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.bulkAppend(db, count: 512)
        try await db.withApp { client in
            _ = try await MerkleTileStore(client: client, logger: TestCluster.logger).extend(maximumTiles: 10)
            await expectRejected(
                client,
                "INSERT INTO ledger.merkle_tiles SELECT level, tile_index + 10, hashes, root FROM ledger.merkle_tiles LIMIT 1",
                sqlState: "42501"
            )
            await expectRejected(client, "UPDATE ledger.merkle_tiles SET root = hashes", sqlState: "42501")
            await expectRejected(client, "DELETE FROM ledger.merkle_tiles", sqlState: "42501")
            #expect(try await column(client, "SELECT count(*) FROM ledger.merkle_tiles", as: Int64.self) == [2])
        }
        try await db.withOwner { client in
            await expectRejected(client, "UPDATE ledger.merkle_tiles SET root = sha256(root)", sqlState: "LDG01")
            await expectRejected(client, "DELETE FROM ledger.merkle_tiles WHERE tile_index = 1", sqlState: "LDG01")
            await expectRejected(client, "TRUNCATE ledger.merkle_tiles", sqlState: "LDG01")
        }
        try await db.withAuditor { client throws in
            #expect(try await column(client, "SELECT count(*) FROM ledger.merkle_tiles", as: Int64.self) == [2])
            await expectRejected(client, "SELECT ledger.extend_merkle_tree(1)", sqlState: "42501")
        }
    }

    @Test func aForgedStoredNodeFailsVerificationAgainstTheSignedRoot() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.bulkAppend(db, count: 1_000)
        let (signedRoot, leaf) = try await db.withApp { client in
            let store = MerkleTileStore(client: client, logger: TestCluster.logger)
            _ = try await store.extend(maximumTiles: 10)
            let reference = try await Self.reference(client)
            return (try await TiledMerkle.root(size: 1_000, fetch: Self.fetch(store)), reference.levels[0][300])
        }
        // Every byte of a stored hash matters; forge a few of them (a superuser, triggers off).
        for offset in [0, 31, 32 * 45 + 7, 8_191] {
            try await db.tamper(
                "UPDATE ledger.merkle_tiles SET hashes = set_byte(hashes, \(offset), get_byte(hashes, \(offset)) # 1) WHERE tile_index = 1"
            )
            try await db.withAuditor { client in
                // The auditor's SQL check names the forged tile.
                let report = try await client.query("SELECT ok, first_bad_level, first_bad_index FROM ledger.verify_merkle_tree()")
                for try await (ok, level, index) in report.decode((Bool, Int32?, Int64?).self) {
                    #expect(!ok && level == 0 && index == 1, "byte \(offset)")
                }
            }
            try await db.withApp { client in
                let fetch = Self.fetch(MerkleTileStore(client: client, logger: TestCluster.logger))
                // The root of 1,000 reads the tiles' stored roots, which are intact; the proof through the forged hashes
                // does not lead to it.
                let (proof, root) = try await TiledMerkle.inclusion(index: 300, size: 1_000, fetch: fetch)
                #expect(root == signedRoot, "byte \(offset)")
                #expect(throws: MerkleProofError.self) {
                    try MerkleProof.verifyInclusion(leafHash: leaf, index: 300, size: 1_000, proof: proof, root: signedRoot)
                }
            }
            try await db.tamper(
                "UPDATE ledger.merkle_tiles SET hashes = set_byte(hashes, \(offset), get_byte(hashes, \(offset)) # 1) WHERE tile_index = 1"
            )
        }
        // A forged stored root (a node of height 8) changes the root the tiles give: it is not the signed one.
        try await db.tamper("UPDATE ledger.merkle_tiles SET root = set_byte(root, 9, get_byte(root, 9) # 4) WHERE tile_index = 1")
        try await db.withApp { client in
            let forged = try await TiledMerkle.root(size: 1_000, fetch: Self.fetch(MerkleTileStore(client: client, logger: TestCluster.logger)))
            #expect(forged != signedRoot)
            #expect(try await column(client, "SELECT ok FROM ledger.verify_merkle_tree()", as: Bool.self) == [false])
        }
    }

    @Test func anAuditorChecksAnInclusionProofWithSQLAlone() async throws {
        let db = try await TestDatabase.fresh()
        try await Self.append(db, count: 120)
        try await Self.bulkAppend(db, count: 700)
        let (proof, root) = try await db.withApp { client in
            let store = MerkleTileStore(client: client, logger: TestCluster.logger)
            _ = try await store.extend(maximumTiles: 10)
            return try await TiledMerkle.inclusion(index: 41, size: 820, fetch: Self.fetch(store))
        }
        try await db.withAuditor { client in
            let computed = try await column(client, Self.rootFromInclusion(proof), as: ByteBuffer.self).map { Array($0.readableBytesView) }
            #expect(computed == [root])
            var bad = proof
            bad[2][5] ^= 1
            let refused = try await column(client, Self.rootFromInclusion(bad), as: ByteBuffer.self).map { Array($0.readableBytesView) }
            #expect(refused != [root])
            // Psql's partial-tile function answers the auditor too (the right edge: 820 − 768 = 52 leaves).
            #expect(try await column(client, "SELECT octet_length(ledger.merkle_tile(0, 3, 52))", as: Int32.self) == [52 * 32])
        }
    }
}

/// A seeded generator (SplitMix64) for the sizes the tests pick.
struct SplitMix {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: UInt64) -> UInt64 { next() % bound }
}
