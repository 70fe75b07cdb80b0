import Crypto
import Foundation
import LedgerAPI
import LedgerCore
import Synchronization

/// What the daemon keeps of one API key: never the key, only a salted SHA-256 of its secret, with
/// the key's id, role and life. The id is public: it is the event metadata's actor
/// (`operator:op-2`), the prefix of the key itself, and what `ledgerd keys revoke` names.
///
/// A key is `olk_<id>.<secret>` (``APIKeyToken``): 32 random bytes of secret (base64url), so a
/// single salted SHA-256 is enough; there is nothing to guess that a slow hash would protect.
public struct APIKeyVerifier: Codable, Sendable, Hashable {
    public var id: String
    public var role: Principal.Role
    /// 16 random bytes, hex: two keys with the same secret have different hashes.
    public var salt: String
    /// hex SHA-256(salt bytes ‖ secret's UTF-8).
    public var hash: String
    public var createdAt: Date
    /// When set, the key is refused from this instant on.
    public var expiresAt: Date?
    /// When set, the key is refused (kept in the file so its id is never reused).
    public var revokedAt: Date?
    /// A key from before keys had ids (a whole `LEDGERD_OPERATOR_KEYS` entry, an older `api-keys.json`):
    /// the whole presented text is its secret, and the id was assigned to it.
    public var wholeKey: Bool?

    enum CodingKeys: String, CodingKey {
        case id, role, salt, hash
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case revokedAt = "revoked_at"
        case wholeKey = "whole_key"
    }

    /// A verifier for `key` under a fresh random salt: of its secret when it is an `olk_<id>.<secret>`
    /// key (whose id must then be `id`), else of the whole text (``wholeKey``).
    public static func make(id: String, role: Principal.Role, key: String, createdAt: Date, expiresAt: Date? = nil) -> APIKeyVerifier {
        let token = APIKeyToken(key)
        precondition(token == nil || token?.id == id, "an olk_ key keeps its own id")
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return APIKeyVerifier(
            id: id,
            role: role,
            salt: Hex.encode(salt),
            hash: Hex.encode(digest(salt: salt, secret: token?.secret ?? key)),
            createdAt: createdAt,
            expiresAt: expiresAt,
            revokedAt: nil,
            wholeKey: token == nil ? true : nil
        )
    }

    static func digest(salt: [UInt8], secret: String) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: salt)
        hasher.update(data: Array(secret.utf8))
        return Array(hasher.finalize())
    }

    /// Whether the key is in force at `now`.
    public func isLive(at now: Date) -> Bool {
        revokedAt.map { $0 > now } ?? true && (expiresAt.map { $0 > now } ?? true)
    }
}

/// An API key as presented: `olk_<id>.<secret>`. The id is 1–32 of `a-z A-Z 0-9 -`.
public struct APIKeyToken: Sendable, Hashable {
    public let id: String
    public let secret: String

