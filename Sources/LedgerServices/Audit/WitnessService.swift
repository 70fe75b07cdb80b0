import Crypto
import Foundation
import LedgerCore
import Logging
import Metrics

/// An independent witness (`ledgerd witness serve`, c2sp.org/tlog-witness): its own Ed25519 key, the log keys it
/// trusts, and a small state file — for each origin, the checkpoint it last cosigned — with no access to any
/// ledger's database. It cosigns (c2sp.org/tlog-cosignature v1) only checkpoints consistent with that state and
/// refuses the others with the protocol's status and a reason, logged and counted in
/// `ledger_witness_refusals_total{reason}` (`ledger_witness_cosignatures_total` counts the cosigned ones).
///
/// Requests are decided one at a time (an actor), and the new state is written to disk (temporary file, fsync,
/// rename, fsync of the directory) before the cosignature is returned, so the check and the update are atomic
/// and survive a crash, as the protocol requires.
public actor WitnessService {
    let signer: NoteSigner
    let trustedKeys: [NoteVerifier]
    let stateFile: URL
    let clock: @Sendable () -> Date
    let logger: Logger
    let metrics: any MetricsFactory
    private var state: [String: WitnessedCheckpoint]

    /// - Parameters:
    ///   - name: the witness's key name (e.g. `witness.example/w1`).
    ///   - key: its Ed25519 private key (secret: from a file of mode 0600, never logged).
    ///   - trustedKeys: verifier keys of the logs it witnesses (`<origin>+<key ID>+<key>`).
    ///   - stateFile: its durable state (JSON); created empty when absent.
    public init(
        name: String,
        key: Curve25519.Signing.PrivateKey,
        trustedKeys: [NoteVerifier],
        stateFile: URL,
        clock: @escaping @Sendable () -> Date = { Date() },
        metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        logger: Logger
    ) throws {
        do {
            signer = try NoteSigner(name: name, kind: .cosignatureV1, key: key)
        } catch {
            throw ConfigurationError("witness name \(name): \(error.reason)")
        }
        self.trustedKeys = trustedKeys
        self.stateFile = stateFile
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        if let data = FileManager.default.contents(atPath: stateFile.path) {
            state = try JSONDecoder().decode([String: WitnessedCheckpoint].self, from: data)
        } else {
            state = [:]
        }
    }

    /// The witness's verifier key (type 0x04), for the logs and their auditors.
    public nonisolated var verifierKey: String { signer.verifier.vkey }

    /// What it last cosigned for `origin`.
    public func latest(origin: String) -> WitnessedCheckpoint? { state[origin] }

    /// Decides an add-checkpoint body: the cosignature line(s) on success, else the refusal.
    public func addCheckpoint(body: String) -> Result<String, WitnessRefusal> {
        let request: AddCheckpointRequest
        do {
            request = try AddCheckpointRequest(body: body)
        } catch {
            return refuse(WitnessRefusal(.malformed, "not an add-checkpoint request: \(error)"), origin: nil)
        }
        let origin = request.checkpoint.origin
        switch WitnessDecider.decide(request, trustedKeys: trustedKeys, latest: state[origin]) {
        case .failure(let refusal):
            return refuse(refusal, origin: origin)
        case .success(let next):
            do {
                var updated = state
                updated[origin] = next
                try persist(updated)
                state = updated
                let timestamp = UInt64(max(0, clock().timeIntervalSince1970))
                let line = try signer.cosign(request.note.text, timestamp: timestamp).line
                Counter(label: "ledger_witness_cosignatures_total", factory: metrics).increment()
                logger.info("witness: cosigned", metadata: ["origin": "\(origin)", "size": "\(next.size)"])
                return .success(line)
            } catch {
                logger.error("witness: cannot persist its state; not cosigning", metadata: ["error": "\(String(reflecting: error))"])
                return .failure(WitnessRefusal(.malformed, "the witness cannot record the checkpoint now"))
            }
        }
    }

    private func refuse(_ refusal: WitnessRefusal, origin: String?) -> Result<String, WitnessRefusal> {
        Counter(label: "ledger_witness_refusals_total", dimensions: [("reason", refusal.code.rawValue)], factory: metrics).increment()
        logger.warning(
            "witness: refused a checkpoint",
            metadata: ["origin": "\(origin ?? "-")", "reason": "\(refusal.code.rawValue)", "detail": "\(refusal.reason)"]
        )
        return .failure(refusal)
    }

    /// Writes the state durably: a temporary file, fsync, rename over the old one, fsync of the directory.
    private func persist(_ state: [String: WitnessedCheckpoint]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(state)
        let directory = stateFile.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(stateFile.lastPathComponent).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == data.count, fsync(fd) == 0 else {
            close(fd)
            throw CocoaError(.fileWriteUnknown)
        }
        close(fd)
        guard rename(temporary.path, stateFile.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let dfd = open(directory.path, O_RDONLY)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }
}
