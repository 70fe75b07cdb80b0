import LedgerMacros

/// One back-office operation on an order's hold, as the API received it (amounts still decimal
/// strings: only the order knows its currency).
@MemberwiseInit
public struct HoldOperationRequest: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case capture, increment, void, refund, ship
    }

    public var kind: Kind
    public var amount: String?
    public var isFinal: Bool = false
    public var reason: String?
    public var carrier: String?
    public var tracking: String?
}
