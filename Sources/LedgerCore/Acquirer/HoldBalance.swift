import LedgerMacros

import struct Foundation.Date

/// The money picture of one hold. At every moment
/// `authorized + incremented = captured + reversed + expired + open` (``satisfiesIdentity``).
/// `reversed` includes the remainder released by a final capture. `refunded` is outside the identity:
/// it is bounded by `captured` instead.
@MemberwiseInit
public struct HoldBalance: Hashable, Sendable, Codable {
    public var authorized: Money
    public var incremented: Money
    public var captured: Money
    public var reversed: Money
    public var expired: Money
    public var open: Money
    public var refunded: Money

    /// Checks the accounting identity in exact integer arithmetic (all amounts share one currency).
    public var satisfiesIdentity: Bool {
        let parts = [authorized, incremented, captured, reversed, expired, open, refunded]
        guard parts.allSatisfy({ $0.currency == authorized.currency && !$0.isNegative }) else { return false }
        let (left, o1) = authorized.minorUnits.addingReportingOverflow(incremented.minorUnits)
        let right = [captured, reversed, expired, open].reduce((0 as Int64, false)) { acc, money in
            let (sum, o) = acc.0.addingReportingOverflow(money.minorUnits)
            return (sum, acc.1 || o)
        }
        return !o1 && !right.1 && left == right.0 && refunded.minorUnits <= captured.minorUnits
    }
}
