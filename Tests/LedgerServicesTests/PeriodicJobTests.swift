import Logging
import Synchronization
import Testing

@testable import LedgerServices

/// The one loop of the periodic jobs, without a database: the waits it keeps between passes, its back-off after
/// failures and the reset after a success, the due time asked before each pass, and a prompt stop on cancellation.
/// Timing is asserted only from below (a wait is at least as long as it must be) or against a far larger bound, so
/// a busy machine cannot fail these tests.
@Suite struct PeriodicJobTests {
    /// The instants passes started at, and what each pass does (by its index).
    final class Passes: Sendable {
        let started = Mutex<[ContinuousClock.Instant]>([])
        let outcome: @Sendable (Int) -> Bool

        init(succeeding outcome: @escaping @Sendable (Int) -> Bool) { self.outcome = outcome }

        struct Failed: Error {}

        func pass() throws {
            let index = started.withLock { list in
                list.append(.now)
                return list.count - 1
            }
            if !outcome(index) { throw Failed() }
        }

        var count: Int { started.withLock { $0.count } }
        var gaps: [Duration] { started.withLock { list in zip(list.dropFirst(), list).map { $0 - $1 } } }

        /// Waits (polling) until `count` passes started, up to `limit`.
        func wait(for count: Int, limit: Duration = .seconds(60)) async {
            let deadline = ContinuousClock.now + limit
            while self.count < count && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        }
    }

    static let logger = Logger(label: "periodic-job-test") { _ in SwiftLogNoOpLogHandler() }

    func job(_ wait: PeriodicJob.Wait, backOff: Bool = false, firstRetry: Duration = .milliseconds(20)) -> PeriodicJob {
        PeriodicJob("test job", metric: nil, wait: wait, backOff: backOff, firstRetry: firstRetry, jobs: JobMetrics(), logger: Self.logger)
    }

    @Test(.timeLimit(.minutes(1))) func failedPassesAreRetriedSoonerAndLongerEachTimeThenASuccessWaitsTheInterval() async throws {
        let passes = Passes { $0 >= 3 }  // three failures, then successes
        let loop = Task { await job(.afterEachPass(.seconds(3_600)), backOff: true).run { try passes.pass() } }
        await passes.wait(for: 4)
        // Give a wrong loop time to run a fifth pass: after a success it must wait the whole hour.
        try await Task.sleep(for: .milliseconds(300))
        loop.cancel()
        await loop.value
        #expect(passes.count == 4, "passes: \(passes.count)")
        let gaps = passes.gaps
        try #require(gaps.count == 3)
        // 20 ms, 40 ms, 80 ms: each at least its back-off, each far below the hour a failure without back-off waits.
        #expect(gaps[0] >= .milliseconds(20) && gaps[1] >= .milliseconds(40) && gaps[2] >= .milliseconds(80), "\(gaps)")
        #expect(gaps.allSatisfy { $0 < .seconds(1_800) })
    }

    @Test(.timeLimit(.minutes(1))) func withoutBackOffAFailedPassWaitsTheWholeInterval() async throws {
        let passes = Passes { _ in false }
        let loop = Task { await job(.afterEachPass(.milliseconds(150))).run { try passes.pass() } }
        await passes.wait(for: 3)
        loop.cancel()
        await loop.value
        #expect(passes.count >= 3 && passes.gaps.prefix(2).allSatisfy { $0 >= .milliseconds(150) }, "\(passes.gaps)")
    }

    @Test(.timeLimit(.minutes(1))) func theDueTimeIsAskedBeforeEachPass() async throws {
        let passes = Passes { _ in true }
        let asked = Mutex(0)
        let begun = ContinuousClock.now
        let wait = PeriodicJob.Wait.beforeEachPass {
            asked.withLock { $0 += 1 }
            return .milliseconds(100)
        }
        let loop = Task { await job(wait).run { try passes.pass() } }
        await passes.wait(for: 3)
        loop.cancel()
        await loop.value
        let first = try #require(passes.started.withLock { $0.first })
        #expect(first - begun >= .milliseconds(100), "the first pass came before it was due")
        #expect(passes.gaps.prefix(2).allSatisfy { $0 >= .milliseconds(100) }, "\(passes.gaps)")
        #expect(asked.withLock { $0 } >= passes.count)
    }

    /// Cancellation (a service group's shutdown cancels it) ends an hour's wait at once.
    @Test(.timeLimit(.minutes(1))) func cancellationEndsTheWaitAtOnce() async throws {
        let passes = Passes { _ in true }
        let loop = Task { await job(.afterEachPass(.seconds(3_600))).run { try passes.pass() } }
        await passes.wait(for: 1)
        let cancelled = ContinuousClock.now
        loop.cancel()
        await loop.value
        #expect(ContinuousClock.now - cancelled < .seconds(30) && passes.count == 1)
    }
}
