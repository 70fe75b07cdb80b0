import Crypto
import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import Logging
import ServiceLifecycle

/// The Ed25519 key that signs checkpoints, read from and written to files.
///
/// A private key file may be PEM (`-----BEGIN PRIVATE KEY-----`, PKCS #8, what
/// `openssl genpkey -algorithm ed25519 -out checkpoint.pem` writes), the 32-byte seed itself, or the
/// seed as 64 hex digits or base64. A public key file: PEM (`-----BEGIN PUBLIC KEY-----`, what
/// `openssl pkey -in checkpoint.pem -pubout` writes), 32 raw bytes, hex or base64 (or a private key
/// file, whose public half is taken). `ledgerd audit keygen --out FILE` writes a pair.
public struct CheckpointKey: Sendable {
    /// The 32-byte seed (swift-crypto's key types are not Sendable).
    private let seed: [UInt8]
    var key: Curve25519.Signing.PrivateKey { try! Curve25519.Signing.PrivateKey(rawRepresentation: seed) }

    /// Reads a private key file (see ``CheckpointKeys``).
    public init(contentsOf path: String) throws { self.init(try CheckpointKeys.privateKey(contentsOf: path)) }

    init(_ key: Curve25519.Signing.PrivateKey) { seed = Array(key.rawRepresentation) }

    /// A new random key.
    public static func generate() -> CheckpointKey { CheckpointKey(Curve25519.Signing.PrivateKey()) }

    /// PEM, PKCS #8 (what `openssl genpkey -algorithm ed25519` writes). Secret.
    public var privateKeyPEM: String { CheckpointKeys.pem(key) }
    /// PEM, SubjectPublicKeyInfo (what `openssl pkey -pubout` writes): the auditor's copy.
    public var publicKeyPEM: String { CheckpointKeys.pem(key.publicKey) }
    public var publicKeyHex: String { Hex.encode(key.publicKey.rawRepresentation) }
}

/// The public half, as the auditor holds it.
public struct CheckpointPublicKey: Sendable {
    private let raw: [UInt8]
    var key: Curve25519.Signing.PublicKey { try! Curve25519.Signing.PublicKey(rawRepresentation: raw) }

    public init(contentsOf path: String) throws { raw = Array(try CheckpointKeys.publicKey(contentsOf: path).rawRepresentation) }

    public var hex: String { Hex.encode(key.rawRepresentation) }

    /// Whether `checkpoint` carries a valid signature by this key (not merely by the key written
    /// in the checkpoint, which anyone could replace along with the signature).
    public func isValid(_ checkpoint: Checkpoint) -> Bool { CheckpointKeys.isValid(checkpoint, signedBy: key) }
}

