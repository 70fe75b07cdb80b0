import LedgerMacros

/// One back-office operation on an order's hold, as the API received it (amounts still decimal
/// strings: only the order knows its currency).
@MemberwiseInit
public struct HoldOperationRequest: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case capture, increment, void, refund, ship

        /// Whether a client's retry of the operation could move money a second time: a partial capture, an increment,
        /// a partial void or a refund sent twice is applied twice. These need an `Idempotency-Key` (the same key and
        /// body then replay the first outcome). A second ship is refused (`already_shipped`), so it needs none.
        public var requiresIdempotencyKey: Bool { self != .ship }
    }

    public var kind: Kind
    public var amount: String?
    public var isFinal: Bool = false
    public var reason: String?
    public var carrier: String?
    public var tracking: String?
}
