import LedgerAcquirer
import LedgerCore
import LedgerMacros
import Synchronization

/// Seeded misbehaviours of the acquirer service on the wire (off by default), for testing the ledger's
/// adapter and recovery: each knob fires with its probability, decided by a generator seeded with
/// ``seed``, so the same seed and the same sequence of requests misbehave the same way.
///
/// Only requests that change something (and status inquiries, for latency) are subject to them;
/// `/health` never is.
@MemberwiseInit
public struct WireFaults: Hashable, Sendable, Codable {
    public var seed: UInt64 = 0
    /// Sleep ``latencyMilliseconds`` before answering.
    public var latency: Rate = .never
    public var latencyMilliseconds: Int = 0
    /// Apply (and commit) the request, then keep the client waiting ``hangMilliseconds`` (beyond its
    /// read timeout) before answering: the client sees a timeout, the acquirer has applied it.
    public var timeoutAfterApplying: Rate = .never
    public var hangMilliseconds: Int = 3_000
    /// Answer 500 without applying anything.
    public var serverErrorBeforeApplying: Rate = .never
    /// Apply (and commit) the request, then close the connection without an answer.
    public var resetAfterApplying: Rate = .never
    /// Apply the request twice, as if the network had delivered it twice, and answer the second time.
    public var duplicateAnswer: Rate = .never
    /// Apply the request, then answer with the answer the service gave to the request before it.
    public var earlierAnswer: Rate = .never

    public static let none = WireFaults()

    public var isOff: Bool { self == WireFaults(seed: seed, latencyMilliseconds: latencyMilliseconds, hangMilliseconds: hangMilliseconds) }
}

extension Rate {
    /// Probability zero.
    public static let never = Rate(numerator: 0, denominator: 1)
}

/// How often the service actually misbehaved, by knob (the property names of ``WireFaults``): a test
/// reads it to know its fault fired, whether or not the client could see it.
public final class InjectedFaults: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    public init() {}

    /// Times the fault named `knob` (`latency`, `timeoutAfterApplying`, …) was injected.
    public func count(_ knob: String) -> Int { counts.withLock { $0[knob] ?? 0 } }

    func record(_ knob: String) { counts.withLock { $0[knob, default: 0] += 1 } }
}

/// What the service does to one request, decided before it is handled.
struct FaultPlan: Sendable, Hashable {
    var delayMilliseconds = 0
    var serverErrorBeforeApplying = false
    var hangMillisecondsAfterApplying = 0
    var resetAfterApplying = false
    var applyTwice = false
    var answerEarlier = false
}

/// The seeded generator behind ``WireFaults``, one draw per knob per request.
final class FaultDecider: Sendable {
    let faults: WireFaults
    private let random: Mutex<SeededRandom>

    init(_ faults: WireFaults) {
        self.faults = faults
        self.random = Mutex(SeededRandom(seed: SeededRandom.mix(faults.seed ^ 0x5749_5245_4641_554C)))
    }

    func plan() -> FaultPlan {
        guard !faults.isOff else { return FaultPlan() }
        return random.withLock { random in
            func fires(_ rate: Rate) -> Bool { random.chance(numerator: rate.numerator, denominator: rate.denominator) }
            var plan = FaultPlan()
            if fires(faults.latency) { plan.delayMilliseconds = faults.latencyMilliseconds }
            if fires(faults.serverErrorBeforeApplying) {
                plan.serverErrorBeforeApplying = true
                return plan
            }
            if fires(faults.timeoutAfterApplying) { plan.hangMillisecondsAfterApplying = faults.hangMilliseconds }
            if fires(faults.resetAfterApplying) { plan.resetAfterApplying = true }
            if fires(faults.duplicateAnswer) { plan.applyTwice = true }
            if fires(faults.earlierAnswer) { plan.answerEarlier = true }
            return plan
        }
    }
}
