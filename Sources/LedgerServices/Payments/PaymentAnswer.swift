import LedgerCore

/// What a storefront payment came to: the order's state once the acquirer answered (or could not).
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

    public init(
        result: Result,
        reference: String,
        orderID: OrderID,
        orderStatus: OrderStatus,
        amount: Money,
        authCode: String? = nil,
        declineCode: String? = nil,
        message: String? = nil
    ) {
        self.result = result
        self.reference = reference
        self.orderID = orderID
        self.orderStatus = orderStatus
        self.amount = amount
        self.authCode = authCode
        self.declineCode = declineCode
        self.message = message
    }
}
