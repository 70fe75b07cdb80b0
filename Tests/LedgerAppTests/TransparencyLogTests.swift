import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import NIOCore
import PostgresNIO
import Testing

/// The transparency log through the real router on the real database: C2SP checkpoints that verify with the
/// served verifier key alone, proofs that `verify-proof`'s checks accept, tlog tiles and entry bundles equal to
/// the tree recomputed from the events, 4xx JSON errors for bad input, and the `(position, hash)` checkpoints
/// unchanged beside it.
@Suite(.machine(.shared)) struct TransparencyLogTests {
    static let auditor: HTTPFields = [.authorization: "Bearer \(TestApp.auditorKey)"]
    static let operatorKey: HTTPFields = [.authorization: "Bearer \(TestApp.operatorKey)"]
    static let origin = "ledger.test/transparency"

    static func get(_ client: any TestClientProtocol, _ uri: String, headers: HTTPFields = auditor) async throws -> (Int, HTTPFields, [UInt8]) {
        try await client.execute(uri: uri, method: .get, headers: headers) { (Int($0.status.code), $0.headers, Array($0.body.readableBytesView)) }
    }

    static func text(_ client: any TestClientProtocol, _ uri: String) async throws -> String {
        let (status, _, body) = try await get(client, uri)
        #expect(status == 200, "\(uri): \(String(decoding: body, as: UTF8.self))")
        return String(decoding: body, as: UTF8.self)
    }

    /// Appends `count` events through the application's writer.
    static func append(_ services: ServiceContainer, count: Int, tag: String = "t") async throws {
        var n = 0
        while n < count {
            let batch = min(100, count - n)
            _ = try await services.writer.append(
                AppendRequest(
                    stream: StreamID("transparency-\(tag)-\(n)")!,
                    expectedVersion: .any,
                    events: (0..<batch).map { NewEvent(type: "SampleRecorded", data: #"{"n": \#(n + $0)}"#, effectiveAt: Date()) }
                )
            )
            n += batch
        }
    }

    static func reference(_ services: ServiceContainer) async throws -> MerkleTree {
        var hashes: [[UInt8]] = []
        for try await hash in try await services.client.query("SELECT hash FROM ledger.events ORDER BY position").decode(ByteBuffer.self) {
            hashes.append(Merkle.leafHash(hash.readableBytesView))
        }
        return MerkleTree(leafHashes: hashes)
    }

    @Test func checkpointsProofsAndTilesVerifyWithTheVerifierKeyAlone() async throws {
        let key = CheckpointKey.generate()
        try await TestApp.withApp(environment: ["LEDGERD_LOG_ORIGIN": Self.origin], checkpointKey: key) { client, services in
            try await Self.append(services, count: 100)
            let verifier = try NoteVerifier(vkey: try await Self.text(client, "/log/key").trimmingCharacters(in: .newlines))
            #expect(verifier.name == Self.origin && verifier.kind == .ed25519)
            let older = try SignedNote(parsing: try await Self.text(client, "/log/checkpoint"))
            #expect(try LogCheckpoint(text: older.text).size == 100)
            _ = try older.verified(by: [verifier])

            try await Self.append(services, count: 500, tag: "u")
            let (status, headers, body) = try await Self.get(client, "/log/checkpoint")
            #expect(status == 200 && headers[.contentType] == "text/plain; charset=utf-8")
            let newer = try SignedNote(parsing: String(decoding: body, as: UTF8.self))
            let checkpoint = try LogCheckpoint(text: newer.text)
            #expect(checkpoint.origin == Self.origin && checkpoint.size == 600)
            _ = try newer.verified(by: [verifier])
            let reference = try await Self.reference(services)
            #expect(checkpoint.rootHash == reference.root(size: 600))

            // Every event's inclusion proof verifies offline against the signed checkpoint it carries.
            for position in 1...600 {
                let file = try JSONDecoder().decode(
                    InclusionProofFile.self,
                    from: Data(try await Self.text(client, "/log/proof/inclusion?position=\(position)").utf8)
                )
                #expect(file.checkpoint == newer.serialized)
                try file.verify(against: try SignedNote(parsing: file.checkpoint ?? ""), verifiers: [verifier])
            }
            // A proof in an older signed tree, and the consistency of the two signed trees.
            let inOld = try JSONDecoder().decode(
                InclusionProofFile.self,
                from: Data(try await Self.text(client, "/log/proof/inclusion?position=37&size=100").utf8)
            )
            #expect(inOld.checkpoint == nil)
            try inOld.verify(against: older, verifiers: [verifier])
            #expect(throws: NoteError.self) { try inOld.verify(against: newer, verifiers: [verifier]) }
            let consistency = try JSONDecoder().decode(
                ConsistencyProofFile.self,
                from: Data(try await Self.text(client, "/log/proof/consistency?from=100&to=600").utf8)
            )
            try consistency.verify(older: older, newer: newer, verifiers: [verifier])
            #expect(throws: NoteError.self) { try consistency.verify(older: newer, newer: older, verifiers: [verifier]) }

            // tlog tiles: two full level-0 tiles (immutable), the partial right edge, the partial level-1 tile.
            for (path, tile) in [
                ("0/000", LogTile(level: 0, index: 0)), ("0/001", LogTile(level: 0, index: 1)),
                ("0/002.p/88", LogTile(level: 0, index: 2, width: 88)), ("1/000.p/2", LogTile(level: 1, index: 0, width: 2)),
            ] {
                let (status, headers, bytes) = try await Self.get(client, "/log/tile/\(path)")
                #expect(status == 200 && headers[.contentType] == "application/octet-stream", "\(path)")
                #expect(bytes == reference.tile(tile), "\(path)")
                #expect(headers[.cacheControl]?.contains("immutable") == tile.isFull, "\(path)")
                // Behind the auditor key: never for shared caches.
                #expect(headers[.cacheControl]?.contains("public") == false, "\(path): \(headers[.cacheControl] ?? "")")
            }
            // Entry bundles: each leaf's data, a uint16 length (32) before it, hashing to the level-0 tile.
            let (bundleStatus, _, bundle) = try await Self.get(client, "/log/tile/entries/002.p/88")
            #expect(bundleStatus == 200 && bundle.count == 88 * 34)
            var leafHashes: [UInt8] = []
            for i in 0..<88 {
                #expect(bundle[i * 34] == 0 && bundle[i * 34 + 1] == 32)
                leafHashes += Merkle.leafHash(bundle[(i * 34 + 2)..<(i * 34 + 34)])
            }
            #expect(leafHashes == reference.tile(LogTile(level: 0, index: 2, width: 88)))

            // The (position, hash) checkpoints keep working beside it.
            let (signed, _) = try await client.execute(uri: "/audit/checkpoints", method: .post, headers: Self.operatorKey) {
                (Int($0.status.code), String(buffer: $0.body))
            }
            #expect(signed == 201)
            #expect(try await services.verifier.verify().ok)
        }
    }

    /// A checkpoint signed while another builder holds the tree (another daemon's, or the background one mid-transaction)
    /// waits for it and covers the head; it used to be signed at once for the tiles committed so far (255 of 600 here),
    /// which a loaded machine showed. The other builder is a transaction holding the builders' lock; the log under test
    /// is the only one waiting for it (the daemon's own tree is off).
    @Test func aCheckpointWaitsForAnotherBuilderAndCoversTheHead() async throws {
        try await TestApp.withApp(environment: ["LEDGERD_LOG_TREE": "false"]) { _, services in
            try await Self.append(services, count: 600)
            let log = try TransparencyLog(
                client: services.client,
                origin: Self.origin,
                key: CheckpointKey.generate(),
                watcher: services.watcher,
                logger: TestCluster.logger
            )
            try await services.client.withConnection { other in
                _ = try await other.query("BEGIN", logger: TestCluster.logger)
                _ = try await other.query("SELECT pg_advisory_xact_lock(hashtext('ledger.extend_merkle_tree'))", logger: TestCluster.logger)
                let signing = Task { try await log.checkpoint() }
                // Readiness: the checkpoint's builder waits on the lock (before the fix it signed at once, and this waited out its bound).
                func waiting() async throws -> Bool {
                    let rows = try await services.client.query(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                    for try await count in rows.decode(Int64.self) { return count > 0 }
                    return false
                }
                let deadline = ContinuousClock.now + .seconds(120)
                while try await !waiting(), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                _ = try await other.query("COMMIT", logger: TestCluster.logger)
                let note = try await signing.value
                #expect(try LogCheckpoint(text: note.text).size == 600)
                #expect(try LogCheckpoint(text: note.text).rootHash == (try await Self.reference(services)).root(size: 600))
            }
        }
    }

    @Test func badInputIsAFourHundredWithTheErrorShapeNeverAFiveHundred() async throws {
        try await TestApp.withApp(checkpointKey: CheckpointKey.generate()) { client, services in
            try await Self.append(services, count: 300)
            _ = try await Self.text(client, "/log/checkpoint")
            for (uri, expected) in [
                ("/log/proof/inclusion", 400), ("/log/proof/inclusion?position=abc", 400), ("/log/proof/inclusion?position=0", 400),
                ("/log/proof/inclusion?position=-3", 400), ("/log/proof/inclusion?position=301", 422),
                ("/log/proof/inclusion?position=5&size=4", 422), ("/log/proof/inclusion?position=5&size=99999", 409),
                ("/log/proof/inclusion?position=1&size=0", 400), ("/log/proof/consistency?from=5", 400),
                ("/log/proof/consistency?from=9&to=5", 422), ("/log/proof/consistency?from=1&to=301", 409),
                ("/log/proof/consistency?from=x&to=5", 400), ("/log/tile/8/000", 400), ("/log/tile/0/0", 400),
                ("/log/tile/0/000.p/256", 400), ("/log/tile/0/x000/001", 400), ("/log/tile/00/000", 400), ("/log/tile/0/005", 404),
                ("/log/tile/0/001", 404), ("/log/tile/0/001.p/45", 404), ("/log/tile/entries/001.p/44", 200),
                ("/log/tile/entries/001.p/45", 404), ("/log/tile/entries/abc", 400),
                // The path encoded as one segment (as OpenAPI clients send a path parameter) names the same tile.
                ("/log/tile/0%2F000", 200), ("/log/tile/entries%2F001.p%2F44", 200), ("/log/tile/0%2F0", 400),
                // An index whose first leaf is beyond 2^64 is in no tree (it trapped: the daemon stopped).
                ("/log/tile/4/x828/x029/x267/x845/x895/328", 404), ("/log/tile/entries/x001/x000/x000/x000/x000/x000/000", 404),
            ] {
                let (status, _, body) = try await Self.get(client, uri)
                #expect(status == expected, "\(uri): \(String(decoding: body, as: UTF8.self))")
                if status >= 400 {
                    let error = try? JSONDecoder().decode([String: [String: String]].self, from: Data(body))
                    #expect(error?["error"]?["code"] != nil && error?["error"]?["message"] != nil, "\(uri)")
                }
            }
            // No key, no log (unless it is made public).
            #expect(try await Self.get(client, "/log/checkpoint", headers: [:]).0 == 401)
        }
        try await TestApp.withApp(environment: ["LEDGERD_LOG_PUBLIC": "true"], checkpointKey: CheckpointKey.generate()) { client, services in
            try await Self.append(services, count: 300)
            #expect(try await Self.get(client, "/log/checkpoint", headers: [:]).0 == 200)
            // Public: a full tile may be kept by shared caches.
            let (status, headers, _) = try await Self.get(client, "/log/tile/0/000", headers: [:])
            #expect(status == 200 && headers[.cacheControl] == "public, max-age=31536000, immutable", "\(headers)")
        }
        // Without a key there are no checkpoints, but proofs still are served.
        try await TestApp.withApp { client, services in
            try await Self.append(services, count: 3)
            #expect(try await Self.get(client, "/log/checkpoint").0 == 409)
            #expect(try await Self.get(client, "/log/proof/inclusion?position=2").0 == 200)
        }
    }

    /// The auditors' psql block for an inclusion proof (docs/auditing.md), run as documented through psql as `ledger_auditor`.
    @Test func theREADMEsInclusionCheckRunsInPsqlAsTheAuditor() async throws {
        let readme = try String(contentsOf: TestCluster.repositoryRoot.appendingPathComponent("docs/auditing.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "<!-- auditor-merkle-sql -->\n```sql\n"))
        let end = try #require(readme.range(of: "```\n<!-- /auditor-merkle-sql -->", range: start.upperBound..<readme.endIndex))
        let sql = String(readme[start.upperBound..<end.lowerBound])
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(database: db, checkpointKey: CheckpointKey.generate()) { client, services in
            try await Self.append(services, count: 400)
            // The checkpoint covers the tree as built when it is signed; the background builder may be extending the
            // same tiles, so wait (with a generous bound) until one covers the events appended.
            var checkpoint = try LogCheckpoint(text: try SignedNote(parsing: try await Self.text(client, "/log/checkpoint")).text)
            let deadline = ContinuousClock.now + .seconds(120)
            while checkpoint.size < 400 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                checkpoint = try LogCheckpoint(text: try SignedNote(parsing: try await Self.text(client, "/log/checkpoint")).text)
            }
            try #require(checkpoint.size >= 400, "no checkpoint covered the 400 events appended within 120 s")
            let proof = try JSONDecoder().decode(
                InclusionProofFile.self,
                from: Data(try await Self.text(client, "/log/proof/inclusion?position=333&size=\(checkpoint.size)").utf8)
            )
            func run(position: Int, proof hashes: [String]) async throws -> String {
                let (status, output) = try await AuditorSQLTests().psql(
                    sql,
                    database: db,
                    user: "ledger_auditor",
                    variables: [
                        "position": String(position), "tree_size": String(checkpoint.size), "proof": "{\(hashes.joined(separator: ","))}",
                        "root": Data(checkpoint.rootHash).base64EncodedString(),
                    ]
                )
                #expect(status == 0, "\(output)")
                return output
            }
            // The tree check (one full tile: 400 events), then the proof's.
            let verified = "ok,tiles_checked,first_bad_level,first_bad_index\nt,1,,\n"
            #expect(try await run(position: 333, proof: proof.proof) == verified + "included\nt\n")
            #expect(try await run(position: 334, proof: proof.proof) == verified + "included\nf\n")
            var forged = proof.proof
            forged[0] = Data(Merkle.emptyRoot).base64EncodedString()
            #expect(try await run(position: 333, proof: forged) == verified + "included\nf\n")
        }
    }
}
