import LedgerMacros

/// A signed statement "the ledger's event at `position` has chain hash `hash`": the anchor that
/// lets an auditor prove later that the log still contains that prefix unaltered, even against a
/// database superuser (who can rewrite rows, recompute hashes and move the head, but cannot sign).
///
/// The daemon signs ``signedMessage`` with Ed25519, appends the checkpoint to the log as a
/// ``CheckpointSigned`` event (stream `checkpoints`) and writes it to a file; the auditor keeps the
/// file and the public key outside the operators' reach. The message is plain text, one
/// `name=value` line each, so it can be re-created by hand:
///
///     ledgerd-checkpoint-v1
///     position=1234
///     hash=<64 hex digits: the chain hash of the event at position>
///     recorded_at=<RFC 3339 µs UTC: that event's recorded_at>
///     signed_at=<RFC 3339 µs UTC>
///     public_key=<64 hex digits: the Ed25519 public key>
///
/// (each line ends with a line feed, the last one included).
@MemberwiseInit
public struct Checkpoint: Codable, Sendable, Hashable {
    public static let format = "ledgerd-checkpoint-v1"

    public var position: Int64
    /// Hex of the 32-byte chain hash of the event at `position`.
    public var hash: String
    public var recordedAt: String
    public var signedAt: String
    /// Hex of the 32-byte Ed25519 public key that signed.
    public var publicKey: String
    /// Hex of the 64-byte Ed25519 signature over ``signedMessage``.
    public var signature: String

    /// The bytes the signature covers (everything but the signature).
    public var signedMessage: [UInt8] {
        Self.message(position: position, hash: hash, recordedAt: recordedAt, signedAt: signedAt, publicKey: publicKey)
    }

    public static func message(position: Int64, hash: String, recordedAt: String, signedAt: String, publicKey: String) -> [UInt8] {
        Array("\(format)\nposition=\(position)\nhash=\(hash)\nrecorded_at=\(recordedAt)\nsigned_at=\(signedAt)\npublic_key=\(publicKey)\n".utf8)
    }

    enum CodingKeys: String, CodingKey {
        case position, hash
        case recordedAt = "recorded_at"
        case signedAt = "signed_at"
        case publicKey = "public_key"
        case signature
    }
}

/// The checkpoint file: the checkpoint plus its format name, so a file is recognised as one.
public struct CheckpointFile: Codable, Sendable, Hashable {
    public var format: String
    public var checkpoint: Checkpoint

    public init(_ checkpoint: Checkpoint) {
        self.format = Checkpoint.format
        self.checkpoint = checkpoint
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(String.self, forKey: .format)
        guard format == Checkpoint.format else {
            throw DecodingError.dataCorruptedError(forKey: .format, in: container, debugDescription: "not a \(Checkpoint.format) file")
        }
        checkpoint = try Checkpoint(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format, forKey: .format)
        try checkpoint.encode(to: encoder)
    }

    enum CodingKeys: String, CodingKey { case format }
}

/// A checkpoint recorded in the log itself (stream `checkpoints`), so that the feed and the
/// history show when the ledger was anchored. The copy that proves anything is the auditor's
/// file: a superuser could remove this event together with everything after it.
public struct CheckpointSigned: LedgerEventPayload {
    public static let eventType = "CheckpointSigned"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.checkpointSigned
    public static let stream = StreamID("checkpoints")!

    public var checkpoint: Checkpoint

    public init(_ checkpoint: Checkpoint) { self.checkpoint = checkpoint }

    public init(from decoder: any Decoder) throws { checkpoint = try Checkpoint(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try checkpoint.encode(to: encoder) }
}
