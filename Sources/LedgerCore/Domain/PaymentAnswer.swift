import LedgerMacros

/// What a storefront payment came to: the order's state once the acquirer answered (or could not).
@MemberwiseInit
public struct PaymentAnswer: Sendable, Hashable {
    public enum Result: Sendable, Hashable {
        /// The acquirer approved: a hold is placed (and, under automatic capture, captured).
        case succeeded
        /// The issuer declined: the reservation is released; `declineCode` says why.
        case declined
        /// No usable answer: the order waits for recovery, which reverses or releases; the shopper is not charged.
        case acquirerUnreachable
    }

    public var result: Result
    /// The acquirer's PSP reference when there is one, else the order id.
    public var reference: String
    public var orderID: OrderID
    public var orderStatus: OrderStatus
    /// The order's total.
    public var amount: Money
    public var authCode: String?
    public var declineCode: String?
    public var message: String?
}
