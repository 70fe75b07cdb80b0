import Crypto
import Foundation

/// A public key that verifies note signatures, in the signed-note verifier-key form
/// `<name>+<8 hex digits: key ID>+<base64(type byte ‖ public key)>`.
public struct NoteVerifier: Sendable, Hashable {
    /// The signature types this ledger speaks (c2sp.org/signed-note, "Signature types").
    public enum Kind: UInt8, Sendable {
        /// Ed25519 over the note text: the log's checkpoint signature.
        case ed25519 = 0x01
        /// A timestamped Ed25519 witness cosignature (c2sp.org/tlog-cosignature, `cosignature/v1`).
        case cosignatureV1 = 0x04
    }

    public let name: String
    public let kind: Kind
    /// The 32-byte Ed25519 public key.
    public let publicKey: [UInt8]

    public init(name: String, kind: Kind, publicKey: [UInt8]) throws(NoteError) {
        guard SignedNote.isValidKeyName(name) else { throw NoteError("a key name is non-empty, without spaces or \"+\"") }
        guard publicKey.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey)) != nil else {
            throw NoteError("an Ed25519 public key is 32 bytes")
        }
        self.name = name
        self.kind = kind
        self.publicKey = publicKey
    }

    /// `SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]`, big-endian.
    public var keyID: UInt32 { Self.keyID(name: name, kind: kind, publicKey: publicKey) }

    static func keyID(name: String, kind: Kind, publicKey: [UInt8]) -> UInt32 {
        var hasher = SHA256()
        hasher.update(data: Array(name.utf8) + [0x0A, kind.rawValue] + publicKey)
        return hasher.finalize().prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The verifier key as text.
    public var vkey: String {
        "\(name)+\(String(format: "%08x", keyID))+\(Data([kind.rawValue] + publicKey).base64EncodedString())"
    }

    /// Parses a verifier key, checking that its key ID is the one its name and key make.
    public init(vkey: String) throws(NoteError) {
        let parts = vkey.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "+", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].count == 8, let id = UInt32(parts[1], radix: 16),
            let material = Data(base64Encoded: String(parts[2])), material.count == 33,
            let kind = Kind(rawValue: material[material.startIndex])
        else { throw NoteError("a verifier key is <name>+<8 hex digits>+<base64 of the type byte and an Ed25519 key>") }
        try self.init(name: String(parts[0]), kind: kind, publicKey: Array(material.dropFirst()))
        guard keyID == id else { throw NoteError("the verifier key's ID does not match its name and key") }
    }

    /// Whether `signature` (already matched by name and key ID) is this key's over `text`.
    public func isValid(_ signature: SignedNote.Signature, over text: String) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        switch kind {
        case .ed25519:
            return signature.bytes.count == 64 && key.isValidSignature(signature.bytes, for: Array(text.utf8))
        case .cosignatureV1:
            guard let timestamp = Cosignature.timestamp(of: signature) else { return false }
            return key.isValidSignature(
                Array(signature.bytes[8...]),
                for: Cosignature.message(checkpointText: text, timestamp: timestamp)
            )
        }
    }
}

/// An Ed25519 key that signs notes under a name: the log's checkpoint key (``NoteVerifier/Kind/ed25519``) or a
/// witness's cosigning key (``NoteVerifier/Kind/cosignatureV1``). Its private half never leaves this value.
public struct NoteSigner: Sendable {
    public let verifier: NoteVerifier
    /// The 32-byte seed (swift-crypto's key types are not Sendable).
    private let seed: [UInt8]
    private var key: Curve25519.Signing.PrivateKey { try! Curve25519.Signing.PrivateKey(rawRepresentation: seed) }

    public init(name: String, kind: NoteVerifier.Kind, key: Curve25519.Signing.PrivateKey) throws(NoteError) {
        seed = Array(key.rawRepresentation)
        verifier = try NoteVerifier(name: name, kind: kind, publicKey: Array(key.publicKey.rawRepresentation))
    }

