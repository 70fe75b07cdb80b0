import LedgerCore
import LedgerMacros

/// One fault knob: fires for the references listed in ``targets`` and otherwise with ``probability``.
///
/// Off by default. Probabilities are exact ratios (``Rate``) decided by the model's seeded generator,
/// so the same seed and commands inject the same faults. A knob with probability 0 (or a target hit)
/// draws nothing from the generator, so knobs that are off never disturb the random stream.
@MemberwiseInit
public struct FaultKnob: Hashable, Sendable, Codable {
    /// Chance per line (per batch for the payout knob); values ≥ 1 always fire.
    public var probability: Rate = Rate(numerator: 0, denominator: 1)
    /// References that always fire: our modification references (line knobs) or batch references (payout knob).
    public var targets: [String] = []

    public static let off = FaultKnob()

    /// Fires with probability `rate` / 1000 (0: ``off``).
    public static func perMille(_ rate: Int) -> FaultKnob {
        rate <= 0 ? .off : FaultKnob(probability: Rate(numerator: Int64(rate), denominator: 1_000))
    }

    func fires(for reference: String, random: inout SeededRandom) -> Bool {
        if targets.contains(reference) { return true }
        return random.chance(numerator: probability.numerator, denominator: probability.denominator)
    }
}

/// The acquirer's misbehaviours, for testing reconciliation. Each is off by default.
///
/// Per line, knobs are decided in this order: move to next batch, drop, alter amount, alter fee,
/// duplicate. A moved or dropped line is not considered by the later knobs.
@MemberwiseInit
public struct FaultConfiguration: Hashable, Sendable, Codable {
    /// The line is left out of the report and the payout; the acquirer treats the item as never
    /// submitted (it can be submitted again) — the ledger sees "missing at acquirer".
    public var dropLine: FaultKnob = .off
    /// The line appears twice and is paid twice — the ledger sees "duplicate".
    public var duplicateLine: FaultKnob = .off
    /// The line's gross (and so its net) is one minor unit higher — "amount mismatch".
    public var alterAmount: FaultKnob = .off
    /// One fee component (interchange, or the commission when blended) is one minor unit higher and
    /// the net one lower, so the line stays self-consistent — "fee mismatch".
    public var alterFee: FaultKnob = .off
    /// The line is settled in the next batch instead (with that batch's number and payout) — "timing".
    public var moveToNextBatch: FaultKnob = .off
    /// The payout (MerchantPayout line and deposit) is ``shortPaymentMinorUnits`` less than the
    /// sum of the nets — "payout mismatch".
    public var shortPayPayout: FaultKnob = .off
    public var shortPaymentMinorUnits: Int64 = 100

    public static let none = FaultConfiguration()
}

/// Which fault was injected.
public enum FaultKind: String, Hashable, Sendable, Codable, CaseIterable {
    case dropLine, duplicateLine, alterAmount, alterFee, moveToNextBatch, shortPayPayout
}

/// A record of one injected fault, so tests and simulations can check that reconciliation finds it.
@MemberwiseInit
public struct InjectedFault: Hashable, Sendable, Codable {
    public var kind: FaultKind
    public var batchNumber: Int
    /// The line's modification merchant reference, or the batch reference for a short payment.
    public var reference: String
}
