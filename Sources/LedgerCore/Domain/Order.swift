import LedgerMacros

import struct Foundation.Date

// The order aggregate: one stream per order (`order-<id>`). It records what was bought at which
// price, and where the payment stands. The shopper's contact and address are personal data kept
// outside the append-only log (so they can be erased); the order holds only an opaque `contactRef`.

// MARK: - Status

/// Where an order stands, across the whole card lifecycle.
///
/// Issue 3's commands reach `pending_payment`, `payment_unknown`, `authorized`, `declined` and
/// `cancelled`; the others are named now so that projections and the HTTP layer can be written once.
public enum OrderStatus: String, Hashable, Sendable, Codable, CaseIterable {
    /// Stock reserved, order opened, the acquirer not yet answered.
    case pendingPayment = "pending_payment"
    /// The acquirer answered 91/96 (or nothing): a hold may or may not exist. Resolved by recovery.
    case paymentUnknown = "payment_unknown"
    case authorized
    case partiallyCaptured = "partially_captured"
    case captured
    case shipped
    case partiallyRefunded = "partially_refunded"
    case refunded
    case voided
    case expired
    case declined
    /// Closed without a hold: the acquirer never saw the payment, or it was reversed after an unknown
    /// outcome. Not in the list; a separate status because "declined" would blame the issuer.
    case cancelled
    /// A dispute is open on the payment and its funds are not debited (an inquiry, a reversed chargeback
    /// awaiting the issuer).
    case disputed
    /// The payment was charged back: a dispute's funds are debited, or it was accepted or lost.
    case chargedBack = "charged_back"

    /// Whether the acquirer's answer is still awaited (the order is a recovery candidate).
    public var awaitsPayment: Bool { self == .pendingPayment || self == .paymentUnknown }

    /// Whether money was authorized or captured and not all of it went back: such an order can ship.
    public var isPaid: Bool {
        switch self {
        case .authorized, .partiallyCaptured, .captured, .partiallyRefunded: return true
        default: return false
        }
    }
}

/// Why an order was closed without a payment.
public enum OrderCancellationReason: String, Hashable, Sendable, Codable, CaseIterable {
    /// Recovery asked the acquirer, which has no payment with the order's reference.
    case paymentNotFound = "payment_not_found"
    /// The outcome stayed unknown; the payment was reversed at the acquirer to be sure no hold remains.
    case reversedAfterUnknownOutcome = "reversed_after_unknown_outcome"
    /// The acquirer has the authorization but its hold is no longer open (reversed or expired).
    case holdNotOpen = "hold_not_open"
    /// An operator closed it.
    case operatorRequest = "operator_request"
}

/// The shipping method as chosen for an order, frozen at opening.
@MemberwiseInit
public struct ShippingSelection: Hashable, Sendable, Codable {
    public var shippingMethodID: ShippingMethodID
    public var name: String
    public var transitDays: Int
    @DecimalMoney public var price: Money

    enum CodingKeys: String, CodingKey {
        case shippingMethodID = "shipping_method_id"
        case name
        case transitDays = "transit_days"
        case price
    }
}

// MARK: - Events

/// An order was opened and is waiting for payment; its stock is reserved in the same append.
@MemberwiseInit
public struct OrderOpened: LedgerEventPayload {
    public static let eventType = "OrderOpened"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.orderOpened

    public var orderID: OrderID
    /// The reference sent to the acquirer (the order id): its idempotency key there and recovery's query key.
    public var merchantReference: String
    public var lines: [OrderLine]
    public var shipping: ShippingSelection
    public var amounts: OrderAmounts
    /// Opaque reference to the shipping contact, held outside the log. Never the contact data itself.
    public var contactRef: String
    @LedgerTimestamp public var openedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case merchantReference = "merchant_reference"
        case lines, shipping, amounts
        case contactRef = "contact_ref"
        case openedAt = "opened_at"
    }
}

/// The issuer approved: the order is authorized (its hold is recorded on the hold stream in the same append).
@MemberwiseInit
public struct OrderAuthorized: LedgerEventPayload {
    public static let eventType = "OrderAuthorized"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.orderAuthorized

