import Foundation
import Testing

/// How a test shares this machine with the rest of the suite, as a trait: `@Suite(.machine(.shared))` or
/// `@Suite(.machine(.alone))`.
///
/// Two cores run the whole suite in parallel. Most tests don't care, but a few load the machine on purpose — a flood of
/// a thousand slow clients, a 250 MB upload, every connection slot held — and while they run, the tests that wait
/// for a daemon, a timeout or a database answer within seconds fail for want of CPU (a full run failed 15 such tests,
/// every one of them while a flood ran; each passed alone). So the load tests run `.alone`: never beside one
/// another nor beside a `.shared` test. `.shared` tests (daemons, in-process apps on the test cluster, anything
/// with a deadline) run beside each other as before. Tests without the trait (pure computation) are not held.
/// A test's wait for the machine counts against its time limit: `.alone` tests, which wait for the shared ones to
/// finish, have limits long enough for that wait.
public struct MachineShare: TestTrait, SuiteTrait, TestScoping {
    public enum Kind: Sendable { case shared, alone }
    public let kind: Kind

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // The suite's own scope holds nothing: each test case takes its share, so a suite's tests don't hold the
        // machine while they wait for one another.
        guard testCase != nil else { return try await function() }
        try await MachineGate.shared.with(kind, name: "\(test.id)", function)
    }
}

extension Trait where Self == MachineShare {
    public static func machine(_ kind: MachineShare.Kind) -> MachineShare { MachineShare(kind: kind) }
}

