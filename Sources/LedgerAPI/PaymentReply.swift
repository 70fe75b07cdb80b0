import LedgerCore
import LedgerServices

/// `POST /payment`'s answer in the storefront app's shape: 200 `succeeded`, 402 `failed` with a
/// `decline_code`, 502 `failed` when the card issuer could not be reached (the shopper is not charged).
public struct PaymentReply: Codable, Sendable, Hashable {
    /// The acquirer's PSP reference, or the order id when there is none.
    public let id: String
    /// `succeeded` or `failed`.
    public let status: String
    public let order_id: String
    public let order_status: String
    /// The order's total in minor units of `currency`.
    public let amount: Int64
    public let currency: String
    public let auth_code: String?
    public let decline_code: String?
    public let message: String?

    public init(_ outcome: PaymentAnswer) {
        id = outcome.reference
        status = outcome.result == .succeeded ? "succeeded" : "failed"
        order_id = outcome.orderID.rawValue
        order_status = outcome.orderStatus.rawValue
        amount = outcome.amount.minorUnits
        currency = outcome.amount.currency.code
        auth_code = outcome.authCode
        decline_code = outcome.declineCode
        message = outcome.message
    }
}
