import ArgumentParser
import Foundation
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import Logging

/// `ledgerd audit prove`: an inclusion or consistency proof of the transparency log, as JSON (the same file as
/// `GET /log/proof/…`), read from the database.
struct Prove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an inclusion proof (--position N [--size S]) or a consistency proof (--from S1 --to S2) of the Merkle tree.",
        discussion: "Check it offline with `ledgerd audit verify-proof`. An inclusion proof of the current size carries its signed checkpoint."
    )
    @OptionGroup var common: CommonOptions
    @Option(help: "The event's position (its leaf's index + 1).") var position: Int64?
    @Option(help: "The tree size to prove it in (default: the current one).") var size: UInt64?
    @Option(help: "The older tree size.") var from: UInt64?
    @Option(help: "The newer tree size.") var to: UInt64?
    @Option(help: "The private key file that signs checkpoints (default: LEDGERD_CHECKPOINT_KEY).") var key: String?

    func validate() throws {
        guard (position != nil) != (from != nil || to != nil) else { throw ValidationError("give either --position, or --from and --to") }
        if position == nil, from == nil || to == nil { throw ValidationError("a consistency proof takes --from and --to") }
    }

    func run() async throws {
        let configuration = try common.configuration()
        let logger = makeLogger(configuration)
        let signingKey = try (key ?? configuration.checkpointKeyPath).map(CheckpointKey.init(contentsOf:))
        let (position, size, from, to, origin) = (position, size, from, to, configuration.logOrigin)
        let json = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client -> Data in
            let log = try TransparencyLog(
                client: client,
                origin: origin,
                key: signingKey,
                watcher: HeadWatcher(client: client, pollInterval: .seconds(1), logger: logger),
                logger: logger
            )
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            do {
                if let position {
                    let checkpoint = signingKey == nil ? nil : try await log.checkpoint()
                    let proof = try await log.inclusionProof(position: position, size: size)
                    let signed = checkpoint.flatMap { (try? LogCheckpoint(text: $0.text))?.size == proof.size ? $0.serialized : nil }
                    return try encoder.encode(
                        InclusionProofFile(
                            position: proof.position,
                            treeSize: proof.size,
                            leafData: proof.leafData,
                            proof: proof.proof,
                            rootHash: proof.root,
                            checkpoint: signed
                        )
                    )
                }
                let proof = try await log.consistencyProof(from: from ?? 0, to: to ?? 0)
                return try encoder.encode(
                    ConsistencyProofFile(from: proof.from, to: proof.to, proof: proof.proof, fromRoot: proof.fromRoot, toRoot: proof.toRoot)
                )
            } catch let error as ServiceError {
                throw ValidationError(error.message)
            }
        }
        print(String(decoding: json, as: UTF8.self))
    }
}

