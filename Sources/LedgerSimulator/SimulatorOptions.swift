import LedgerAcquirer
import LedgerCore

/// What one seed sets up, as TigerBeetle's VOPR draws its options from its seed: the catalogue (products, their stock,
/// which few are hot), the acquirer's misbehaviour (declining cards, an unreachable acquirer, how long a call takes on
/// the simulated clock) and the operations' mix (replays, restocks, how far the clock jumps). Drawn from the seed
/// alone, so `--seed N` is the whole reproduction.
package struct SimulatorOptions: Sendable, Hashable, CustomStringConvertible {
    package var seed: UInt64
    /// Products listed at the start (each through the catalog import, as an operator lists them).
    package var products: Int
    /// Units of each product at the start; restocks bring a product back up by as many.
    package var initialStock: Int64
    /// The first `hotProducts` products take `hotPercent` % of the payments: a flash sale on a few.
    package var hotProducts: Int
    package var hotPercent: Int
    /// Payments with a card its issuer declines, per mille.
    package var declinePerMille: Int
    /// Acquirer calls (authorize, capture, increment, void, refund) refused as unreachable before the acquirer applies
    /// anything, per mille (the outcome the ledger sees: no answer).
    package var unavailablePerMille: Int
    /// Most milliseconds an acquirer call takes on the simulated clock (each draws 0…this).
    package var latencyMaxMillis: Int64
    /// Operations that repeat an earlier request under its idempotency key, in %.
    package var replayPercent: Int
    /// Operations that restock a product, per mille.
    package var restockPerMille: Int
    /// Operations that move the clock (up to ``maximumJumpSeconds``) and sweep expired holds, per mille.
    package var sweepPerMille: Int
    package var maximumJumpSeconds: Int64
    /// The capture policy: automatic (captured in full at authorization) in about one seed in four, else on shipment.
    package var automaticCapture: Bool
    /// Acquirer calls whose answer the network loses **after** the acquirer applied them, per mille: the ledger sees no
    /// answer to an authorization it holds, a capture taken (resolved on the spot, or by recovery from its note).
    package var answerLostPerMille: Int

    package init(seed: UInt64) {
        self.seed = seed
        var random = SeededRandom(seed: SeededRandom.mix(seed ^ 0x5349_4D5F_4F50_5453))  // "SIM_OPTS"
        func draw(_ range: ClosedRange<Int64>) -> Int64 { random.int(in: range) }
        products = Int(draw(2...16))
        initialStock = draw(3...200)
        hotProducts = Int(draw(1...Int64(min(3, products))))
        hotPercent = Int(draw(0...90))
        declinePerMille = Int(draw(0...200))
        unavailablePerMille = Int(draw(0...60))
        latencyMaxMillis = draw(1...2_000)
        replayPercent = Int(draw(1...12))
        restockPerMille = Int(draw(5...40))
        sweepPerMille = Int(draw(5...40))
        maximumJumpSeconds = draw(3_600...(10 * 86_400))
        automaticCapture = draw(0...3) == 0
        answerLostPerMille = Int(draw(0...30))
    }

    package var description: String {
        "products \(products) (stock \(initialStock), \(hotProducts) hot taking \(hotPercent) %), declines \(declinePerMille) ‰, "
            + "acquirer unreachable \(unavailablePerMille) ‰, latency ≤ \(latencyMaxMillis) ms, replays \(replayPercent) %, "
            + "restocks \(restockPerMille) ‰, clock jumps ≤ \(maximumJumpSeconds) s and expiry sweeps \(sweepPerMille) ‰, "
            + "capture \(automaticCapture ? "automatic" : "on shipment"), answers lost after applying \(answerLostPerMille) ‰"
    }
}
