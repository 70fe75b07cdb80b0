import Foundation
import LedgerHTTPServer
import Logging
import Metrics
import Synchronization

/// Failed authentications — an API key the back office does not know (`Authorization: Bearer`), a console sign-in with
/// a key that is not valid — made visible and, for sign-in, slowed (security review 4, L3: 1,634 sign-ins/s and 2,086
/// bearer failures/s went unlogged). Keys are 256-bit, so guessing is hopeless; the point is that someone trying shows.
///
/// - Logged as a warning with the source address and the kind (never the presented key) through a ``LogThrottle``: at
///   most one line per 10 s, carrying how many were left out.
/// - Counted in `/metrics` as `ledger_authentication_failures_total{kind, source}`; the first ``labelledSources``
///   distinct addresses get a label of their own, later ones count as `source="other"`, so a spray of addresses cannot
///   grow the exposition without bound.
/// - Console sign-in: after ``signInFailuresAllowed`` failures from one address within ``signInWindow``, every sign-in
///   from that address (a valid key too) is answered 429 with `Retry-After` until the window that began with its first
///   failure ends. Other addresses are not affected. A success does not reset the count (a valid auditor key must not
///   buy more guesses at an operator key).
public final class AuthenticationFailures: Sendable {
    /// What failed.
    public enum Kind: String, Sendable {
        /// A back-office request with an unknown, revoked or expired key.
        case apiKey = "api_key"
        /// A console sign-in with a key that is not valid.
        case consoleSignIn = "console_sign_in"
    }

    /// Failed sign-ins one address may make within ``signInWindow`` before its sign-ins are refused.
    public static let signInFailuresAllowed = 10
    /// The window the failures are counted in, from an address's first failure.
    public static let signInWindow: Duration = .seconds(60)
    /// Distinct addresses given their own metrics label.
    public static let labelledSources = 1_000
    /// Addresses whose sign-in window is kept; beyond, windows that ended are dropped, and new addresses go untracked
    /// until some end (a spray of addresses must not grow memory without bound).
    static let trackedSources = 10_000

    struct Window {
        var started: ContinuousClock.Instant
        var failures: Int
    }

    private struct State {
        var windows: [String: Window] = [:]
        var labelled: Set<String> = []
    }

    private let state = Mutex(State())
    private let log = LogThrottle()
    private let logger: Logger
    private let factory: any MetricsFactory
    private let now: @Sendable () -> ContinuousClock.Instant

    public init(logger: Logger, factory: any MetricsFactory, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.logger = logger
        self.factory = factory
        self.now = now
    }

    /// Records one failure from `source` (an IP address): the throttled log line, the counter, and for a sign-in the
    /// address's window.
    public func record(_ kind: Kind, source: String) {
        let now = self.now()
        let label = state.withLock { state -> String in
            if kind == .consoleSignIn {
                if var window = state.windows[source], now - window.started < Self.signInWindow {
                    window.failures += 1
                    state.windows[source] = window
                } else {
                    if state.windows.count >= Self.trackedSources {
                        state.windows = state.windows.filter { now - $0.value.started < Self.signInWindow }
                    }
                    if state.windows.count < Self.trackedSources { state.windows[source] = Window(started: now, failures: 1) }
                }
            }
            if state.labelled.contains(source) { return source }
            guard state.labelled.count < Self.labelledSources else { return "other" }
            state.labelled.insert(source)
            return source
        }
        Counter(label: "ledger_authentication_failures_total", dimensions: [("kind", kind.rawValue), ("source", label)], factory: factory)
            .increment()
        log.log(.warning, "authentication failed", metadata: ["kind": "\(kind.rawValue)", "source": "\(source)"], to: logger)
    }

    /// How long `source` must wait before signing in again (whole seconds, at least 1); nil when it may sign in now.
    public func signInRetryAfter(source: String) -> Int? {
        let now = self.now()
        return state.withLock { state in
            guard let window = state.windows[source] else { return nil }
            let elapsed = now - window.started
            guard elapsed < Self.signInWindow else {
                state.windows[source] = nil
                return nil
            }
            guard window.failures >= Self.signInFailuresAllowed else { return nil }
            let remaining = Self.signInWindow - elapsed
            return max(1, Int(remaining.components.seconds) + (remaining.components.attoseconds > 0 ? 1 : 0))
        }
    }
}
