import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Logging
import Synchronization
import Testing

/// The witness (`ledgerd witness serve`'s application) over its real HTTP route: it cosigns a log's consistent
/// checkpoints, refuses a split view and a fork with the protocol's status and a reason, logs and counts each
/// refusal, and keeps its state in its own file. Then a ledger submits to it for real, and after its log is
/// rewritten the witness refuses the next checkpoint.
@Suite(.machine(.shared)) struct WitnessTests {
    static let origin = "ledger.test/witnessed"

    /// What a logger was told, for tests that check a refusal is logged.
    final class LogRecorder: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []

        var logger: Logger {
            Logger(label: "witness-test") { _ in Handler(recorder: self) }
        }

        func record(_ line: String) { lock.withLock { lines.append(line) } }
        var recorded: [String] { lock.withLock { lines } }

        struct Handler: LogHandler {
            let recorder: LogRecorder
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .info
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                recorder.record("\(event.level) \(event.message) \(event.metadata ?? [:])")
            }
        }
    }

    struct Log {
        var tree = MerkleTree()
        let signer: NoteSigner

        mutating func append(_ tag: UInt8, count: Int) {
            for i in 0..<count { tree.append(leafHash: Merkle.leafHash([tag, UInt8(truncatingIfNeeded: i), UInt8(truncatingIfNeeded: i >> 8)])) }
        }

        func body(old: UInt64) throws -> String {
            let checkpoint = try LogCheckpoint(origin: WitnessTests.origin, size: tree.size, rootHash: tree.root(size: tree.size))
            let note = SignedNote(text: checkpoint.text, signatures: [try signer.sign(checkpoint.text)])
            return try AddCheckpointRequest(oldSize: old, proof: tree.consistencyProof(from: old, to: tree.size), note: note).body
        }
    }

    static func post(_ client: any TestClientProtocol, _ body: String) async throws -> (Int, String, String?) {
        try await client.execute(uri: "/add-checkpoint", method: .post, body: ByteBuffer(string: body)) {
            (Int($0.status.code), String(buffer: $0.body), $0.headers[.contentType])
        }
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("witness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func cosignsTheSharedPrefixAndRefusesTheDivergentLogWithAReasonLoggedAndCounted() async throws {
        let logKey = try NoteSigner(name: Self.origin, kind: .ed25519, key: Curve25519.Signing.PrivateKey())
        // Two ledgers sharing 300 events, then each appending its own 40.
        var a = Log(signer: logKey)
        a.append(0, count: 300)
        var b = a
        a.append(1, count: 40)
        b.append(2, count: 40)
        let directory = try Self.temporaryDirectory()
        let stateFile = directory.appendingPathComponent("state.json")
        let recorder = LogRecorder()
        let metrics = LedgerMetrics()
        let witnessSeed = Curve25519.Signing.PrivateKey().rawRepresentation
        let service = try WitnessService(
            name: "witness.test/w1",
            key: Curve25519.Signing.PrivateKey(rawRepresentation: witnessSeed),
            trustedKeys: [logKey.verifier],
            stateFile: stateFile,
            clock: { Date(timeIntervalSince1970: 1_800_000_000) },
            metrics: metrics.factory,
            logger: recorder.logger
        )
        let witnessVerifier = try NoteVerifier(vkey: service.verifierKey)
        // The bodies each ledger sends, made before the requests.
        var prefix = a
        prefix.tree = MerkleTree(leafHashes: a.tree.levels[0].prefix(300))
        let prefixBody = try prefix.body(old: 0)
        let extensionBody = try a.body(old: 300)
        let againBody = try a.body(old: 340)
        let splitBody = try b.body(old: 340)
        b.append(3, count: 60)
        let forkBody = try b.body(old: 340)
        let staleBody = try b.body(old: 300)
        let app = WitnessServer.application(service: service, metrics: metrics, logger: TestCluster.logger)
        try await app.test(.router) { client in
            // The shared prefix: cosigned (a cosignature/v1 line by the witness's key, dated by its clock).
            let (status, lines, _) = try await Self.post(client, prefixBody)
            #expect(status == 200, "\(lines)")
            let note = try SignedNote(parsing: try AddCheckpointRequest(body: prefixBody).note.text + "\n" + lines)
            let cosigned = try note.verified(by: [witnessVerifier])
            #expect(Cosignature.timestamp(of: cosigned[0].1) == 1_800_000_000)
            // Ledger A extends it: cosigned, and the state file says so.
            #expect(try await Self.post(client, extensionBody).0 == 200)
            let state = try JSONDecoder().decode([String: WitnessedCheckpoint].self, from: Data(contentsOf: stateFile))
            #expect(state[Self.origin]?.size == 340)

            // Ledger B, same size, other root: a split view (409), with the reason.
            let (splitStatus, splitReason, _) = try await Self.post(client, splitBody)
            #expect(splitStatus == 409 && splitReason.contains("split view"), "\(splitReason)")
            // Ledger B grown, proving from 340 with its own tree: does not extend what was cosigned (422).
            let (forkStatus, forkReason, _) = try await Self.post(client, forkBody)
            #expect(forkStatus == 422 && forkReason.contains("does not extend"), "\(forkReason)")
            // B pretending the witness saw only the prefix: 409 text/x.tlog.size with the size it cosigned.
            let (staleStatus, staleAnswer, staleType) = try await Self.post(client, staleBody)
            #expect(staleStatus == 409 && staleAnswer == "340\n" && staleType == "text/x.tlog.size")
            // Garbage and a forged signature.
            #expect(try await Self.post(client, "old 0\n\nnot a checkpoint\n").0 == 400)
            var forged = try AddCheckpointRequest(body: againBody)
            forged.note.signatures[0].bytes[0] ^= 1
            #expect(try await Self.post(client, forged.body).0 == 403)

            // Nothing refused moved the state; each refusal is counted by reason and logged with its reason.
            #expect(await service.latest(origin: Self.origin)?.size == 340)
            let exposition = try await client.execute(uri: "/metrics", method: .get) { String(buffer: $0.body) }
            for (reason, count) in [("split_view", 1), ("inconsistent", 1), ("stale_old_size", 1), ("malformed", 1), ("bad_signature", 1)] {
                #expect(exposition.contains(#"ledger_witness_refusals_total{reason="\#(reason)"} \#(count)"#), "\(reason)\n\(exposition)")
            }
            #expect(exposition.contains("ledger_witness_cosignatures_total 2"))
            let refusals = recorder.recorded.filter { $0.contains("witness: refused a checkpoint") }
            #expect(refusals.count == 5)
            #expect(refusals.contains { $0.contains("split_view") && $0.contains("split view: size 340") })
        }
        // A restarted witness remembers what it cosigned (its own durable state).
        let restarted = try WitnessService(
            name: "witness.test/w1",
            key: Curve25519.Signing.PrivateKey(rawRepresentation: witnessSeed),
            trustedKeys: [logKey.verifier],
            stateFile: stateFile,
            logger: TestCluster.logger
        )
        #expect(await restarted.latest(origin: Self.origin)?.size == 340)
        if case .success = await restarted.addCheckpoint(body: forkBody) { Issue.record("the restarted witness cosigned a fork") }
    }

    @Test func aLedgerIsWitnessedUntilItsLogIsRewritten() async throws {
        let checkpointKey = CheckpointKey.generate()
        let directory = try Self.temporaryDirectory()
        let metrics = LedgerMetrics()
        let recorder = LogRecorder()
        // The log's verifier key, as the witness's operator configures it.
        let logVerifier = try TransparencyLog.verifierKey(origin: Self.origin, key: checkpointKey)
        let service = try Self.witness("witness.test/w2", trusting: logVerifier, in: directory, metrics: metrics, logger: recorder.logger)
        let witnessVerifier = try NoteVerifier(vkey: service.verifierKey)
        try await WitnessServer.application(service: service, metrics: metrics, logger: TestCluster.logger).test(.live) { witness in
            let port = try #require(witness.port)
            let environment = [
                "LEDGERD_LOG_ORIGIN": Self.origin, "LEDGERD_LOG_INTERVAL_MS": "50",
                "LEDGERD_LOG_WITNESSES": "http://127.0.0.1:\(port) \(service.verifierKey)",
            ]
            let db = try await TestDatabase.fresh()
            try await TestApp.withApp(database: db, environment: environment, checkpointKey: checkpointKey) { client, services in
                try await TransparencyLogTests.append(services, count: 300)
                // The builder signs the tree of 300 and the witness cosigns it; the served checkpoint carries both.
                let cosigned = try await Self.eventually {
                    let note = try SignedNote(parsing: try await TransparencyLogTests.text(client, "/log/checkpoint"))
                    let size = try LogCheckpoint(text: note.text).size
                    return (try? note.verified(by: [witnessVerifier])) != nil && size == 300 ? note : nil
                }
                let proof = try JSONDecoder().decode(
                    InclusionProofFile.self,
                    from: Data(try await TransparencyLogTests.text(client, "/log/proof/inclusion?position=123").utf8)
                )
                try proof.verify(
                    against: cosigned,
                    verifiers: [try NoteVerifier(vkey: logVerifier)],
                    witnessKeys: [witnessVerifier],
                    witnesses: 1
                )
                #expect(throws: NoteError.self) {
                    try proof.verify(
                        against: cosigned,
                        verifiers: [try NoteVerifier(vkey: logVerifier)],
                        witnessKeys: [witnessVerifier],
                        witnesses: 2
                    )
                }

                // A superuser rewrites event 290 after the checkpoint; the log grows; the witness refuses the rewrite.
                try await db.tamper("UPDATE ledger.events SET hash = sha256(hash) WHERE position = 290")
                try await TransparencyLogTests.append(services, count: 10, tag: "after")
                _ = try await Self.eventually { () -> Bool? in
                    recorder.recorded.contains { $0.contains("refused a checkpoint") && $0.contains("inconsistent") } ? true : nil
                }
                #expect(await service.latest(origin: Self.origin)?.size == 300)
                let served = try SignedNote(parsing: try await TransparencyLogTests.text(client, "/log/checkpoint"))
                #expect((try LogCheckpoint(text: served.text)).size == 310)
                #expect(throws: NoteError.self) { try served.verified(by: [witnessVerifier]) }
            }
        }
        #expect(metrics.exposition().contains(#"ledger_witness_refusals_total{reason="inconsistent"}"#))
    }

    /// A witness that cannot be reached delays no other and is asked again (with a backoff) though the log has not grown:
    /// the first configured witness is down, the second cosigns the checkpoint, and the first is tried again. (Before,
    /// the first one's error ended the pass before the second was asked, and nothing was asked again until the log grew.)
    @Test func aWitnessThatIsDownDelaysNoOtherAndIsAskedAgain() async throws {
        let checkpointKey = CheckpointKey.generate()
        let directory = try Self.temporaryDirectory()
        let logVerifier = try TransparencyLog.verifierKey(origin: Self.origin, key: checkpointKey)
        let down = try Self.witness("witness.test/down", trusting: logVerifier, in: directory)
        let up = try Self.witness("witness.test/up", trusting: logVerifier, in: directory)
        let recorder = LogRecorder()
        try await WitnessServer.application(service: up, metrics: LedgerMetrics(), logger: TestCluster.logger).test(.live) { served in
            let port = try #require(served.port)
            let environment = [
                "LEDGERD_LOG_ORIGIN": Self.origin, "LEDGERD_LOG_INTERVAL_MS": "50",
                "LEDGERD_LOG_WITNESSES": "http://127.0.0.1:\(TestPorts.free()) \(down.verifierKey),http://127.0.0.1:\(port) \(up.verifierKey)",
            ]
            try await TestApp.withApp(environment: environment, logger: recorder.logger, checkpointKey: checkpointKey) { client, services in
                try await TransparencyLogTests.append(services, count: 40)
                let upVerifier = try NoteVerifier(vkey: up.verifierKey)
                _ = try await Self.eventually {
                    let note = try SignedNote(parsing: try await TransparencyLogTests.text(client, "/log/checkpoint"))
                    let size = try LogCheckpoint(text: note.text).size
                    return (try? note.verified(by: [upVerifier])) != nil && size == 40 ? true : nil
                }
                // The one that is down is asked again without the log growing: two attempts, a second apart.
                _ = try await Self.eventually { () -> Bool? in
                    recorder.recorded.filter { $0.contains("witness unreachable") && $0.contains("witness.test/down") }.count >= 2 ? true : nil
                }
            }
        }
    }

    /// A witness named `name` that trusts the log key `logVerifier`, its state in `directory`.
    static func witness(
        _ name: String,
        trusting logVerifier: String,
        in directory: URL,
        metrics: LedgerMetrics = LedgerMetrics(),
        logger: Logger = TestCluster.logger
    ) throws -> WitnessService {
        try WitnessService(
            name: name,
            key: Curve25519.Signing.PrivateKey(),
            trustedKeys: [try NoteVerifier(vkey: logVerifier)],
            stateFile: directory.appendingPathComponent("\(name.replacingOccurrences(of: "/", with: "-")).json"),
            metrics: metrics.factory,
            logger: logger
        )
    }

    /// A witness that takes a checkpoint and never answers (a host that accepts the connection and hangs): it counts
    /// the calls it was given.
    final class SilentWitness: WitnessSubmitter {
        let name = "witness.test/silent"
        let calls = Atomic<Int>(0)

        func addCheckpoint(_ request: AddCheckpointRequest) async throws -> WitnessAnswer {
            calls.add(1, ordering: .relaxed)
            try await Task.sleep(for: .seconds(3_600))
            throw CancellationError()
        }
    }

    /// A witness that never answers holds up neither the signing nor another witness: while the silent one still has
    /// the first checkpoint, the log signs the next and the other witness cosigns it. (Before, every pass waited for
    /// all the witnesses it asked: the first pass never ended, and nothing was signed or cosigned again — with the
    /// HTTP witness's 10 s deadline, every pass lasted 10 s while one was unreachable, which a loaded CI run then
    /// took for a witness that was never asked again.)
    @Test func aWitnessThatNeverAnswersHoldsUpNeitherTheSigningNorAnotherWitness() async throws {
        let checkpointKey = CheckpointKey.generate()
        let directory = try Self.temporaryDirectory()
        let logVerifier = try TransparencyLog.verifierKey(origin: Self.origin, key: checkpointKey)
        let up = try Self.witness("witness.test/up", trusting: logVerifier, in: directory)
        try await WitnessServer.application(service: up, metrics: LedgerMetrics(), logger: TestCluster.logger).test(.live) { served in
            let port = try #require(served.port)
            // The daemon's own builder passes once at start, then sleeps: the builder under test is the one below.
            let environment = ["LEDGERD_LOG_ORIGIN": Self.origin, "LEDGERD_LOG_INTERVAL_MS": "3600000"]
            try await TestApp.withApp(environment: environment, checkpointKey: checkpointKey) { client, services in
                let log = try #require(services.transparency)
                let silent = SilentWitness()
                let builder = TransparencyLogBuilder(
                    log: log,
                    witnesses: [silent, try HTTPWitness(url: "http://127.0.0.1:\(port)", verifierKey: up.verifierKey)],
                    interval: .milliseconds(50),
                    logger: TestCluster.logger
                )
                let upVerifier = try NoteVerifier(vkey: up.verifierKey)
                func cosignedByUp(size: UInt64) async throws -> Bool? {
                    let note = try SignedNote(parsing: try await TransparencyLogTests.text(client, "/log/checkpoint"))
                    let signedSize = try LogCheckpoint(text: note.text).size
                    return (try? note.verified(by: [upVerifier])) != nil && signedSize == size ? true : nil
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await builder.run() }
                    defer { group.cancelAll() }
                    try await TransparencyLogTests.append(services, count: 40)
                    _ = try await Self.eventually { try await cosignedByUp(size: 40) }
                    try await TransparencyLogTests.append(services, count: 10, tag: "more")
                    _ = try await Self.eventually { try await cosignedByUp(size: 50) }
                    #expect(silent.calls.load(ordering: .relaxed) == 1, "the silent witness was asked again while it still had a checkpoint")
                }
            }
        }
    }

    /// Polls `body` until it answers (30 s at most); past that, a failure at the caller's line that says so (not a bare
    /// `CancellationError`).
    static func eventually<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            if let value = try await body() { return value }
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(Bool(false), "nothing answered within 30 s", sourceLocation: sourceLocation)
        throw CancellationError()
    }
}
