/// One back-office operation on an order's hold, as the API received it (amounts still decimal
/// strings: only the order knows its currency).
public struct HoldOperationRequest: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case capture, increment, void, refund, ship
    }

    public var kind: Kind
    public var amount: String?
    public var isFinal: Bool
    public var reason: String?
    public var carrier: String?
    public var tracking: String?

    public init(kind: Kind, amount: String? = nil, isFinal: Bool = false, reason: String? = nil, carrier: String? = nil, tracking: String? = nil) {
        self.kind = kind
        self.amount = amount
        self.isFinal = isFinal
        self.reason = reason
        self.carrier = carrier
        self.tracking = tracking
    }
}
