import Foundation
import LedgerApp
import LedgerCore
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Kill -9 of a real `ledgerd serve` (production mode: an app role, the owner migrates) while it builds the tree of
/// an existing ledger, and again while it extends the tree as the log grows: after the restart the stored tree is
/// the tree recomputed from the events, tile for tile, and every proof it serves verifies against its signed
/// checkpoint.
@Suite(.machine(.shared)) struct MerkleTreeKillTests {
    static func call(_ port: Int, _ path: String, key: String) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.timeoutInterval = 120
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await TestHTTP.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// `count` events after the head, as an existing ledger holds them (inserted by the owner while no daemon runs;
    /// the head moves with them).
    static func existingEvents(_ db: TestDatabase, count: Int) async throws {
        try await db.withOwner { client in
            try await client.query(
                """
                WITH h AS (SELECT position FROM ledger.head)
                INSERT INTO ledger.events (position, stream_id, stream_version, event_id, type, schema_version, data, metadata,
                    effective_at, recorded_at, prev_hash, hash, data_text, metadata_text)
                SELECT h.position + g, 'existing-' || (h.position + g), 1, gen_random_uuid(), 'ExistingRecorded', 1, '{}', '{}', now(), now(),
                       sha256(int8send(h.position + g - 1)), sha256(int8send(h.position + g) || '\\x07'::bytea), '{}', '{}'
                FROM h, generate_series(1, \(Int64(count))) AS g
                """
            )
            try await client.query(
                "UPDATE ledger.head SET position = e.position, hash = e.hash FROM (SELECT position, hash FROM ledger.events ORDER BY position DESC LIMIT 1) e"
            )
        }
    }

    static func tileCount(_ db: TestDatabase) async throws -> Int64 {
        try await db.withOwner { client in
            var count: Int64 = 0
            for try await n in try await client.query("SELECT count(*) FROM ledger.merkle_tiles WHERE level = 0").decode(Int64.self) { count = n }
            return count
        }
    }

    /// Starts the daemon with the fault point `merkle.tiles_stored`: it kills itself (SIGKILL) once a batch of tiles
    /// has committed while more remain, whatever the machine's speed; the tiles stored then.
    static func killWhileBuilding(
        _ start: (String?) async throws -> DaemonProcess,
        db: TestDatabase,
        after: Int64,
        total: Int64
    ) async throws -> Int64 {
        let daemon = try await start("merkle.tiles_stored")
        defer { daemon.process.terminate() }
        let died = try await daemon.exited(attempts: 2_400)
        try #require(
            died && daemon.process.terminationReason == .uncaughtSignal && daemon.output().contains("fault point reached"),
            "the daemon did not die at its fault point:\n\(daemon.output().suffix(4_000))"
        )
        let stored = try await tileCount(db)
        // Killed mid-way (else the kill tested nothing): the build had stored tiles and not all of them.
        #expect(stored > after && stored < total, "killed with \(stored) of \(total) tiles stored (\(after) before)")
        return stored
    }

    @Test(.timeLimit(.minutes(10))) func killedWhileBuildingAndWhileExtendingTheTreeEqualsTheEventsAfterARestart() async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        let shared = try await SharedDatabase.make(tag: tag)
        let db = shared.database
        let root = URL(fileURLWithPath: "/tmp/ledgerd-merkle-\(tag)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let log = root.appendingPathComponent("daemon.log")
        let keyFile = root.appendingPathComponent("checkpoint.pem")
        let key = CheckpointKey.generate()
        try SecretFile.write(Data(key.privateKeyPEM.utf8), to: keyFile)
        let origin = "ledger.test/killed"
        let port = TestPorts.free()
        let environment: [String: String?] = [
            "LEDGERD_DATABASE_URL": shared.url(shared.app), "LEDGERD_MIGRATION_DATABASE_URL": shared.url(shared.owner),
            "LEDGERD_OPERATOR_KEYS": "op-\(tag)", "LEDGERD_AUDITOR_KEYS": "au-\(tag)", "LEDGERD_LOG_LEVEL": "warning",
            "LEDGERD_SEED_DEMO_CATALOG": "false", "LEDGERD_CHECKPOINT_KEY": keyFile.path, "LEDGERD_LOG_ORIGIN": origin,
            "LEDGERD_LOG_INTERVAL_MS": "20",
        ]
        let start = { (crashAt: String?) in
            var environment = environment
            environment["LEDGERD_FAULT_CRASH_AT"] = crashAt
            return try await DaemonProcess.start(
                dataDirectory: root.appendingPathComponent("data"),
                port: port,
                logFile: log,
                environment: environment
            )
        }

        // The daemon migrates the empty database, then stops: an existing ledger of 300,000 events is there before the
        // tree is (as after upgrading a ledger to this version).
        let first = try await start(nil)
        try #require(first.health?.status == 200, "the daemon did not come up:\n\(first.output())")
        try await first.stop()
        try await Self.existingEvents(db, count: 300_000)
        let stored = try await Self.killWhileBuilding(start, db: db, after: 0, total: 1_171)
        // Killed again while it extends the tree over events that arrived since.
        try await Self.existingEvents(db, count: 60_000)
        _ = try await Self.killWhileBuilding(start, db: db, after: stored, total: 1_406)

        let daemon = try await start(nil)
        defer { daemon.process.terminate() }
        try #require(daemon.health?.status == 200, "the daemon did not come back:\n\(daemon.output())")
        let verifier = try NoteVerifier(vkey: try TransparencyLog.verifierKey(origin: origin, key: key))
        // It finishes the tree and signs it.
        var checkpoint: SignedNote?
        for _ in 0..<1_200 {
            let (status, text) = try await Self.call(daemon.port, "/log/checkpoint", key: "au-\(tag)")
            if status == 200, let note = try? SignedNote(parsing: text), (try? LogCheckpoint(text: note.text))?.size == 360_000 {
                checkpoint = note
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let signed = try #require(checkpoint, "no checkpoint of the whole log:\n\(daemon.output())")
        _ = try signed.verified(by: [verifier])
        #expect(try await Self.tileCount(db) == 1_406)

        // The stored tree is the tree recomputed from the events, every tile and every root.
        let reference = try await db.withOwner { client in
            var hashes: [[UInt8]] = []
            for try await hash in try await client.query("SELECT hash FROM ledger.events ORDER BY position").decode(ByteBuffer.self) {
                hashes.append(Merkle.leafHash(hash.readableBytesView))
            }
            return MerkleTree(leafHashes: hashes)
        }
        #expect(try LogCheckpoint(text: signed.text).rootHash == reference.root(size: 360_000))
        let mismatched = try await db.withOwner { client in
            var mismatched: [String] = []
            for try await (level, index, hashes) in try await client.query("SELECT level, tile_index, hashes FROM ledger.merkle_tiles")
                .decode((Int16, Int64, ByteBuffer).self)
            {
                let hashes = Array(hashes.readableBytesView)
                let tile = LogTile(level: Int(level), index: UInt64(index))
                if hashes != reference.tile(tile) { mismatched.append(tile.path) }
            }
            return mismatched
        }
        #expect(mismatched.isEmpty, "tiles unlike the events' tree: \(mismatched.prefix(10))")
        let sqlCheck = try await db.withOwner { client in
            var ok: [Bool] = []
            for try await value in try await client.query("SELECT ok FROM ledger.verify_merkle_tree()").decode(Bool.self) { ok.append(value) }
            return ok
        }
        #expect(sqlCheck == [true])
        // Proofs it serves verify against the signed checkpoint.
        for position in [1, 256, 65_536, 299_999, 300_000, 300_001, 359_999, 360_000] {
            let (status, text) = try await Self.call(daemon.port, "/log/proof/inclusion?position=\(position)", key: "au-\(tag)")
            #expect(status == 200, "\(text)")
            let file = try JSONDecoder().decode(InclusionProofFile.self, from: Data(text.utf8))
            try file.verify(against: signed, verifiers: [verifier])
        }
        let (status, text) = try await Self.call(daemon.port, "/log/proof/consistency?from=300000&to=360000", key: "au-\(tag)")
        #expect(status == 200, "\(text)")
        let consistency = try JSONDecoder().decode(ConsistencyProofFile.self, from: Data(text.utf8))
        try MerkleProof.verifyConsistency(
            size1: 300_000,
            size2: 360_000,
            proof: consistency.proof.map { Array(Data(base64Encoded: $0)!) },
            root1: reference.root(size: 300_000),
            root2: try LogCheckpoint(text: signed.text).rootHash
        )
        try await daemon.stop()
    }
}
