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
/// A test's wait for the machine may count against its time limit; `.alone` tests are short (under a minute each).
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

/// A readers–writer gate that prefers the writer: once an `.alone` test waits, new `.shared` tests wait behind it.
actor MachineGate {
    static let shared = MachineGate()

    private var sharing = 0
    private var alone = false
    private var waiting: [(kind: MachineShare.Kind, continuation: CheckedContinuation<Void, Never>)] = []

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

    private func mayEnter(_ kind: MachineShare.Kind) -> Bool {
        switch kind {
        case .shared: !alone && !waiting.contains { $0.kind == .alone }
        case .alone: !alone && sharing == 0
        }
    }

    private func enter(_ kind: MachineShare.Kind) async {
        if waiting.isEmpty && mayEnter(kind) {
            take(kind)
            return
        }
        await withCheckedContinuation { waiting.append((kind, $0)) }
    }

    private func take(_ kind: MachineShare.Kind) {
        switch kind {
        case .shared: sharing += 1
        case .alone: alone = true
        }
    }

    private func leave(_ kind: MachineShare.Kind) {
        switch kind {
        case .shared: sharing -= 1
        case .alone: alone = false
        }
        // Admit waiters in arrival order: an `.alone` one once the machine is free, `.shared` ones until an `.alone`
        // one is first in line.
        while let next = waiting.first {
            let admitted: Bool =
                switch next.kind {
                case .shared: !alone
                case .alone: !alone && sharing == 0
                }
            guard admitted else { break }
            waiting.removeFirst()
            take(next.kind)
            next.continuation.resume()
        }
    }
}
