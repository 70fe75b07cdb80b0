import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerHTTP
import LedgerTestSupport
import Logging
import Synchronization
import Testing

/// Failed bearer authentications and console sign-ins are logged (throttled, with the source address, never the key),
/// counted per source in `/metrics`, and sign-ins from an address that keeps failing are answered 429 (security review
/// 4, L3: 1,634 sign-ins/s and 2,086 bearer failures/s, no log line).
@Suite(.machine(.shared)) struct AuthenticationFailuresTests {
    static let badKey = "olk_nobody.bm90LWEta2V5LWF0LWFsbC1ub3QtYS1rZXktYXQtYWxs"

    /// The value of the sample of `metric` whose labels include every one of `labels`, in the exposition `text`.
    static func sample(_ metric: String, _ labels: [String], in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("\(metric){") && labels.allSatisfy({ line.contains($0) }) {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    @Test func failuresAreLoggedBoundedCountedAndNeverCarryTheKey() async throws {
        let logs = CapturedLogs()
        let logger = Logger(label: "ledger.tests.auth") { _ in CapturingLogHandler(sink: logs) }
        try await TestApp.withApp(logger: logger) { client, services in
            let started = ContinuousClock.now
            for _ in 0..<30 {  // and one on the storefront below: 31
                let status = try await client.execute(uri: "/orders", method: .get, headers: [.authorization: "Bearer \(Self.badKey)"]) { $0.status }
                #expect(status == .unauthorized)
            }
            // The storefront's as-of inventory takes a back-office key too.
            let asOf = try await client.execute(uri: "/inventory?as_of=1", method: .get, headers: [.authorization: "Bearer \(Self.badKey)"]) {
                $0.status
            }
            #expect(asOf == .unauthorized)
            let browser = ConsoleTests.Browser(client)
            for _ in 0..<AuthenticationFailures.signInFailuresAllowed {
                #expect(try await browser.signIn(Self.badKey).status == .unauthorized)
            }
            // No key at all is not a failed authentication: neither logged nor counted.
            #expect(try await client.execute(uri: "/orders", method: .get) { $0.status } == .unauthorized)

            let text = logs.text
            let lines = text.split(separator: "\n").filter { $0.contains("authentication failed") }
            let bound = 1 + Int((ContinuousClock.now - started) / .seconds(10))
            #expect(!lines.isEmpty && lines.count <= bound, "\(lines.count) lines for 41 failures:\n\(lines.joined(separator: "\n"))")
            #expect(lines.first?.contains("source") == true, "\(lines)")
            #expect(!text.contains(Self.badKey) && !text.contains("bm90LWEta2V5"), "a presented key was logged")

            let metrics = services.metrics.exposition()
            #expect(Self.sample("ledger_authentication_failures_total", [#"kind="api_key""#, "source="], in: metrics) == 31, "\(metrics)")
            #expect(
                Self.sample("ledger_authentication_failures_total", [#"kind="console_sign_in""#, "source="], in: metrics)
                    == Double(AuthenticationFailures.signInFailuresAllowed),
                "\(metrics)"
            )
        }
    }

    @Test func aSourceThatKeepsFailingGets429AndAnotherSourceStillSignsIn() async throws {
        try await TestApp.withApp { client, services in
            // Another address spent its attempts; this browser's address has not.
            for _ in 0..<(AuthenticationFailures.signInFailuresAllowed * 2) {
                services.authenticationFailures.record(.consoleSignIn, source: "192.0.2.7")
            }
            #expect(services.authenticationFailures.signInRetryAfter(source: "192.0.2.7") != nil)
            let browser = ConsoleTests.Browser(client)
            #expect(try await browser.signIn(TestApp.operatorKey).location == "/console/today")
            #expect(services.consoleSessions.count == 1)

            // This address fails as often as allowed; then even a good key waits, and opens no session.
            let other = ConsoleTests.Browser(client)
            for _ in 0..<AuthenticationFailures.signInFailuresAllowed {
                #expect(try await other.signIn(Self.badKey).status == .unauthorized)
            }
            let refused = try await other.signIn(TestApp.operatorKey)
            #expect(refused.status == .tooManyRequests, "\(refused.status) \(refused.html)")
            let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
            #expect(retryAfter >= 1 && retryAfter <= 60)
            #expect(refused.html.contains("too many failed sign-ins"))
            #expect(services.consoleSessions.count == 1)
            // The first browser's session still works.
            #expect(try await browser.request("/console/today").status == .ok)
        }
    }

    /// The window: counted from an address's first failure, 429 past the allowance, open again once it ends.
    @Test func theSignInWindowEndsAndOtherAddressesAreUntouched() {
        final class Instant: Sendable { let now = Mutex(ContinuousClock.now) }
        let clock = Instant()
        let failures = AuthenticationFailures(logger: Logger(label: "quiet") { _ in SwiftLogNoOpLogHandler() }, factory: LedgerMetrics().factory) {
            clock.now.withLock { $0 }
        }
        for _ in 0..<(AuthenticationFailures.signInFailuresAllowed - 1) { failures.record(.consoleSignIn, source: "198.51.100.1") }
        #expect(failures.signInRetryAfter(source: "198.51.100.1") == nil)
        failures.record(.consoleSignIn, source: "198.51.100.1")
        #expect(failures.signInRetryAfter(source: "198.51.100.1") == 60)
        // Bearer failures do not count against sign-in.
        for _ in 0..<50 { failures.record(.apiKey, source: "198.51.100.2") }
        #expect(failures.signInRetryAfter(source: "198.51.100.2") == nil)
        clock.now.withLock { $0 = $0.advanced(by: .seconds(59.5)) }
        #expect(failures.signInRetryAfter(source: "198.51.100.1") == 1)
        clock.now.withLock { $0 = $0.advanced(by: .seconds(1)) }
        #expect(failures.signInRetryAfter(source: "198.51.100.1") == nil)
    }
}