/// Reading and writing Ed25519 key files.
public enum CheckpointKeys {
    /// DER of a PKCS #8 Ed25519 private key before its 32-byte seed (RFC 8410).
    static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
    /// DER of an Ed25519 SubjectPublicKeyInfo before its 32-byte key (RFC 8410).
    static let spkiPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    public static func privateKey(contentsOf path: String) throws -> Curve25519.Signing.PrivateKey {
        let data: Data
        do { data = try SecretFile.read(path) } catch { throw ConfigurationError("the checkpoint key file: \(error)") }
        if let der = pemBody(data, label: "PRIVATE KEY") {
            guard der.count == pkcs8Prefix.count + 32, Array(der.prefix(pkcs8Prefix.count)) == pkcs8Prefix else {
                throw ConfigurationError("\(path): the PEM private key is not an Ed25519 key")
            }
            return try Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))
        }
        guard let seed = rawKeyBytes(data) else {
            throw ConfigurationError("\(path): not an Ed25519 private key (PEM PKCS #8, or 32 bytes raw, hex or base64)")
        }
        return try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    public static func publicKey(contentsOf path: String) throws -> Curve25519.Signing.PublicKey {
        let data = try read(path, what: "public key")
        if let der = pemBody(data, label: "PUBLIC KEY") {
            guard der.count == spkiPrefix.count + 32, Array(der.prefix(spkiPrefix.count)) == spkiPrefix else {
                throw ConfigurationError("\(path): the PEM public key is not an Ed25519 key")
            }
            return try Curve25519.Signing.PublicKey(rawRepresentation: der.suffix(32))
        }
        if pemBody(data, label: "PRIVATE KEY") != nil { return try privateKey(contentsOf: path).publicKey }
        guard let raw = rawKeyBytes(data) else {
            throw ConfigurationError("\(path): not an Ed25519 public key (PEM, or 32 bytes raw, hex or base64)")
        }
        return try Curve25519.Signing.PublicKey(rawRepresentation: raw)
    }

    public static func pem(_ key: Curve25519.Signing.PrivateKey) -> String {
        pem(label: "PRIVATE KEY", der: pkcs8Prefix + Array(key.rawRepresentation))
    }

    public static func pem(_ key: Curve25519.Signing.PublicKey) -> String {
        pem(label: "PUBLIC KEY", der: spkiPrefix + Array(key.rawRepresentation))
    }

    static func pem(label: String, der: [UInt8]) -> String {
        "-----BEGIN \(label)-----\n\(Data(der).base64EncodedString(options: [.lineLength64Characters]))\n-----END \(label)-----\n"
    }

    static func read(_ path: String, what: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("cannot read the \(what) file \(path)")
        }
        return data
    }

    /// The DER inside `-----BEGIN <label>-----` … `-----END <label>-----`, if the file is that PEM.
    static func pemBody(_ data: Data, label: String) -> [UInt8]? {
        guard let text = String(data: data, encoding: .utf8),
            let begin = text.range(of: "-----BEGIN \(label)-----"),
            let end = text.range(of: "-----END \(label)-----", range: begin.upperBound..<text.endIndex)
        else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map(Array.init)
    }

    /// 32 raw bytes, or 32 bytes written as hex or base64 (surrounding whitespace ignored).
    static func rawKeyBytes(_ data: Data) -> [UInt8]? {
        if data.count == 32 { return Array(data) }
        guard let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines) else { return nil }
        if let bytes = Hex.decode(text), bytes.count == 32 { return bytes }
        if let bytes = Data(base64Encoded: text), bytes.count == 32 { return Array(bytes) }
        return nil
    }

    /// Whether `checkpoint` carries a valid signature by `key` (the auditor's copy of the public
    /// key, not the one written in the checkpoint).
    public static func isValid(_ checkpoint: Checkpoint, signedBy key: Curve25519.Signing.PublicKey) -> Bool {
        guard checkpoint.publicKey == Hex.encode(key.rawRepresentation), let signature = Hex.decode(checkpoint.signature) else {
            return false
        }
        return key.isValidSignature(signature, for: checkpoint.signedMessage)
    }
}

/// Signs checkpoints of the ledger's durable head (``ServableHead``: never a position a failover could take back): Ed25519 over (position, hash, recorded time, signing
/// time, public key) — see ``Checkpoint`` — then appends the checkpoint to the log (stream
/// `checkpoints`, event `CheckpointSigned`) and writes it to `<data dir>/checkpoints/`.
public struct CheckpointService: Sendable {
    let key: CheckpointKey
    let writer: LedgerWriter
    /// The event store (on PostgreSQL, LedgerPostgres' `EventStore`).
    let store: any StreamReads & HeadReads & EventAtPosition
    /// The durable head (on PostgreSQL, `StoreServableHead`: the head watcher's on the event store).
    let head: any ServableHead
    let directory: URL
    let clock: @Sendable () -> Date
    let logger: Logger

    package init(
        key: CheckpointKey,
        writer: LedgerWriter,
        store: any StreamReads & HeadReads & EventAtPosition,
        head: any ServableHead,
        directory: URL,
        clock: @escaping @Sendable () -> Date,
        logger: Logger
    ) {
        self.key = key
        self.writer = writer
        self.store = store
        self.head = head
        self.directory = directory
        self.clock = clock
        self.logger = logger
    }

