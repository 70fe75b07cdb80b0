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
        try await MachineGate.shared.with(kind, function)
    }
}

extension Trait where Self == MachineShare {
    public static func machine(_ kind: MachineShare.Kind) -> MachineShare { MachineShare(kind: kind) }
}

/// A readers–writer gate that prefers the readers: `.shared` tests wait only while an `.alone` test runs, and an
/// `.alone` test starts only when no `.shared` test runs or waits — in a full run, typically once the shared tests are
/// done. (Preferring the `.alone` tests made every shared test that arrived behind them wait out a long shared test,
/// and time limits passed in a chain.)
actor MachineGate {
    static let shared = MachineGate()

    private var sharing = 0
    private var alone = false
    private var waitingShared: [CheckedContinuation<Void, Never>] = []
    private var waitingAlone: [CheckedContinuation<Void, Never>] = []

    func with(_ kind: MachineShare.Kind, _ body: @Sendable () async throws -> Void) async throws {
        await enter(kind)
        do {
            try await body()
        } catch {
            leave(kind)
            throw error
        }
        leave(kind)
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
            if alone || sharing > 0 || !waitingAlone.isEmpty {
                await withCheckedContinuation { waitingAlone.append($0) }
            } else {
                alone = true
            }
        }
    }

    private func leave(_ kind: MachineShare.Kind) {
        switch kind {
        case .shared: sharing -= 1
        case .alone: alone = false
        }
        guard !alone else { return }
        if !waitingShared.isEmpty {
            sharing += waitingShared.count
            for waiter in waitingShared { waiter.resume() }
            waitingShared = []
        } else if sharing == 0, !waitingAlone.isEmpty {
            alone = true
            waitingAlone.removeFirst().resume()
        }
    }
}
