import Crypto
import Foundation
import LedgerCore

/// The `Ledger-Signature` header of a webhook delivery: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
/// with one `v1=` per valid secret (two during a rotation's grace period: the new secret's first). A
/// receiver recomputes the HMAC with its secret over the timestamp, a `.` and the raw body, compares it
/// in constant time with any `v1`, and refuses a timestamp too far from its clock (replays).
public enum WebhookSignature {
    public static let header = "Ledger-Signature"
    public static let positionHeader = "Ledger-Event-Position"

    /// The header's value for `body` signed at `timestamp` with each of `secrets`.
    public static func value(timestamp: Int64, body: [UInt8], secrets: [String]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + Hex.encode(signature(timestamp: timestamp, body: body, secret: $0)) }).joined(separator: ",")
    }

    /// HMAC-SHA256(secret, "<timestamp>.<body>").
    public static func signature(timestamp: Int64, body: [UInt8], secret: String) -> [UInt8] {
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: body)
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret.utf8))))
    }

    /// Whether `value` carries a valid signature of `body` by `secret` (what a receiver checks); its timestamp.
    public static func verify(_ value: String, body: [UInt8], secret: String) -> (valid: Bool, timestamp: Int64?) {
        var timestamp: Int64?
        var candidates: [[UInt8]] = []
        for part in value.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1", let bytes = Hex.decode(pair[1]) { candidates.append(bytes) }
        }
        guard let timestamp else { return (false, nil) }
        let key = SymmetricKey(data: Array(secret.utf8))
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: body)
        let valid = candidates.contains { HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: message, using: key) }
        return (valid, timestamp)
    }
}

/// Seals webhook secrets for storage (AES-256-GCM, a fresh nonce each time) with a key kept outside the
/// database. The daemon must be able to sign, so a secret cannot be stored as a hash; sealed, a
/// database dump, backup or replica does not reveal it, and neither role but the daemon's holds the key.
public struct WebhookSecretBox: Sendable {
    public static let keyByteCount = 32
    let keyBytes: [UInt8]

    /// A box with a 32-byte key.
    public init(keyBytes: [UInt8]) throws {
        guard keyBytes.count == Self.keyByteCount else {
            throw ServiceError.invalid("invalid_webhook_key", "the webhook secrets key must be 32 bytes")
        }
        self.keyBytes = keyBytes
    }

    var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    public func seal(_ secret: String) throws -> [UInt8] {
        guard let combined = try AES.GCM.seal(Array(secret.utf8), using: key).combined else { throw ServiceError.internalFailure }
        return Array(combined)
    }

    public func open(_ sealed: [UInt8]) throws -> String {
        let box = try AES.GCM.SealedBox(combined: sealed)
        return String(decoding: try AES.GCM.open(box, using: key), as: UTF8.self)
    }
}