    /// Signs the current head; returns the checkpoint and the file it was written to.
    public func sign(actor: String) async throws -> (checkpoint: Checkpoint, file: URL) {
        let position = try await head.servable()
        guard position > 0, let event = try await store.event(at: position) else {
            throw ServiceError.conflict("empty_ledger", "the ledger has no events to sign")
        }
        let checkpoint = try Self.checkpoint(
            position: position,
            hash: event.hash,
            recordedAtMicros: event.recordedAtMicros,
            signedAt: clock(),
            key: key
        )
        // The checkpoints only grow, and a signature needs none of the earlier ones: appended whatever came before.
        let sign = StreamCommand<Void>(
            stream: CheckpointSigned.stream,
            now: clock(),
            metadata: EventMetadata(correlationID: writer.ids.nextString(), actor: actor, command: "SignCheckpoint"),
            readsStream: false
        ) { _ in .append([CheckpointSigned(checkpoint)], ()) }
        _ = try await AggregateStore(writer: writer, store: store, cacheLimit: 1).run(sign)
        let file = try write(checkpoint)
        logger.info("checkpoint signed", metadata: ["position": "\(checkpoint.position)", "file": "\(file.path)"])
        return (checkpoint, file)
    }

    /// Signs the current head (see ``sign(actor:)``); returns the checkpoint.
    public func signCheckpoint(actor: String) async throws -> Checkpoint {
        try await sign(actor: actor).checkpoint
    }

    /// The signed checkpoint of the event at `position` (pure, for the service and the tests).
    public static func checkpoint(
        position: Int64,
        hash: [UInt8],
        recordedAtMicros: Int64,
        signedAt: Date,
        key: CheckpointKey
    ) throws -> Checkpoint {
        var checkpoint = Checkpoint(
            position: position,
            hash: Hex.encode(hash),
            recordedAt: RFC3339.format(recordedAtMicros),
            signedAt: RFC3339.format(signedAt.epochMicroseconds),
            publicKey: key.publicKeyHex,
            signature: ""
        )
        checkpoint.signature = Hex.encode(try key.key.signature(for: checkpoint.signedMessage))
        return checkpoint
    }

    /// The checkpoint file's text (``CheckpointFile``, keys sorted, pretty-printed, a final newline): what
    /// is written to `<data dir>/checkpoints/`, printed by `ledgerd audit checkpoint` and answered by
    /// `POST /audit/checkpoints`, byte for byte.
    public static func fileJSON(_ checkpoint: Checkpoint) throws -> String {
        try LedgerJSON.prettyString(CheckpointFile(checkpoint)) + "\n"
    }

    /// `checkpoint-<position, 12 digits>.json`, written atomically.
    func write(_ checkpoint: Checkpoint) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let digits = String(checkpoint.position)
        let name = "checkpoint-" + String(repeating: "0", count: max(0, 12 - digits.count)) + digits + ".json"
        let url = directory.appendingPathComponent(name)
        try Data(try Self.fileJSON(checkpoint).utf8).write(to: url, options: .atomic)
        return url
    }
}

/// Signs a checkpoint every day at the business-day close (`LEDGERD_CHECKPOINT_TIME` in
/// `LEDGERD_CHECKPOINT_TIME_ZONE`), unless nothing was appended since the last checkpoint. Every
/// daemon runs it; two signing the same head is harmless (two statements of one fact).
@MemberwiseInit
public struct CheckpointScheduler: Service {
    let service: CheckpointService
    let time: (hour: Int, minute: Int)
    let timeZone: TimeZone
    let logger: Logger
    var jobs: JobMetrics = JobMetrics()

    /// The first instant after `now` at hour:minute in `timeZone`.
    public static func next(after now: Date, hour: Int, minute: Int, timeZone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar.nextDate(
            after: now,
            matching: DateComponents(hour: hour, minute: minute, second: 0),
            matchingPolicy: .nextTime
        ) ?? now.addingTimeInterval(86_400)
    }

    public func run() async throws {
        let (service, time, timeZone) = (service, time, timeZone)
        let wait = PeriodicJob.Wait.beforeEachPass {
            let now = service.clock()
            let due = Self.next(after: now, hour: time.hour, minute: time.minute, timeZone: timeZone)
            return .milliseconds(Int64(max(0, due.timeIntervalSince(now)) * 1000))
        }
        await PeriodicJob("daily checkpoint", metric: .checkpoint, wait: wait, failureLevel: .error, jobs: jobs, logger: logger).run {
            let head = try await service.store.head().position
            if head > 0, try await service.store.event(at: head)?.type != CheckpointSigned.eventType {
                _ = try await service.sign(actor: "system:checkpoint")
            }
        }
    }
}
