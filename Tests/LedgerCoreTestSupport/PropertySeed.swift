import Foundation
import LedgerAcquirer
import Testing

/// The seed of a property test: chosen as the test starts, and named in every issue the test records.
///
/// `@Test(.seeded())` takes the seed from `LEDGER_PROPERTY_SEED` (to replay a run) or picks one at random,
/// and appends "seed N (replay with LEDGER_PROPERTY_SEED=N)" to every failure of the test, including those
/// recorded in its child tasks. The test reads the seed as ``current`` and draws from ``generator()``:
/// `SeededRandom`, the acquirer model's SplitMix64, the one seeded generator of the tests.
public struct PropertySeed: TestTrait, TestScoping {
    /// The environment variable that replays a run.
    public let variable: String
    /// The seed when the variable is unset; nil: a random one.
    public let fallback: UInt64?

    @TaskLocal static var value: UInt64?

    /// The running test's seed; traps in a test without the `.seeded` trait.
    public static var current: UInt64 {
        guard let value else { preconditionFailure("PropertySeed.current needs the test to have the .seeded() trait") }
        return value
    }

    /// A generator seeded with the running test's seed.
    public static func generator() -> SeededRandom { SeededRandom(seed: current) }

    /// Runs the test with its seed chosen and every issue it records naming the seed.
    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let seed = ProcessInfo.processInfo.environment[variable].flatMap(UInt64.init) ?? fallback ?? UInt64.random(in: .min ... .max)
        let note = Comment(rawValue: "seed \(seed) (replay with \(variable)=\(seed))")
        let naming = IssueHandlingTrait.compactMapIssues { issue in
            var issue = issue
            issue.comments.append(note)
            return issue
        }
        try await Self.$value.withValue(seed) {
            try await naming.provideScope(for: test, testCase: testCase, performing: function)
        }
    }
}

extension Trait where Self == PropertySeed {
    /// A seeded property test: the seed comes from `variable` if set, else `fallback`, else at random,
    /// and every failure of the test names it.
    public static func seeded(by variable: String = "LEDGER_PROPERTY_SEED", default fallback: UInt64? = nil) -> Self {
        PropertySeed(variable: variable, fallback: fallback)
    }
}
