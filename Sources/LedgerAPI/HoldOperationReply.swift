import LedgerCore
import LedgerServices

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
