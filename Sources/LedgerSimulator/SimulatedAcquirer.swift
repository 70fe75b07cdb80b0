import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerEngine
import Synchronization

/// The acquirer as the simulated ledger meets it: the pure, seeded acquirer model (``AcquirerModel``), behind a network
/// that is slow on the simulated clock and sometimes unreachable. Each money-moving call first takes 0…`latencyMaxMillis`
/// of simulated time, then with `unavailablePerMille` ‰ fails as unreachable **before** the model sees it (the ledger
/// gets no answer and nothing was applied); a call the model answered loses its answer on the way back with
/// `answerLostPerMille` ‰ (the ledger gets no answer, and the acquirer applied it). Queries are neither delayed nor
/// failed: the expiry sweep asks many at once, and a fault drawn in their racing order would make a run depend on the
/// scheduler. Draws come from a generator of its own, keyed off the seed, so the operations' stream is not disturbed.
package final class SimulatedAcquirer: AcquirerModelWrapper {
    package let model: AcquirerModel
    private let clock: ManualClock
    private let unavailablePerMille: Int64
    private let latencyMaxMillis: Int64
    private let answerLostPerMille: Int64
    private let random: Mutex<SeededRandom>
    private let unreachable = Atomic<Int>(0)
    private let lost = Atomic<Int>(0)

    package init(
        model: AcquirerModel,
        clock: ManualClock,
        seed: UInt64,
        unavailablePerMille: Int,
        latencyMaxMillis: Int64,
        answerLostPerMille: Int = 0
    ) {
        self.model = model
        self.clock = clock
        self.unavailablePerMille = Int64(unavailablePerMille)
        self.latencyMaxMillis = latencyMaxMillis
        self.answerLostPerMille = Int64(answerLostPerMille)
        self.random = Mutex(SeededRandom(seed: SeededRandom.mix(seed ^ 0x4E45_5457_4F52_4B00)))  // "NETWORK"
    }

    /// Calls refused as unreachable so far.
    package var unreachableCalls: Int { unreachable.load(ordering: .relaxed) }
    /// Answers lost after the acquirer applied the call, so far.
    package var lostAnswers: Int { lost.load(ordering: .relaxed) }

    /// The network's part of an answer: `answer`, or lost on its way back (the call was applied all the same).
    private func back<Answer>(_ answer: Answer, _ reference: String) throws(AcquirerError) -> Answer {
        guard answerLostPerMille > 0, random.withLock({ $0.chance(numerator: answerLostPerMille, denominator: 1_000) }) else { return answer }
        lost.add(1, ordering: .relaxed)
        throw AcquirerError(.unavailable, reference: reference, "simulated: the acquirer's answer was lost on its way back")
    }

    /// The network's part of one call: its time, then whether it arrives.
    private func travel(_ reference: String) throws(AcquirerError) {
        let (millis, lost) = random.withLock { random in
            (random.int(in: 0...latencyMaxMillis), random.chance(numerator: unavailablePerMille, denominator: 1_000))
        }
        clock.advance(by: TimeInterval(millis) / 1_000)
        if lost {
            unreachable.add(1, ordering: .relaxed)
            throw AcquirerError(.unavailable, reference: reference, "simulated: the acquirer could not be reached")
        }
    }

    package func authorize(_ r: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse {
        try travel(r.merchantReference)
        return try back(try await model.authorize(r), r.merchantReference)
    }

    package func increment(_ r: IncrementRequest) async throws(AcquirerError) -> ModificationResponse {
        try travel(r.modificationReference)
        return try back(try await model.increment(r), r.modificationReference)
    }

    package func capture(_ r: CaptureRequest) async throws(AcquirerError) -> ModificationResponse {
        try travel(r.modificationReference)
        return try back(try await model.capture(r), r.modificationReference)
    }

    package func reverse(_ r: ReversalRequest) async throws(AcquirerError) -> ModificationResponse {
        try travel(r.modificationReference)
        return try back(try await model.reverse(r), r.modificationReference)
    }

    package func refund(_ r: RefundRequest) async throws(AcquirerError) -> ModificationResponse {
        try travel(r.modificationReference)
        return try back(try await model.refund(r), r.modificationReference)
    }
}
