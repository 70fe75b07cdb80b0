import Foundation
import LedgerAPI
import Testing

@testable import LedgerHTTP

/// The console's session table is bounded per key: one key signing in again and again drops its own oldest sessions,
/// never another key's (security review 4, L2: 10,050 sign-ins with the auditor key signed every operator out).
@Suite struct ConsoleSessionsTests {
    static let fingerprint = [UInt8](repeating: 7, count: 32)

    @Test func tenThousandFiftySignInsByOneKeyLeaveAnotherKeysSessionValid() {
        let sessions = ConsoleSessions()
        let operatorSession = sessions.open(principal: Principal(role: .operator, keyID: "op-1"), keyFingerprint: Self.fingerprint)
        let auditor = Principal(role: .auditor, keyID: "au-1")
        var auditorTokens: [String] = []
        for _ in 0..<10_050 { auditorTokens.append(sessions.open(principal: auditor, keyFingerprint: Self.fingerprint).token) }
        #expect(sessions.session(token: operatorSession.token)?.principal.keyID == "op-1", "the operator was signed out")
        // The auditor key keeps its newest sessions, up to its cap; its oldest went.
        #expect(sessions.session(token: auditorTokens.last!) != nil)
        #expect(sessions.session(token: auditorTokens.first!) == nil)
        #expect(sessions.count <= ConsoleSessions.defaultSessionsPerKey + 1, "\(sessions.count) sessions kept")
    }

    /// At the global cap (every key at its own cap), a sign-in drops the oldest session of a key holding the most, so a
    /// key with fewer sessions keeps them.
    @Test func theGlobalCapDropsTheOldestSessionOfAKeyHoldingTheMost() {
        let sessions = ConsoleSessions(sessionsPerKey: 5, capacity: 100)
        let few = sessions.open(principal: Principal(role: .operator, keyID: "few"), keyFingerprint: Self.fingerprint)
        for key in 0..<21 {
            for _ in 0..<5 {
                _ = sessions.open(principal: Principal(role: .auditor, keyID: "k\(key)"), keyFingerprint: Self.fingerprint)
            }
        }
        #expect(sessions.count <= 100)
        #expect(sessions.session(token: few.token) != nil, "a key with one session lost it to others' sign-ins")
    }
}
