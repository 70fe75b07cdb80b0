import LedgerCore
import LedgerServices

/// A hold's money, as decimal strings in its currency (`payment` in hold replies and orders).
public struct HoldFigures: Codable, Sendable, Hashable {
    public let currency, authorized, incremented, captured, reversed, expired, refunded, open: String

    public init(_ b: HoldBalance) {
        currency = b.authorized.currency.code
        authorized = b.authorized.decimalString
        incremented = b.incremented.decimalString
        captured = b.captured.decimalString
        reversed = b.reversed.decimalString
        expired = b.expired.decimalString
        refunded = b.refunded.decimalString
        open = b.open.decimalString
    }
}

/// The answer to `POST /orders/{id}/capture|increment|void|refund|ship`: 200 when applied or replayed,
/// 402 for an increment the issuer declined.
public struct HoldOperationReply: Codable, Sendable, Hashable {
    public let order_id, operation: String
    /// `applied`, `replayed` or `declined`.
    public let result: String
    /// The order's status after the operation.
    public let status: String
    public let amount: String?
    public let psp_modification_reference: String?
    public let payment: HoldFigures?
    public let decline_code, message: String?

    public init(_ outcome: HoldOperationOutcome) {
        order_id = outcome.orderID.rawValue
        operation = outcome.operation.rawValue
        result = outcome.result.rawValue
        status = outcome.orderStatus.rawValue
        amount = outcome.amount?.decimalString
        psp_modification_reference = outcome.modificationReference
        payment = outcome.balance.map(HoldFigures.init)
        decline_code = outcome.declineCode
        message = outcome.message
    }
}
