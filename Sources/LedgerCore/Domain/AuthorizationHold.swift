import LedgerMacros

import struct Foundation.Date

// The authorization hold aggregate: one stream per order's hold (`hold-<order id>`).
//
// Issue 3 only places holds. The state already carries the full money picture of ``HoldBalance``
// (authorized + incremented = captured + reversed + expired + open), so that the hold operations' capture,
// increment, void, expiry and refund events extend this stream and its evolve without reshaping it.

/// The issuer approved and holds `amount` on the card until `expiresAt`.
/// Never carries cardholder data: only the network, funding type and last four digits.
@MemberwiseInit
public struct AuthorizationHoldPlaced: LedgerEventPayload {
    public static let eventType = "AuthorizationHoldPlaced"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.authorizationHoldPlaced

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

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case merchantReference = "merchant_reference"
        case pspReference = "psp_reference"
        case authCode = "auth_code"
        case amount, network
        case fundingType = "funding_type"
        case lastFour = "last_four"
        case expiresAt = "expires_at"
        case authorizedAt = "authorized_at"
    }
}

/// Every event of a hold stream: its placement, then the acquirer's modifications and the expiry.
public enum HoldEvent: Hashable, Sendable {
    case placed(AuthorizationHoldPlaced)
    case incremented(HoldIncremented)
    case captured(HoldCaptured)
    case reversed(HoldReversed)
    case expired(HoldExpired)
    case refunded(HoldRefunded)

    public var orderID: OrderID {
        switch self {
        case .placed(let e): return e.orderID
        case .incremented(let e): return e.orderID
        case .captured(let e): return e.orderID
        case .reversed(let e): return e.orderID
        case .expired(let e): return e.orderID
        case .refunded(let e): return e.orderID
        }
    }
}

/// A hold as its stream says it is now.
public struct HoldState: Hashable, Sendable {
    public var orderID: OrderID
    public var merchantReference: String
    public var pspReference: String
    public var authCode: String
    public var network: CardNetwork?
    public var fundingType: FundingType?
    public var lastFour: String?
    public var expiresAt: Date
    public var authorizedAt: Date
    /// The money picture; `balance.satisfiesIdentity` holds after every event.
    public var balance: HoldBalance
    /// Set once a capture was final (the remainder was released with it): nothing more can be captured.
    public var finalCaptured: Bool
    /// Set once the hold lapsed and its open amount was released.
    public var expiredAt: Date?
    /// Modification references already recorded, so a retried acquirer answer is recognised.
    public var modificationReferences: Set<String>
    public private(set) var version: Int64

    /// Whether the hold still reserves money on the card at `now`. A hold past its expiry counts as
    /// released even before the sweeper records the expiry.
    public func isOpen(at now: Date) -> Bool { !isClosed && now < expiresAt }

    /// Nothing is open any more (captured in full or finally, reversed, or expired): accepts no
    /// capture, increment or reversal. Refunds of what was captured remain possible.
    public var isClosed: Bool { balance.open.isZero || finalCaptured || expiredAt != nil }

    /// What can still be refunded: captured − refunded.
    public var refundable: Money { balance.captured.minus(balance.refunded) }

    public static func evolve(_ state: HoldState?, _ event: HoldEvent) -> HoldState? {
        guard var state else {
            guard case .placed(let e) = event else { return nil }
            let zero = Money.zero(e.amount.currency)
            return HoldState(
                orderID: e.orderID,
                merchantReference: e.merchantReference,
                pspReference: e.pspReference,
                authCode: e.authCode,
                network: e.network,
                fundingType: e.fundingType,
                lastFour: e.lastFour,
                expiresAt: e.expiresAt,
                authorizedAt: e.authorizedAt,
                balance: HoldBalance(
                    authorized: e.amount,
                    incremented: zero,
                    captured: zero,
                    reversed: zero,
                    expired: zero,
                    open: e.amount,
                    refunded: zero
                ),
                finalCaptured: false,
                expiredAt: nil,
                modificationReferences: [],
                version: 1
            )
        }
        // Evolve trusts the log (the decider checked); arithmetic that only a corrupted log could break traps.
        switch event {
        case .placed:
            break  // a second placement only comes from a bypassed decider; the first stays authoritative
        case .incremented(let e):
            state.balance.incremented = state.balance.incremented.plus(e.amount)
            state.balance.open = state.balance.open.plus(e.amount)
            state.modificationReferences.insert(e.modificationReference)
        case .captured(let e):
            state.balance.captured = state.balance.captured.plus(e.amount)
            state.balance.reversed = state.balance.reversed.plus(e.released)
            state.balance.open = state.balance.open.minus(e.amount).minus(e.released)
            if e.isFinal { state.finalCaptured = true }
            state.modificationReferences.insert(e.modificationReference)
        case .reversed(let e):
            state.balance.reversed = state.balance.reversed.plus(e.amount)
            state.balance.open = state.balance.open.minus(e.amount)
            state.modificationReferences.insert(e.modificationReference)
        case .expired(let e):
            state.balance.expired = state.balance.expired.plus(e.amount)
            state.balance.open = state.balance.open.minus(e.amount)
            state.expiredAt = e.expiredAt
        case .refunded(let e):
            state.balance.refunded = state.balance.refunded.plus(e.amount)
            state.modificationReferences.insert(e.modificationReference)
        }
        assert(state.balance.satisfiesIdentity, "hold \(state.orderID): the money identity broke at version \(state.version + 1)")
        state.version += 1
        return state
    }

    public static func fold<S: Sequence>(_ events: S) -> HoldState? where S.Element == HoldEvent {
        events.reduce(nil as HoldState?) { evolve($0, $1) }
    }
}

extension Money {
    /// Sum in one currency, for folds over a trusted log: a currency mix or overflow is a corrupted
    /// log (the deciders never write one) and traps instead of producing a wrong balance.
    func plus(_ other: Money) -> Money {
        precondition(currency == other.currency, "currency mix in one balance")
        return Money(minorUnits: minorUnits + other.minorUnits, currency: currency)
    }

    func minus(_ other: Money) -> Money {
        precondition(currency == other.currency, "currency mix in one balance")
        return Money(minorUnits: minorUnits - other.minorUnits, currency: currency)
    }
}
