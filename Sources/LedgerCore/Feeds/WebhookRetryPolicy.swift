/// When a webhook delivery that failed is tried again, and when an endpoint gives up.
///
/// After the n-th failed attempt at an event, the next attempt waits
/// `d(n) = min(base × 2^(n−1), maximum)`, scaled by a jitter factor in [½, 1):
/// `delay = d(n)/2 + J mod (d(n)/2 + 1)` microseconds, where J is a 64-bit SplitMix64 value of
/// (seed, endpoint id, position, n). The jitter is seeded and a pure function of those four, so every
/// daemon (and a restarted one) computes the same schedule and a test can recompute it. With the
/// defaults (1 s, 1 h, 24 h) the waits are about 1, 2, 4, … s, then up to an hour each.
///
/// An endpoint whose event has been failing for `giveUpAfter` (from its first failed attempt) is
/// paused; an operator resumes it with a redelivery.
public struct WebhookRetryPolicy: Sendable, Hashable {
    public var baseDelayMicros: Int64
    public var maximumDelayMicros: Int64
    public var giveUpAfterMicros: Int64
    public var seed: UInt64

    public init(
        baseDelayMicros: Int64 = 1_000_000,
        maximumDelayMicros: Int64 = 3_600_000_000,
        giveUpAfterMicros: Int64 = 86_400_000_000,
        seed: UInt64 = 1
    ) {
        self.baseDelayMicros = max(1, baseDelayMicros)
        self.maximumDelayMicros = max(self.baseDelayMicros, maximumDelayMicros)
        self.giveUpAfterMicros = giveUpAfterMicros
        self.seed = seed
    }

    /// The wait before the next attempt after `failedAttempts` (≥ 1) failed attempts at `position`.
    public func delayMicros(afterFailedAttempts failedAttempts: Int, endpoint: String, position: Int64) -> Int64 {
        let doublings = max(0, min(failedAttempts - 1, 62))
        var ceiling = baseDelayMicros
        for _ in 0..<doublings {
            guard ceiling < maximumDelayMicros else { break }
            ceiling = ceiling > maximumDelayMicros / 2 ? maximumDelayMicros : ceiling * 2
        }
        ceiling = min(ceiling, maximumDelayMicros)
        let half = ceiling / 2
        let jitter = Self.mix(seed, endpoint: endpoint, position: position, attempt: failedAttempts)
        return ceiling - half + Int64(jitter % UInt64(half + 1))
    }

    /// Whether an endpoint whose event first failed at `firstFailureMicros` gives up at `nowMicros`.
    public func givesUp(firstFailureMicros: Int64, nowMicros: Int64) -> Bool {
        nowMicros - firstFailureMicros >= giveUpAfterMicros
    }

    /// SplitMix64 over the seed, the endpoint id's bytes (FNV-1a), the position and the attempt.
    static func mix(_ seed: UInt64, endpoint: String, position: Int64, attempt: Int) -> UInt64 {
        var fnv: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in endpoint.utf8 {
            fnv ^= UInt64(byte)
            fnv = fnv &* 0x0000_0100_0000_01b3
        }
        var state = seed ^ fnv ^ (UInt64(bitPattern: position) &* 0x9e37_79b9_7f4a_7c15) ^ (UInt64(attempt) &* 0xbf58_476d_1ce4_e5b9)
        return splitMix(&state)
    }

    static func splitMix(_ state: inout UInt64) -> UInt64 {
        state = state &+ 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