    public static let prefix = "olk_"

    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), let dot = text.firstIndex(of: ".") else { return nil }
        let id = String(text[text.index(text.startIndex, offsetBy: Self.prefix.count)..<dot])
        let secret = String(text[text.index(after: dot)...])
        guard Self.isValidID(id), !secret.isEmpty else { return nil }
        self.id = id
        self.secret = secret
    }

    public init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    public var text: String { "\(Self.prefix)\(id).\(secret)" }

    public static func isValidID(_ id: String) -> Bool {
        (1...32).contains(id.utf8.count)
            && id.utf8.allSatisfy { $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// A new key: 32 random bytes of secret, base64url without padding.
    public static func generate(id: String) -> APIKeyToken {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return APIKeyToken(id: id, secret: Base64URL.encode(bytes))
    }
}

/// The API keys in force: verifiers by id, replaced whole when the keyring file changes
/// (``replace(fileVerifiers:)``), so keys are added, rotated and revoked without a restart.
///
/// A presented `olk_<id>.<secret>` is looked up by its id and its secret hashed with that key's salt;
/// the digests are compared in constant time. Keys given whole in the environment
/// (`LEDGERD_OPERATOR_KEYS`, `LEDGERD_AUDITOR_KEYS`) are hashed the same way at start (a fresh salt,
/// only the verifier kept); one not of the `olk_` form gets the id `env-<role>-<n>` (its place in the
/// list), and a presented key that is not of the `olk_` form is checked against those.
public final class APIKeyring: Sendable {
    struct Entry: Sendable {
        var verifier: APIKeyVerifier
        var salt: [UInt8]
        var hash: [UInt8]
        var whole: Bool { verifier.wholeKey == true }
    }

    /// The keys in force and what a presented key is looked up in, built once per change.
    private struct Entries: Sendable {
        let environment: [Entry]
        let file: [Entry]
        /// The `olk_<id>.` keys by id.
        let byID: [String: Entry]
        /// The keys given whole, matched by their secret alone.
        let whole: [Entry]

        /// Throws when an id is used twice.
        init(environment: [Entry], file: [Entry]) throws {
            var all: [String: Entry] = [:]
            for entry in environment + file where all.updateValue(entry, forKey: entry.verifier.id) != nil {
                throw APIKeyringError("API key id \(entry.verifier.id) is used twice")
            }
            self.environment = environment
            self.file = file
            self.byID = all.filter { !$0.value.whole }
            self.whole = (environment + file).filter(\.whole)
        }
    }

    private let entries: Mutex<Entries>
    private let now: @Sendable () -> Date

    /// Keys from the environment (whole keys, any form) and from a keyring file.
    public init(
        operatorKeys: [String],
        auditorKeys: [String],
        fileVerifiers: [APIKeyVerifier] = [],
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        var environment: [Entry] = []
        for (keys, role) in [(operatorKeys, Principal.Role.operator), (auditorKeys, .auditor)] {
            for (index, key) in keys.enumerated() where !key.isEmpty {
                let id = APIKeyToken(key)?.id ?? "env-\(role.rawValue)-\(index + 1)"
                environment.append(Self.entry(APIKeyVerifier.make(id: id, role: role, key: key, createdAt: now()))!)
            }
        }
        self.entries = Mutex(try Entries(environment: environment, file: try Self.entries(fileVerifiers)))
        self.now = now
    }

    /// Replaces the keyring file's keys (the environment's stay). Throws, keeping the keys in force,
    /// when a verifier is malformed or an id is used twice.
    public func replace(fileVerifiers: [APIKeyVerifier]) throws {
        let file = try Self.entries(fileVerifiers)
        try entries.withLock { $0 = try Entries(environment: $0.environment, file: file) }
    }

    public var isEmpty: Bool { entries.withLock { $0.environment.isEmpty && $0.file.isEmpty } }

    /// The ids and roles in force now, for a start-up log line.
    public var liveIDs: [String] {
        let now = self.now()
        return entries.withLock { ($0.environment + $0.file).filter { $0.verifier.isLive(at: now) }.map(\.verifier.id) }
    }

    public func principal(forKey key: String) -> Principal? {
        let token = APIKeyToken(key)
        let now = self.now()
        let candidates = entries.withLock { entries in token.map { entries.byID[$0.id].map { [$0] } ?? [] } ?? entries.whole }
        for entry in candidates where entry.verifier.isLive(at: now) {
            let digest = APIKeyVerifier.digest(salt: entry.salt, secret: token?.secret ?? key)
            if Self.constantTimeEqual(digest, entry.hash) { return Principal(role: entry.verifier.role, keyID: entry.verifier.id) }
        }
        return nil
    }

    /// The principal of `key` and its verifier's hash (the key's fingerprint: the salted digest, never the key), for a
    /// console session, which keeps the fingerprint and checks it on each request (``principal(forKeyID:fingerprint:)``).
    func principalAndFingerprint(forKey key: String) -> (principal: Principal, fingerprint: [UInt8])? {
        guard let principal = principal(forKey: key) else { return nil }
        guard let entry = keyEntry(id: principal.keyID) else { return nil }
        return (principal, entry.hash)
    }

    /// The principal of the key `id` when it is still in force now (in the keyring, neither revoked nor expired) and is
    /// still the key whose verifier hash is `fingerprint`: a console session's check on every request, so that revoking
    /// (or removing) the key ends its sessions at once.
    func principal(forKeyID id: String, fingerprint: [UInt8]) -> Principal? {
        let now = self.now()
        guard let entry = keyEntry(id: id),
            entry.verifier.isLive(at: now), Self.constantTimeEqual(entry.hash, fingerprint)
        else { return nil }
        return Principal(role: entry.verifier.role, keyID: entry.verifier.id)
    }

    private func keyEntry(id: String) -> Entry? {
        entries.withLock { entries in (entries.environment + entries.file).first { entry in entry.verifier.id == id } }
    }

    private static func entries(_ verifiers: [APIKeyVerifier]) throws -> [Entry] {
        try verifiers.map {
            guard let entry = entry($0) else { throw APIKeyringError("API key \($0.id): its id, salt or hash is malformed") }
            return entry
        }
    }

    private static func entry(_ verifier: APIKeyVerifier) -> Entry? {
        guard APIKeyToken.isValidID(verifier.id), let salt = Hex.decode(verifier.salt), salt.count >= 16,
            let hash = Hex.decode(verifier.hash), hash.count == 32
        else { return nil }
        return Entry(verifier: verifier, salt: salt, hash: hash)
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}

public struct APIKeyringError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
