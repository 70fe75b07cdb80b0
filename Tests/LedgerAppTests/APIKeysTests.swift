import Foundation
import HTTPTypes
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerTestSupport
import Testing

/// API keys with ids, stored as salted hashes, rotated without a restart (issue 15).
@Suite(.machine(.shared)) struct APIKeysTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    static func temporaryKeyring() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("ledgerd-keyring-\(UUID().uuidString).json")
    }

    @Test func aKeyIsFoundByItsIdAndCheckedAgainstItsSaltedHash() throws {
        let op = APIKeyToken.generate(id: "op-7")
        let au = APIKeyToken.generate(id: "au-1")
        let keyring = try APIKeyring(
            operatorKeys: [],
            auditorKeys: [],
            fileVerifiers: [
                APIKeyVerifier.make(id: "op-7", role: .operator, key: op.text, createdAt: Date()),
                APIKeyVerifier.make(id: "au-1", role: .auditor, key: au.text, createdAt: Date()),
            ]
        )
        #expect(keyring.principal(forKey: op.text)?.actor == "operator:op-7" && keyring.principal(forKey: op.text)?.role == .operator)
        #expect(keyring.principal(forKey: au.text)?.actor == "auditor:au-1")
        // A wrong secret, another key's secret under this id, the secret alone: refused.
        #expect(keyring.principal(forKey: APIKeyToken(id: "op-7", secret: op.secret + "x").text) == nil)
        #expect(keyring.principal(forKey: APIKeyToken(id: "op-7", secret: au.secret).text) == nil)
        #expect(keyring.principal(forKey: op.secret) == nil)
        #expect(keyring.principal(forKey: APIKeyToken(id: "op-8", secret: op.secret).text) == nil)
    }

    @Test func theSameSecretHashesDifferentlyUnderEachSaltAndNoFileHoldsAKey() throws {
        let url = Self.temporaryKeyring()
        defer { try? FileManager.default.removeItem(at: url) }
        let first = try APIKeys.add(role: .operator, id: nil, expiresAt: nil, keyring: url)
        let second = try APIKeys.add(role: .operator, id: nil, expiresAt: nil, keyring: url)
        let auditor = try APIKeys.add(role: .auditor, id: nil, expiresAt: nil, keyring: url)
        #expect([first.id, second.id, auditor.id] == ["op-1", "op-2", "au-1"])
        let bytes = try String(contentsOf: url, encoding: .utf8)
        for token in [first, second, auditor] { #expect(!bytes.contains(token.secret)) }
        #expect((try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int) == 0o600)
        let a = APIKeyVerifier.make(id: "a", role: .operator, key: "olk_a.same", createdAt: Date())
        let b = APIKeyVerifier.make(id: "a", role: .operator, key: "olk_a.same", createdAt: Date())
        #expect(a.salt != b.salt && a.hash != b.hash && a.hash.count == 64)
        // Ids are unique: a second `a`, or an id the file already has, is refused.
        #expect(throws: APIKeyringError.self) { try APIKeyring(operatorKeys: [], auditorKeys: [], fileVerifiers: [a, b]) }
        #expect(throws: (any Error).self) { try APIKeys.add(role: .auditor, id: "op-1", expiresAt: nil, keyring: url) }
    }

    @Test func revokedAndExpiredKeysAreRefused() throws {
        let url = Self.temporaryKeyring()
        defer { try? FileManager.default.removeItem(at: url) }
        let start = TestApp.instant("2026-06-19T10:00:00Z")
        let clock = SimulatedClock(start)
        let kept = try APIKeys.add(role: .operator, id: "kept", expiresAt: nil, keyring: url, now: start)
        let expiring = try APIKeys.add(role: .operator, id: "daily", expiresAt: start.addingTimeInterval(86_400), keyring: url, now: start)
        let revoked = try APIKeys.add(role: .auditor, id: "gone", expiresAt: nil, keyring: url, now: start)
        try APIKeys.revoke(id: "gone", keyring: url, now: start)
        let keyring = try APIKeyring(operatorKeys: [], auditorKeys: [], fileVerifiers: APIKeys.readKeyring(url).keys, now: { clock.now })
        #expect(keyring.principal(forKey: kept.text) != nil && keyring.principal(forKey: expiring.text) != nil)
        #expect(keyring.principal(forKey: revoked.text) == nil)
        clock.set(start.addingTimeInterval(86_400))
        #expect(keyring.principal(forKey: expiring.text) == nil && keyring.principal(forKey: kept.text) != nil)
        #expect(keyring.liveIDs == ["kept"])
        // The revoked id is never given again.
        #expect(throws: (any Error).self) { try APIKeys.add(role: .auditor, id: "gone", expiresAt: nil, keyring: url) }
    }

    @Test func environmentKeysGetIdsByTheirPlaceAndStayBesideTheFilesKeys() throws {
        let named = APIKeyToken.generate(id: "ci")
        let keyring = try APIKeyring(operatorKeys: ["plain-operator", named.text], auditorKeys: ["x", "plain-auditor"])
        #expect(keyring.principal(forKey: "plain-operator")?.actor == "operator:env-operator-1")
        #expect(keyring.principal(forKey: named.text)?.actor == "operator:ci")
        #expect(keyring.principal(forKey: "plain-auditor")?.actor == "auditor:env-auditor-2")
        let file = APIKeyToken.generate(id: "op-1")
        try keyring.replace(fileVerifiers: [APIKeyVerifier.make(id: "op-1", role: .operator, key: file.text, createdAt: Date())])
        #expect(keyring.principal(forKey: file.text) != nil && keyring.principal(forKey: "plain-operator") != nil)
        // A file that reuses an environment key's id is refused and the keys in force stay.
        #expect(throws: APIKeyringError.self) {
            try keyring.replace(fileVerifiers: [APIKeyVerifier.make(id: "ci", role: .auditor, key: "olk_ci.other", createdAt: Date())])
        }
        #expect(keyring.principal(forKey: file.text) != nil)
    }

    /// A running daemon: a key added to its keyring works within seconds, its changes name the key's
    /// id as their actor, and a revoked key is refused — no restart.
    @Test(.timeLimit(.minutes(2))) func keysAreAddedAndRevokedWhileTheDaemonRuns() async throws {
        let url = Self.temporaryKeyring()
        defer { try? FileManager.default.removeItem(at: url) }
        let first = try APIKeys.add(role: .operator, id: nil, expiresAt: nil, keyring: url)
        try await TestApp.withApp(seed: true, environment: ["LEDGERD_API_KEYRING": url.path]) { client, services in
            let order = try await storefront.placeOrder(client)
            let (status, text) = try await backOffice.operate(client, order, "capture", #"{"amount": "1.00"}"#, apiKey: first.text)
            #expect(status == .ok, "\(text)")
            let captured = try #require(try await services.store.read(from: 1, limit: 10_000).last { $0.type == "HoldCaptured" })
            #expect(try JSONDecoder().decode(EventMetadata.self, from: Data(captured.metadata.utf8)).actor == "operator:op-1")

            let second = try APIKeys.add(role: .operator, id: nil, expiresAt: nil, keyring: url)
            try await ScheduledLoopsTests.eventually {
                try await backOffice.get(client, "/orders?limit=1", key: second.text).0 == .ok
            }
            try APIKeys.revoke(id: first.id, keyring: url)
            try await ScheduledLoopsTests.eventually {
                try await backOffice.get(client, "/orders?limit=1", key: first.text).0 == .unauthorized
            }
            // The environment's keys were never touched.
            #expect(try await backOffice.get(client, "/orders?limit=1").0 == .ok)
            let before = try await services.store.head().position
            let refused = try await backOffice.operate(client, order, "capture", #"{"amount": "1.00"}"#, apiKey: first.text)
            #expect(refused.0 == .unauthorized && refused.1.contains("\"code\""))
            #expect(try await services.store.head().position == before)
        }
    }
}
