import LedgerCore

/// The tests' own statement of an order's status from its hold's money, written from what the
/// statuses mean (not from `HoldLifecycle.status`, the code under test), in plain minor units.
public enum HoldOracle {
    /// - Parameters: the hold's captured, refunded, still open and expired amounts, and whether the
    ///   order shipped.
    public static func status(captured: Int64, refunded: Int64, open: Int64, expired: Int64, shipped: Bool) -> OrderStatus {
        if refunded > 0 {
            // Money went back: all that was taken, with nothing left on the card, is a full refund.
            return captured - refunded == 0 && open == 0 ? .refunded : .partiallyRefunded
        }
        if shipped { return .shipped }
        if open > 0 { return captured > 0 ? .partiallyCaptured : .authorized }
        if captured > 0 { return .captured }
        return expired > 0 ? .expired : .voided
    }

    /// The same from a balance (read from the ledger or reported by the acquirer).
    public static func status(_ balance: HoldBalance, shipped: Bool) -> OrderStatus {
        status(
            captured: balance.captured.minorUnits,
            refunded: balance.refunded.minorUnits,
            open: balance.open.minorUnits,
            expired: balance.expired.minorUnits,
            shipped: shipped
        )
    }
}