    public var orderID: OrderID
    public var pspReference: String
    @DecimalMoney public var amount: Money
    @LedgerTimestamp public var authorizedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case pspReference = "psp_reference"
        case amount
        case authorizedAt = "authorized_at"
    }
}

/// The issuer declined (05, 51, 54, …): the order is declined; its stock is released in the same append.
@MemberwiseInit
public struct PaymentDeclined: LedgerEventPayload {
    public static let eventType = "PaymentDeclined"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.paymentDeclined

    public var orderID: OrderID
    public var responseCode: ResponseCode
    /// The code's meaning, for the app's reply and the back office.
    public var message: String
    /// The acquirer's reference of the declined attempt, if it gave one.
    public var pspReference: String?

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case responseCode = "response_code"
        case message
        case pspReference = "psp_reference"
    }
}

/// The acquirer answered 91/96: nobody knows whether a hold exists. Stock stays reserved until recovery.
@MemberwiseInit
public struct PaymentOutcomeUnknown: LedgerEventPayload {
    public static let eventType = "PaymentOutcomeUnknown"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.paymentOutcomeUnknown

    public var orderID: OrderID
    public var responseCode: ResponseCode
    public var message: String

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case responseCode = "response_code"
        case message
    }
}

/// The order was closed without a payment (recovery or operator); its stock is released in the same append.
@MemberwiseInit
public struct OrderCancelled: LedgerEventPayload {
    public static let eventType = "OrderCancelled"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.orderCancelled

    public var orderID: OrderID
    public var reason: OrderCancellationReason

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case reason
    }
}

/// A hold operation (capture, increment, void, expiry, refund) changed the order's payment; the
/// money itself is on the hold stream, in the same append. `status` is the order's status after it.
@MemberwiseInit
public struct OrderPaymentUpdated: LedgerEventPayload {
    public static let eventType = "OrderPaymentUpdated"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.orderPaymentUpdated

    public var orderID: OrderID
    /// `capture`, `increment`, `void`, `expire` or `refund`.
    public var operation: String
    public var status: OrderStatus

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case operation, status
    }
}

/// The goods left the warehouse (their reservation became a sale in the same append).
@MemberwiseInit
public struct OrderShipped: LedgerEventPayload {
    public static let eventType = "OrderShipped"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.orderShipped

    public var orderID: OrderID
    public var carrier: String?
    public var tracking: String?
    @LedgerTimestamp public var shippedAt: Date
    /// The order's status after the shipment (normally `shipped`).
    public var status: OrderStatus

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case carrier, tracking
        case shippedAt = "shipped_at"
        case status
    }
}

/// Every event of an order stream.
public enum OrderEvent: Hashable, Sendable {
    case opened(OrderOpened)
    case authorized(OrderAuthorized)
    case paymentDeclined(PaymentDeclined)
    case paymentOutcomeUnknown(PaymentOutcomeUnknown)
    case cancelled(OrderCancelled)
    case paymentUpdated(OrderPaymentUpdated)
    case shipped(OrderShipped)

    public var orderID: OrderID {
        switch self {
        case .opened(let e): return e.orderID
        case .authorized(let e): return e.orderID
        case .paymentDeclined(let e): return e.orderID
        case .paymentOutcomeUnknown(let e): return e.orderID
        case .cancelled(let e): return e.orderID
        case .paymentUpdated(let e): return e.orderID
        case .shipped(let e): return e.orderID
        }
    }
}

// MARK: - State

/// An order as its stream says it is now.
public struct OrderState: Hashable, Sendable {
    public var id: OrderID
    public var merchantReference: String
    public var status: OrderStatus
    public var lines: [OrderLine]
    public var shipping: ShippingSelection
    public var amounts: OrderAmounts
    public var contactRef: String
    public var openedAt: Date
    /// The acquirer's reference once authorized (the app's reply `id`), or of a declined attempt.
    public var pspReference: String?
    /// The last non-approved response code (decline or unknown outcome) and its message.
    public var lastResponseCode: ResponseCode?
    public var lastResponseMessage: String?
    public var cancellationReason: OrderCancellationReason?
    /// Set once the order shipped.
    public var shipment: OrderShipped?
    /// The stream version this state reflects.
    public private(set) var version: Int64

