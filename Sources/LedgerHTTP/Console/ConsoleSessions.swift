import Crypto
import Foundation
import LedgerAPI
import LedgerCore
import Synchronization

/// The console's signed-in sessions, in this process's memory: a session is opened by presenting an API key at
/// sign-in and names that key (its id and its verifier's hash, never the key itself).
///
/// - The cookie carries a random 32-byte token; the store keeps only its SHA-256, so the table holds nothing that
///   would sign anyone in.
/// - Each session has its own random CSRF token, which every console form carries and every POST must present.
/// - A session lasts ``lifetime`` from sign-in (the cookie's `Max-Age` too), and the key is checked on each request
///   (``ConsoleRoutes``): revoking or expiring the key ends its sessions at the next request.
/// - Memory, not the database: a restart signs everyone out, and with several daemons behind one address a browser
///   must keep to one of them (or sign in again). Sessions are no part of the ledger: nothing about them is an event.
public final class ConsoleSessions: Sendable {
    /// One signed-in browser.
    public struct Session: Sendable {
        public let principal: Principal
        /// The key's verifier hash at sign-in (``APIKeyring/principal(forKeyID:fingerprint:)``).
        let keyFingerprint: [UInt8]
        /// Every form of this session carries it; a POST without it (or with another) is refused.
        public let csrfToken: String
        public let expiresAt: Date
    }

    /// How long a session lasts from sign-in: a working day.
    public static let lifetime: TimeInterval = 8 * 3600
    /// The most sessions one key keeps at once: when it signs in once more, its own oldest session goes. Enough for a
    /// person's browsers and devices; a script signing in with one key only ever replaces that key's sessions
    /// (security review 4, L2: 10,050 sign-ins with one auditor key signed every operator out).
    public static let defaultSessionsPerKey = 20
    /// The most sessions kept at once, a backstop reached only with `capacity / sessionsPerKey` keys each at its cap:
    /// then the oldest session of a key holding the most goes, never one of a key holding fewer.
    public static let defaultCapacity = 10_000

    let sessionsPerKey: Int
    let capacity: Int

    private let sessions = Mutex<[String: Session]>([:])
    private let now: @Sendable () -> Date

    public init(
        now: @escaping @Sendable () -> Date = { Date() },
        sessionsPerKey: Int = defaultSessionsPerKey,
        capacity: Int = defaultCapacity
    ) {
        self.now = now
        self.sessionsPerKey = sessionsPerKey
        self.capacity = capacity
    }

    /// Opens a session for `principal`; the token goes in the cookie and nowhere else (never logged).
    func open(principal: Principal, keyFingerprint: [UInt8]) -> (token: String, session: Session) {
        let token = Self.randomToken()
        let now = self.now()
        let session = Session(
            principal: principal,
            keyFingerprint: keyFingerprint,
            csrfToken: Self.randomToken(),
            expiresAt: now.addingTimeInterval(Self.lifetime)
        )
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expiresAt > now }
            let own = sessions.filter { $0.value.principal == principal }
            if own.count >= sessionsPerKey {
                Self.dropOldest(of: own, from: &sessions)
            } else if sessions.count >= capacity {
                let byKey = Dictionary(grouping: sessions, by: \.value.principal)
                if let largest = byKey.values.max(by: { $0.count < $1.count }) { Self.dropOldest(of: largest, from: &sessions) }
            }
            sessions[Self.digest(token)] = session
        }
        return (token, session)
    }

    private static func dropOldest(of candidates: some Collection<(key: String, value: Session)>, from sessions: inout [String: Session]) {
        if let oldest = candidates.min(by: { $0.value.expiresAt < $1.value.expiresAt }) { sessions[oldest.key] = nil }
    }

    /// The session of `token` while it lasts.
    func session(token: String) -> Session? {
        let now = self.now()
        let key = Self.digest(token)
        return sessions.withLock { sessions in
            guard let session = sessions[key] else { return nil }
            guard session.expiresAt > now else {
                sessions[key] = nil
                return nil
            }
            return session
        }
    }

    func close(token: String) {
        let key = Self.digest(token)
        _ = sessions.withLock { $0.removeValue(forKey: key) }
    }

    /// How many sessions are open (expired ones not yet dropped included); for the tests.
    public var count: Int { sessions.withLock { $0.count } }

    /// 32 random bytes, base64url without padding.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Base64URL.encode(bytes)
    }

    static func digest(_ token: String) -> String { Hex.encode(Array(SHA256.hash(data: Array(token.utf8)))) }

    /// Whether two tokens are equal, in time independent of where they differ.
    static func tokensEqual(_ a: String, _ b: String) -> Bool {
        APIKeyring.constantTimeEqual(Array(SHA256.hash(data: Array(a.utf8))), Array(SHA256.hash(data: Array(b.utf8))))
    }
}
