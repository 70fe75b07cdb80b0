import Foundation
import LedgerCore
import LedgerServices
import LedgerTestSupport
import Testing

/// `ledgerd audit prove` and `ledgerd audit verify-proof` as an auditor runs them, the real binary against a real
/// daemon's ledger: an inclusion proof (with the checkpoint it carries) and a consistency proof between two signed
/// checkpoints verify offline with only the verifier key (exit 0); an altered proof, the checkpoints given the wrong
/// way round, and another log's key are refused with the reason (exit 1).
@Suite(.machine(.shared)) struct TransparencyCLITests {
    static let origin = "ledger.test/cli"

    @Test(.timeLimit(.minutes(3))) func anAuditorProvesAndChecksInclusionAndConsistencyOffline() async throws {
        let directory = URL(fileURLWithPath: "/tmp/ledgerd-prove-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = URL(fileURLWithPath: "\(directory.path).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let key = directory.appendingPathComponent("checkpoint.pem")
        let stranger = directory.appendingPathComponent("stranger.pem")
        for file in [key, stranger] {
            let keygen = try await DaemonProcess.run(["audit", "keygen", "--out", file.path])
            #expect(keygen.status == 0, "\(keygen.output)")
        }
        let environment: [String: String?] = ["LEDGERD_CHECKPOINT_KEY": key.path, "LEDGERD_LOG_ORIGIN": Self.origin]
        let dataDirectory = directory.appendingPathComponent("data")
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory, port: TestPorts.free(), logFile: log, environment: environment)
        defer { daemon.process.terminate() }
        try #require(daemon.health != nil, "\(daemon.output())")
        let cli = DaemonProcess.environment(environment.merging(["LEDGERD_LOG_LEVEL": "warning"]) { $1 })
        func ledgerd(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            try await DaemonProcess.run(arguments + ["--data-dir", dataDirectory.path], environment: cli)
        }
        /// `verify-proof` knows no ledger: only the files and the key it is given (no data directory, no database).
        func verify(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            try await DaemonProcess.run(["audit", "verify-proof"] + arguments, environment: cli)
        }
        func write(_ name: String, _ text: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let (keyStatus, verifierKey) = try await daemon.request("GET", "/log/key")
        #expect(keyStatus == 200 && verifierKey.hasPrefix(Self.origin + "+"), "\(verifierKey)")
        let keyFile = try write("log.vkey", verifierKey)

        // Inclusion: the proof file carries the checkpoint of its size; the key alone checks it.
        let proved = try await ledgerd(["audit", "prove", "--position", "3"])
        #expect(proved.status == 0, "\(proved.output)")
        let proof = try JSONDecoder().decode(InclusionProofFile.self, from: Data(proved.output.utf8))
        #expect(proof.position == 3 && proof.checkpoint != nil, "\(proved.output)")
        let proofFile = try write("inclusion.json", proved.output)
        let ok = try await verify(["--proof", proofFile, "--key", keyFile])
        #expect(ok.status == 0 && ok.output.contains("ok: the event at position 3 is in the signed tree"), "\(ok.output)")
        // One hash of the path changed: refused, with the reason.
        var altered = proof
        altered.proof[0] = String(repeating: "0", count: altered.proof[0].count)
        let alteredFile = try write("altered.json", String(decoding: try JSONEncoder().encode(altered), as: UTF8.self))
        let refused = try await verify(["--proof", alteredFile, "--key", keyFile])
        #expect(refused.status == 1 && refused.output.contains("proof does not verify"), "\(refused.output)")
        // Another log's key does not vouch for this checkpoint.
        let strangerVerifier = try TransparencyLog.verifierKey(origin: Self.origin, key: CheckpointKey(contentsOf: stranger.path))
        #expect(strangerVerifier != verifierKey.trimmingCharacters(in: .whitespacesAndNewlines))
        let wrongKey = try await verify(["--proof", proofFile, "--key", strangerVerifier])
        #expect(wrongKey.status == 1 && wrongKey.output.contains("proof does not verify"), "\(wrongKey.output)")

        // Consistency: the signed tree now, then after a payment, and the proof between them.
        let (olderStatus, older) = try await daemon.request("GET", "/log/checkpoint")
        #expect(olderStatus == 200)
        let oldSize = try LogCheckpoint(text: try SignedNote(parsing: older).text).size
        let (paid, _) = try await daemon.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self))
        #expect(paid == 200)
        let (_, newer) = try await daemon.request("GET", "/log/checkpoint")
        let newSize = try LogCheckpoint(text: try SignedNote(parsing: newer).text).size
        #expect(newSize > oldSize)
        let consistency = try await ledgerd(["audit", "prove", "--from", "\(oldSize)", "--to", "\(newSize)"])
        #expect(consistency.status == 0, "\(consistency.output)")
        let consistencyFile = try write("consistency.json", consistency.output)
        let (olderFile, newerFile) = (try write("older.txt", older), try write("newer.txt", newer))
        let extends = try await verify([
            "--proof", consistencyFile, "--old-checkpoint", olderFile, "--checkpoint", newerFile, "--key", keyFile,
        ])
        #expect(extends.status == 0 && extends.output.contains("extends the signed tree of size \(oldSize)"), "\(extends.output)")
        let backwards = try await verify([
            "--proof", consistencyFile, "--old-checkpoint", newerFile, "--checkpoint", olderFile, "--key", keyFile,
        ])
        #expect(backwards.status == 1 && backwards.output.contains("proof does not verify"), "\(backwards.output)")
        // A position outside the tree is the auditor's error, said in one line.
        let outside = try await ledgerd(["audit", "prove", "--position", "\(newSize + 1000)"])
        #expect(outside.status != 0 && outside.output.contains("position must be between 1 and the tree size"), "\(outside.output)")
        try await daemon.stop()
    }
}