    /// Signs `text` (a note text, ending in a newline) with an Ed25519 note signature.
    public func sign(_ text: String) throws -> SignedNote.Signature {
        precondition(verifier.kind == .ed25519, "a cosigning key signs with cosign(_:timestamp:)")
        let signature = try key.signature(for: Array(text.utf8))
        return SignedNote.Signature(name: verifier.name, keyID: verifier.keyID, bytes: Array(signature))
    }

    /// Cosigns a checkpoint's text at `timestamp` (POSIX seconds): c2sp.org/tlog-cosignature v1.
    public func cosign(_ checkpointText: String, timestamp: UInt64) throws -> SignedNote.Signature {
        precondition(verifier.kind == .cosignatureV1, "a log key signs with sign(_:)")
        precondition(timestamp < 1 << 63)
        let signature = try key.signature(for: Cosignature.message(checkpointText: checkpointText, timestamp: timestamp))
        let stamp = withUnsafeBytes(of: timestamp.bigEndian) { Array($0) }
        return SignedNote.Signature(name: verifier.name, keyID: verifier.keyID, bytes: stamp + Array(signature))
    }
}

/// c2sp.org/tlog-cosignature, Ed25519 (`cosignature/v1`): the signed message is
/// `cosignature/v1\ntime <decimal seconds>\n` followed by the checkpoint's note text; the signature is the
/// 8-byte big-endian timestamp followed by the 64-byte Ed25519 signature.
public enum Cosignature {
    public static func message(checkpointText: String, timestamp: UInt64) -> [UInt8] {
        Array("cosignature/v1\ntime \(timestamp)\n\(checkpointText)".utf8)
    }

    /// The timestamp a cosignature carries, nil when it is not one (72 bytes, timestamp below 2^63).
    public static func timestamp(of signature: SignedNote.Signature) -> UInt64? {
        guard signature.bytes.count == 72 else { return nil }
        let timestamp = signature.bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        return timestamp < 1 << 63 ? timestamp : nil
    }
}

/// A C2SP `tlog-checkpoint` (c2sp.org/tlog-checkpoint) note text: the origin line, the tree size in decimal and
/// the base64 root hash, each ending in a newline, then optional extension lines.
public struct LogCheckpoint: Sendable, Hashable {
    public var origin: String
    public var size: UInt64
    public var rootHash: [UInt8]
    public var extensions: [String]

    public init(origin: String, size: UInt64, rootHash: [UInt8], extensions: [String] = []) throws(NoteError) {
        guard !origin.isEmpty, !origin.contains("\n") else { throw NoteError("the origin is one non-empty line") }
        guard rootHash.count == Merkle.hashSize else { throw NoteError("the root hash is \(Merkle.hashSize) bytes") }
        guard extensions.allSatisfy({ !$0.isEmpty && !$0.contains("\n") }) else { throw NoteError("extension lines are non-empty") }
        self.origin = origin
        self.size = size
        self.rootHash = rootHash
        self.extensions = extensions
    }

    /// The note text.
    public var text: String {
        ([origin, String(size), Data(rootHash).base64EncodedString()] + extensions).map { $0 + "\n" }.joined()
    }

    /// Parses a checkpoint's note text (signatures already split off by ``SignedNote``).
    public init(text: String) throws(NoteError) {
        guard text.hasSuffix("\n") else { throw NoteError("a checkpoint's text ends with a newline") }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3 else { throw NoteError("a checkpoint has an origin, a size and a root hash line") }
        let sizeLine = lines[1]
        guard let size = UInt64(sizeLine), String(size) == sizeLine else {
            throw NoteError("the tree size is a decimal number without leading zeroes")
        }
        guard let root = Data(base64Encoded: String(lines[2])), root.count == Merkle.hashSize else {
            throw NoteError("the root hash is base64 of \(Merkle.hashSize) bytes")
        }
        try self.init(origin: String(lines[0]), size: size, rootHash: Array(root), extensions: lines.dropFirst(3).map(String.init))
    }
}