    /// Whether the order still keeps its stock reserved: until it ships, while payment is awaited or
    /// something paid remains to ship. Ended payments (declined, cancelled, voided, expired, refunded
    /// in full before shipment) released it; a shipment sold it.
    public var holdsStock: Bool {
        switch status {
        case .pendingPayment, .paymentUnknown, .authorized, .partiallyCaptured, .captured: return true
        // A dispute leaves the stock as it was: reserved until shipped (only a recorded return moves it).
        case .partiallyRefunded, .disputed, .chargedBack: return shipment == nil
        case .shipped, .refunded, .voided, .expired, .declined, .cancelled: return false
        }
    }

    public static func evolve(_ state: OrderState?, _ event: OrderEvent) -> OrderState? {
        guard var state else {
            guard case .opened(let e) = event else { return nil }
            return OrderState(
                id: e.orderID,
                merchantReference: e.merchantReference,
                status: .pendingPayment,
                lines: e.lines,
                shipping: e.shipping,
                amounts: e.amounts,
                contactRef: e.contactRef,
                openedAt: e.openedAt,
                pspReference: nil,
                lastResponseCode: nil,
                lastResponseMessage: nil,
                cancellationReason: nil,
                shipment: nil,
                version: 1
            )
        }
        switch event {
        case .opened:
            break  // only a bypassed decider writes a second one; the first stays authoritative
        case .authorized(let e):
            state.status = .authorized
            state.pspReference = e.pspReference
        case .paymentDeclined(let e):
            state.status = .declined
            state.pspReference = e.pspReference
            state.lastResponseCode = e.responseCode
            state.lastResponseMessage = e.message
        case .paymentOutcomeUnknown(let e):
            state.status = .paymentUnknown
            state.lastResponseCode = e.responseCode
            state.lastResponseMessage = e.message
        case .cancelled(let e):
            state.status = .cancelled
            state.cancellationReason = e.reason
        case .paymentUpdated(let e):
            state.status = e.status
        case .shipped(let e):
            state.status = e.status
            state.shipment = e
        }
        state.version += 1
        return state
    }

    public static func fold<S: Sequence>(_ events: S) -> OrderState? where S.Element == OrderEvent {
        events.reduce(nil as OrderState?) { evolve($0, $1) }
    }

    /// What the storefront reply needs (`status`, `id`, decline code and message).
    public var paymentOutcome: PaymentOutcome {
        switch status {
        case .pendingPayment, .paymentUnknown:
            return .pending(code: lastResponseCode, message: lastResponseMessage)
        case .declined:
            return .failed(code: lastResponseCode, message: lastResponseMessage ?? "declined")
        case .cancelled:
            return .failed(code: lastResponseCode, message: "payment not completed")
        case .voided, .expired:
            return .failed(code: nil, message: status.rawValue)
        case .authorized, .partiallyCaptured, .captured, .shipped, .partiallyRefunded, .refunded, .disputed, .chargedBack:
            return .succeeded(pspReference: pspReference ?? "")
        }
    }
}

/// The payment's outcome as the storefront app sees it: `"succeeded"` only with a hold behind it.
public enum PaymentOutcome: Hashable, Sendable {
    /// Reply `{"status": "succeeded", "id": pspReference, "order_id": …}`.
    case succeeded(pspReference: String)
    /// Reply `status: "failed"` with the decline code (if any) and message.
    case failed(code: ResponseCode?, message: String)
    /// Not yet known; to the app this is a failure too (it only trusts "succeeded"), but the server
    /// should say the outcome is being resolved rather than that the card was declined.
    case pending(code: ResponseCode?, message: String?)

    /// The reply's `status` field.
    public var replyStatus: String {
        switch self {
        case .succeeded: return "succeeded"
        case .failed: return "failed"
        case .pending: return "pending"
        }
    }
}