/// `ledgerd audit verify-proof`: checks a proof file offline, with only the checkpoint(s) and the verifier key.
struct VerifyProof: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-proof",
        abstract: "Check an inclusion or consistency proof (JSON) against signed checkpoints and the log's verifier key, offline.",
        discussion: """
            Inclusion: --proof FILE [--checkpoint FILE] (default: the checkpoint inside the proof). Consistency: --proof FILE \
            --old-checkpoint FILE --checkpoint FILE. The key is the log's verifier key text (<origin>+<key ID>+<base64>) or a file \
            holding it (GET /log/key). Exit status 0 when the proof holds, 1 (with the reason) when it does not.
            """
    )
    @Option(help: "The proof file (from GET /log/proof/… or ledgerd audit prove).") var proof: String
    @Option(help: "The signed checkpoint (the newer one for a consistency proof).") var checkpoint: String?
    @Option(help: "The older signed checkpoint (consistency proofs).") var oldCheckpoint: String?
    @Option(help: "The log's verifier key, or a file holding it.") var key: String
    @Option(help: "A witness's verifier key (cosignature/v1), or a file holding it; repeatable.") var witnessKey: [String] = []
    @Option(help: "How many distinct witness cosignatures each checkpoint must carry.") var witnesses: Int = 0

    func run() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: proof))
        do {
            let verifier = try NoteVerifier(vkey: Self.keyText(key))
            let witnessKeys = try witnessKey.map { try NoteVerifier(vkey: Self.keyText($0)) }
            if let inclusion = try? JSONDecoder().decode(InclusionProofFile.self, from: data), inclusion.format == InclusionProofFile.format {
                guard let text = try checkpoint.map(Self.read) ?? inclusion.checkpoint else {
                    throw NoteError("no checkpoint: pass --checkpoint FILE (the proof carries none)")
                }
                try inclusion.verify(against: SignedNote(parsing: text), verifiers: [verifier], witnessKeys: witnessKeys, witnesses: witnesses)
                print("ok: the event at position \(inclusion.position) is in the signed tree of size \(inclusion.treeSize)")
                return
            }
            let consistency = try JSONDecoder().decode(ConsistencyProofFile.self, from: data)
            guard let oldCheckpoint, let checkpoint else { throw NoteError("a consistency proof needs --old-checkpoint and --checkpoint") }
            try consistency.verify(
                older: SignedNote(parsing: Self.read(oldCheckpoint)),
                newer: SignedNote(parsing: Self.read(checkpoint)),
                verifiers: [verifier],
                witnessKeys: witnessKeys,
                witnesses: witnesses
            )
            print("ok: the signed tree of size \(consistency.to) extends the signed tree of size \(consistency.from)")
        } catch let error as NoteError {
            FileHandle.standardError.write(Data("proof does not verify: \(error.reason)\n".utf8))
            throw ExitCode(1)
        }
    }

    static func read(_ path: String) throws -> String {
        guard let text = String(data: try Data(contentsOf: URL(fileURLWithPath: path)), encoding: .utf8) else {
            throw NoteError("\(path) is not UTF-8 text")
        }
        return text
    }

    /// A verifier key given inline, or the first line of the file it names.
    static func keyText(_ argument: String) throws -> String {
        if argument.contains("+") && !FileManager.default.fileExists(atPath: argument) { return argument }
        return try read(argument).split(separator: "\n").first.map(String.init) ?? ""
    }
}

/// `ledgerd witness serve`: an independent C2SP tlog-witness.
struct WitnessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "witness",
        abstract: "A transparency-log witness (c2sp.org/tlog-witness): cosigns checkpoints consistent with what it saw before.",
        subcommands: [Serve.self]
    )

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve POST /add-checkpoint, GET /key and GET /metrics.",
            discussion: """
                The key is an Ed25519 private key file (ledgerd audit keygen --out FILE) of mode 0600; the witness's own state \
                (the last checkpoint it cosigned per log) is a small JSON file, written atomically before each answer. It needs \
                no database.
                """
        )
        @Option(help: "The witness's key name, e.g. witness.example/w1.") var name: String
        @Option(help: "The witness's Ed25519 private key file (mode 0600).") var key: String
        @Option(help: "A log's verifier key to trust (<origin>+<key ID>+<base64>), or a file holding it; repeatable.") var logKey: [String]
        @Option(help: "The state file.") var state: String
        @Option(help: "Bind address.") var host: String = "127.0.0.1"
        @Option(help: "Port; 0 = any free one.") var port: Int = 12347
        @Flag(help: "Print the port once serving.") var announce = false
        @Option(help: "Log level.") var logLevel: String = "info"

        func run() async throws {
            var logger = Logger(label: "ledgerd-witness")
            logger.logLevel = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
            let attributes = try FileManager.default.attributesOfItem(atPath: key)
            if let mode = attributes[.posixPermissions] as? Int, mode & 0o077 != 0 {
                throw ValidationError("\(key) is readable by others (mode \(String(mode, radix: 8))): make it 0600")
            }
            try await WitnessServer.run(
                name: name,
                keyPath: key,
                trustedKeys: try logKey.map(VerifyProof.keyText),
                stateFile: state,
                host: host,
                port: port,
                announce: announce,
                logger: logger
            )
        }
    }
}