/// A readers–writer gate that prefers the readers: `.shared` tests wait only while an `.alone` test runs, and an
/// `.alone` test starts only when no `.shared` test runs or waits — in a full run, typically once the shared tests are
/// done. (Preferring the `.alone` tests made every shared test that arrived behind them wait out a long shared test,
/// and time limits passed in a chain.)
public actor MachineGate {
    static let shared = MachineGate()

    /// The limits below, and how often the watch looks (a minute in a run; a test of the gate takes less).
    let hangLimit: Duration
    let stallLimit: Duration
    let watchEvery: Duration
    /// What its lines on standard error start with: "MachineGate" for the run's own gate, another for a test's.
    let label: String

    public init(
        label: String = "MachineGate",
        hangLimit: Duration = MachineGate.hangLimit,
        stallLimit: Duration = .seconds(600),
        watchEvery: Duration = .seconds(60)
    ) {
        self.hangLimit = hangLimit
        self.stallLimit = stallLimit
        self.watchEvery = watchEvery
        self.label = label
    }

    private var sharing = 0
    private var alone = false
    private var waitingShared: [CheckedContinuation<Void, Never>] = []
    private var waitingAlone: [CheckedContinuation<Void, Never>] = []

    /// A test case that has run this long (once admitted) is taken for hung: an issue naming it is recorded (and printed
    /// at once), so a run that hangs says which test, instead of reaching CI's time limit with nothing (a CI run once
    /// stopped answering at 280 s with every thread idle: every test suspended on something). The slowest test here
    /// runs about two minutes alone, CI's machine is some three times slower. `LEDGER_TEST_HANG_SECONDS` overrides.
    public static let hangLimit: Duration = .seconds(
        ProcessInfo.processInfo.environment["LEDGER_TEST_HANG_SECONDS"].flatMap(Int.init) ?? 900
    )

    /// The admitted test cases, by a serial number: their names, kinds and since when they run.
    private var running: [Int: (name: String, kind: MachineShare.Kind, since: ContinuousClock.Instant)] = [:]
    private var admitted = 0
    private var watching = false
    /// When a test case last left: shared tests leave every few seconds in a run that moves.
    private var lastLeave = ContinuousClock.now
    /// Set once the shared tests have stood still while `.alone` ones waited (one shared test hung): from then on the
    /// `.alone` tests no longer wait for the shared ones. Without this, the `.alone` tests waiting behind a hung one
    /// filled every slot of Swift Testing's width limit and the whole run stood still, every thread idle, until CI's
    /// time limit, with nothing said (twice in CI).
    private var stalled = false

    public func with(
        _ kind: MachineShare.Kind,
        name: String,
        _ body: @Sendable () async throws -> Void
    ) async throws {
        await enter(kind)
        admitted += 1
        let number = admitted
        running[number] = (name, kind, .now)
        startWatching()
        defer {
            running[number] = nil
            leave(kind)
        }
        // An alarm beside the body, never awaited here: leaving this scope cancels it (and awaits the cancelled sleep),
        // so it rings, recording the issue, only if the body outlives the limit.
        async let _ = alarm(name: name)
        try await body()
    }

    private nonisolated func alarm(name: String) async {
        let limit = hangLimit
        guard (try? await Task.sleep(for: limit)) != nil else { return }
        let state = await describe()
        Issue.record("hung: still running \(limit) after the machine admitted it (\(state))")
        report("HUNG after \(limit): \(name); \(state)")
    }

    /// Every minute, the test cases running longer than two minutes are written to standard error, with the gate's
    /// state: where a run stands when it seems to stand still, from the test process itself.
    private func startWatching() {
        guard !watching else { return }
        watching = true
        Task.detached(priority: .high) { [weak self] in
            while let self, await self.watch() {
                try? await Task.sleep(for: self.watchEvery)
            }
        }
    }

    private func watch() -> Bool {
        let now = ContinuousClock.now
        let long = running.values.filter { now - $0.since > .seconds(120) }.sorted { $0.since < $1.since }
        for test in long {
            report("still running after \((now - test.since).components.seconds) s (\(test.kind)): \(test.name)")
        }
        if !long.isEmpty || (running.isEmpty && !(waitingShared.isEmpty && waitingAlone.isEmpty)) {
            report(describe())
        }
        if !stalled, sharing > 0, !alone, !waitingAlone.isEmpty, now - lastLeave > stallLimit {
            stalled = true
            report(
                "no test has finished for \(stallLimit) while \(waitingAlone.count) alone test(s) wait: a shared one hangs; the alone ones run now (\(describe()))"
            )
            alone = true
            waitingAlone.removeFirst().resume()
        }
        // Nothing admitted or waiting: the watch ends (the next test case starts it again).
        watching = !(running.isEmpty && waitingShared.isEmpty && waitingAlone.isEmpty)
        return watching
    }

    public func describe() -> String {
        "gate: \(running.count) admitted, sharing \(sharing), alone \(alone), waiting: \(waitingShared.count) shared, \(waitingAlone.count) alone"
    }

    /// A line on standard error, unbuffered, after the gate's label (`.ci/run` looks for "MachineGate: HUNG").
    nonisolated func report(_ line: String) {
        FileHandle.standardError.write(Data("\(label): \(line)\n".utf8))
    }

    private func enter(_ kind: MachineShare.Kind) async {
        switch kind {
        case .shared:
            if alone {
                await withCheckedContinuation { waitingShared.append($0) }  // admitted (and counted) by leave
            } else {
                sharing += 1
            }
        case .alone:
            if alone || (sharing > 0 && !stalled) || !waitingAlone.isEmpty {
                await withCheckedContinuation { waitingAlone.append($0) }
            } else {
                alone = true
            }
        }
    }

    private func leave(_ kind: MachineShare.Kind) {
        lastLeave = .now
        switch kind {
        case .shared: sharing -= 1
        case .alone: alone = false
        }
        guard !alone else { return }
        if !waitingShared.isEmpty {
            sharing += waitingShared.count
            for waiter in waitingShared { waiter.resume() }
            waitingShared = []
        } else if sharing == 0 || stalled, !waitingAlone.isEmpty {
            alone = true
            waitingAlone.removeFirst().resume()
        }
    }
}
