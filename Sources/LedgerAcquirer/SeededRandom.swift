import LedgerCore

/// The acquirer model's own pseudo-random generator: SplitMix64 (Steele, Lea & Flood 2014).
///
/// Implemented here rather than taken from the standard library because the model must be a pure
/// function of its seed on every platform and Swift version, and its state must be `Codable` so that
/// a snapshot resumes the exact same stream. Not cryptographic; never use it for secrets.
public struct SeededRandom: RandomNumberGenerator, Hashable, Sendable, Codable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { self.state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return SeededRandom.mix(state)
    }

    /// A uniform value in `0..<upperBound` without modulo bias (rejection sampling, Lemire's method).
    public mutating func next(below upperBound: UInt64) -> UInt64 {
        precondition(upperBound > 0, "upper bound must be positive")
        var product = next().multipliedFullWidth(by: upperBound)
        if product.low < upperBound {
            let threshold = (0 &- upperBound) % upperBound
            while product.low < threshold {
                product = next().multipliedFullWidth(by: upperBound)
            }
        }
        return product.high
    }

    /// A uniform `Int` in `range` (closed).
    public mutating func int(in range: ClosedRange<Int64>) -> Int64 {
        let width = UInt64(bitPattern: range.upperBound &- range.lowerBound) &+ 1
        if width == 0 { return Int64(bitPattern: next()) }
        return range.lowerBound &+ Int64(bitPattern: next(below: width))
    }

    /// True with probability `numerator / denominator` (exact: no floating point involved).
    public mutating func chance(numerator: Int64, denominator: Int64) -> Bool {
        guard numerator > 0 else { return false }
        guard numerator < denominator else { return true }
        return next(below: UInt64(denominator)) < UInt64(numerator)
    }

    /// The SplitMix64 output function: a bijection on `UInt64` with good avalanche.
    @inline(__always)
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Identifiers the model hands out, derived from (seed, kind of identifier, counter) only.
///
/// Each kind has its own key derived from the seed, and `mix(key + counter)` is a bijection of the
/// counter, so identifiers of one kind never collide, do not depend on how many random draws the
/// fault knobs made, and change completely with the seed.
enum DerivedIdentifier: UInt64 {
    case pspReference = 0x5053_5052_4546_0001
    case modificationReference = 0x4D4F_4452_4546_0002
    case authCode = 0x4155_5448_434F_0003
    case batchNumber = 0x4241_5443_484E_0004
    case payoutReference = 0x5041_594F_5554_0005
    case disputeReference = 0x4449_5350_5554_0006

    func value(seed: UInt64, counter: UInt64) -> UInt64 {
        let key = SeededRandom.mix(seed ^ rawValue)
        return SeededRandom.mix(key &+ counter)
    }

    /// 16 upper-case hexadecimal digits (fixed width, so references sort and compare as text).
    func hex(seed: UInt64, counter: UInt64) -> String {
        let digits = String(value(seed: seed, counter: counter), radix: 16, uppercase: true)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Six characters from 0-9A-Z, like an issuer approval code (need not be unique).
    func authCode(seed: UInt64, counter: UInt64) -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        var remaining = value(seed: seed, counter: counter)
        var code = ""
        for _ in 0..<6 {
            code.append(alphabet[Int(remaining % 36)])
            remaining /= 36
        }
        return code
    }
}
