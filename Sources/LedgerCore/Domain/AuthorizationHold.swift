import struct Foundation.Date

// The authorization hold aggregate: one stream per order's hold (`hold-<order id>`).
//
// Issue 3 only places holds. The state already carries the full money picture of ``HoldBalance``
// (authorized + incremented = captured + reversed + expired + open), so that issue 4's capture,
// increment, void, expiry and refund events extend this stream and its evolve without reshaping it.

/// The issuer approved and holds `amount` on the card until `expiresAt`.
/// Never carries cardholder data: only the network, funding type and last four digits.
public struct AuthorizationHoldPlaced: LedgerEventPayload {
    public static let eventType = "AuthorizationHoldPlaced"
    public static let schemaVersion: Int32 = 1

    public var orderID: OrderID
    public var merchantReference: String
    public var pspReference: String
    public var authCode: String
    @DecimalMoney public var amount: Money
    public var network: CardNetwork?
    public var fundingType: FundingType?
    public var lastFour: String?
    @LedgerTimestamp public var expiresAt: Date
    @LedgerTimestamp public var authorizedAt: Date

    public init(
        orderID: OrderID, merchantReference: String, pspReference: String, authCode: String, amount: Money,
        network: CardNetwork?, fundingType: FundingType?, lastFour: String?, expiresAt: Date, authorizedAt: Date
    ) {
        self.orderID = orderID
        self.merchantReference = merchantReference
        self.pspReference = pspReference
        self.authCode = authCode
        self.amount = amount
        self.network = network
        self.fundingType = fundingType
        self.lastFour = lastFour
        self.expiresAt = expiresAt
        self.authorizedAt = authorizedAt
    }

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id", merchantReference = "merchant_reference", pspReference = "psp_reference"
        case authCode = "auth_code", amount, network, fundingType = "funding_type", lastFour = "last_four"
        case expiresAt = "expires_at", authorizedAt = "authorized_at"
    }
}

/// Every event of a hold stream (issue 4 adds captures, increments, reversals, expiry, refunds).
public enum HoldEvent: Hashable, Sendable {
    case placed(AuthorizationHoldPlaced)

    public var orderID: OrderID {
        switch self {
        case .placed(let e): return e.orderID
        }
    }
}

/// A hold as its stream says it is now.
public struct HoldState: Hashable, Sendable {
    public var orderID: OrderID
    public var pspReference: String
    public var authCode: String
    public var network: CardNetwork?
    public var fundingType: FundingType?
    public var lastFour: String?
    public var expiresAt: Date
    public var authorizedAt: Date
    /// The money picture; `balance.satisfiesIdentity` holds after every event.
    public var balance: HoldBalance
    public private(set) var version: Int64

    /// Whether the hold still reserves money on the card at `now`. A hold past its expiry counts as
    /// released even before the sweeper records the expiry (issue 4).
    public func isOpen(at now: Date) -> Bool { !balance.open.isZero && now < expiresAt }

    public static func evolve(_ state: HoldState?, _ event: HoldEvent) -> HoldState? {
        switch (state, event) {
        case (nil, .placed(let e)):
            let zero = Money.zero(e.amount.currency)
            return HoldState(
                orderID: e.orderID, pspReference: e.pspReference, authCode: e.authCode, network: e.network,
                fundingType: e.fundingType, lastFour: e.lastFour, expiresAt: e.expiresAt, authorizedAt: e.authorizedAt,
                balance: HoldBalance(
                    authorized: e.amount, incremented: zero, captured: zero, reversed: zero, expired: zero,
                    open: e.amount, refunded: zero),
                version: 1)
        case (var state?, .placed):
            // A second placement only comes from a bypassed decider; the first stays authoritative.
            state.version += 1
            return state
        }
    }

    public static func fold<S: Sequence>(_ events: S) -> HoldState? where S.Element == HoldEvent {
        events.reduce(nil as HoldState?) { evolve($0, $1) }
    }
}
