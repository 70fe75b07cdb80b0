import LedgerCore
import LedgerMacros

/// What a back-office hold operation came to: the order after it, and what the acquirer applied.
@MemberwiseInit
public struct HoldOperationOutcome: Sendable, Hashable {
    public enum Result: String, Sendable, Hashable, CaseIterable {
        /// The acquirer applied it and the ledger recorded it.
        case applied
        /// The same Idempotency-Key and request were seen before: the first outcome stands, nothing new happened.
        case replayed
        /// The issuer declined an increment: nothing changed; `declineCode` says why.
        case declined
    }

    public var orderID: OrderID
    /// The operation asked for (`increment` for a declined increment).
    public var operation: HoldOperationRequest.Kind
    public var result: Result
    public var orderStatus: OrderStatus
    /// The amount the acquirer applied (or declined), for a replay the one the first request recorded; nil for a
    /// shipment that captured nothing.
    public var amount: Money?
    public var modificationReference: String?
    /// The hold's money after the operation; nil when the order has no hold.
    public var balance: HoldBalance?
    public var declineCode: String?
    public var message: String?
}
