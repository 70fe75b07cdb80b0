import LedgerMacros

import struct Foundation.Date

// The life of an authorization hold after it is placed, as pure steps around one
// acquirer call, like the storefront payment:
//
//   prepare(operation) ──► the acquirer request to send (or a rejection: nothing is sent, nothing appended)
//   (caller: Acquirer.capture / increment / reverse / refund, keyed by our modification reference)
//   record(operation, answer) ──► one AppendPlan: the hold's event + the order's new status
//                                  (+ the stock's sale or release)
//   expire(order, hold, now) ──► the hold's expiry + the order's new status (+ stock released),
//                                  no acquirer call: the issuer lets a hold lapse by itself
//
// Money lives on the hold stream (the acquirer's facts: amounts, references); the order stream
// records what the operation did to the order (its status, its shipment), in the same append, so
// that each stream tells its own story and a version check on either catches a concurrent change.
//
// Stock: "on hand" counts units physically in the warehouse, so a reservation becomes a sale when the
// goods ship (with the capture, under the default "capture on shipment" policy). It returns to
// available when the order ends with nothing to ship: the hold was voided or expired before any
// capture, or everything captured was refunded before shipment.

// MARK: - Hold events

/// The issuer added `amount` to the open hold (incremental authorization).
@MemberwiseInit
public struct HoldIncremented: LedgerEventPayload {
    public static let eventType = "HoldIncremented"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.holdIncremented

    public var orderID: OrderID
    @DecimalMoney public var amount: Money
    /// Our reference of this modification at the acquirer (its idempotency key there).
    public var modificationReference: String
    /// The acquirer's reference of this modification.
    public var pspModificationReference: String
    @LedgerTimestamp public var incrementedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case amount
        case modificationReference = "modification_reference"
        case pspModificationReference = "psp_modification_reference"
        case incrementedAt = "incremented_at"
    }
}

/// `amount` of the hold was captured (taken from the card). A final capture also released the
/// rest of the open amount (`released`), which counts as reversed.
@MemberwiseInit
public struct HoldCaptured: LedgerEventPayload {
    public static let eventType = "HoldCaptured"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.holdCaptured

    public var orderID: OrderID
    @DecimalMoney public var amount: Money
    public var isFinal: Bool
    @DecimalMoney public var released: Money
    public var modificationReference: String
    public var pspModificationReference: String
    @LedgerTimestamp public var capturedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case amount
        case isFinal = "final"
        case released
        case modificationReference = "modification_reference"
        case pspModificationReference = "psp_modification_reference"
        case capturedAt = "captured_at"
    }
}

/// `amount` of the open hold was voided (reversed) at our request.
@MemberwiseInit
public struct HoldReversed: LedgerEventPayload {
    public static let eventType = "HoldReversed"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.holdReversed

    public var orderID: OrderID
    @DecimalMoney public var amount: Money
    public var modificationReference: String
    public var pspModificationReference: String
    @LedgerTimestamp public var reversedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case amount
        case modificationReference = "modification_reference"
        case pspModificationReference = "psp_modification_reference"
        case reversedAt = "reversed_at"
    }
}

/// The hold passed its expiry uncaptured: its open `amount` went back to the card's open-to-buy.
@MemberwiseInit
public struct HoldExpired: LedgerEventPayload {
    public static let eventType = "HoldExpired"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.holdExpired

    public var orderID: OrderID
    @DecimalMoney public var amount: Money
    /// The hold's expiry (when the issuer released it), not when the sweeper noticed.
    @LedgerTimestamp public var expiredAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case amount
        case expiredAt = "expired_at"
    }
}

/// `amount` of what was captured went back to the cardholder.
@MemberwiseInit
public struct HoldRefunded: LedgerEventPayload {
    public static let eventType = "HoldRefunded"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.holdRefunded

    public var orderID: OrderID
    @DecimalMoney public var amount: Money
    public var reason: String
    public var modificationReference: String
    public var pspModificationReference: String
    @LedgerTimestamp public var refundedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case amount, reason
        case modificationReference = "modification_reference"
        case pspModificationReference = "psp_modification_reference"
        case refundedAt = "refunded_at"
    }
}

// MARK: - Operations

/// What an operator (or the shipment policy) asks of an order's hold.
public enum HoldOperation: Hashable, Sendable {
    /// Capture `amount` (default: all that is open). A final capture releases the remainder.
    case capture(amount: Money?, isFinal: Bool)
    /// Ask the issuer to add `amount` to the open hold.
    case increment(amount: Money)
    /// Void `amount` of the open hold (default: all of it).
    case void(amount: Money?)
    /// Return `amount` of what was captured, for `reason`.
    case refund(amount: Money, reason: String)
    /// Mark the order shipped; any amount still open is captured (finally) with it.
    case ship(carrier: String?, tracking: String?)

    /// The operation's name in references, metadata and replies.
    public var name: String {
        switch self {
        case .capture: return "capture"
        case .increment: return "increment"
        case .void: return "void"
        case .refund: return "refund"
        case .ship: return "ship"
        }
    }
}

/// What to send to the acquirer for an operation (values out: the caller does the call).
public enum HoldAcquirerCall: Hashable, Sendable {
    case capture(CaptureRequest)
    case increment(IncrementRequest)
    case reverse(ReversalRequest)
    case refund(RefundRequest)
    /// Nothing to ask (a shipment with nothing left open).
    case none
}

/// Why a hold operation was refused. Nothing is sent to the acquirer and nothing is appended.
public enum HoldRejection: Error, Hashable, Sendable, CustomStringConvertible {
    case unknownOrder(OrderID)
    /// The order has no hold (never authorized: pending, declined, cancelled).
    case notAuthorized(order: OrderID, status: OrderStatus)
    /// Nothing is open on the hold any more (captured in full or finally, voided, expired).
    case holdClosed(order: OrderID, status: OrderStatus)
    /// The hold passed its expiry; the sweeper is about to record it.
    case holdLapsed(order: OrderID, expiresAt: Date)
    case nonPositiveAmount(Money)
    case currencyMismatch(expected: Currency, got: Currency)
    case exceedsOpen(requested: Money, open: Money)
    case exceedsRefundable(requested: Money, refundable: Money)
    case amountOutOfRange(Money)
    case missingReason
    case alreadyShipped(OrderID)
    /// A refund of an order charged back (debited, accepted or lost): the money is already back with
    /// the cardholder (as Stripe's `charge_disputed`). A won or reversed dispute allows refunds again.
    case chargedBack(OrderID)
    /// Nothing was or can be captured, so there is nothing to ship.
    case nothingToShip(order: OrderID, status: OrderStatus)
    /// The acquirer's answer does not belong to this operation.
    case responseMismatch(String)
    /// The product state given does not show the order's reservation although the order still holds
    /// stock: it was read before another writer's change. Decide again on a fresh read.
    case stockOutOfDate(ProductID)

    public var description: String {
        switch self {
        case .unknownOrder(let id): return "unknown order \(id)"
        case .notAuthorized(let id, let status): return "order \(id) has no authorization hold (it is \(status.rawValue))"
        case .holdClosed(let id, let status): return "the hold of order \(id) is closed (order \(status.rawValue))"
        case .holdLapsed(let id, let at): return "the hold of order \(id) expired at \(at)"
        case .nonPositiveAmount(let m): return "amount \(m) must be positive"
        case .currencyMismatch(let expected, let got): return "currency \(got.code) is not the order's \(expected.code)"
        case .exceedsOpen(let requested, let open): return "amount \(requested) exceeds the open amount \(open)"
        case .exceedsRefundable(let requested, let refundable): return "amount \(requested) exceeds the refundable \(refundable)"
        case .amountOutOfRange(let m): return "amount \(m) is out of range"
        case .missingReason: return "a refund needs a reason"
        case .alreadyShipped(let id): return "order \(id) already shipped"
        case .chargedBack(let id):
            return "order \(id) is charged back: the cardholder's bank already returned the funds, so a refund would pay them twice"
        case .nothingToShip(let id, let status): return "order \(id) has nothing paid to ship (it is \(status.rawValue))"
        case .responseMismatch(let why): return "acquirer response does not fit the operation: \(why)"
        case .stockOutOfDate(let id): return "the stock of \(id) was read before a later change; read it again"
        }
    }
}

// MARK: - Deciders

public enum HoldLifecycle {
    /// The acquirer reference of a modification: unique per order, operation and caller key, so a
    /// retry with the same key is the same modification at the acquirer (applied at most once).
    public static func modificationReference(order: OrderState, operation: HoldOperation, key: String) -> String {
        "\(order.merchantReference)-\(operation.name)-\(key)"
    }

    /// Step 1: checks the operation against the order and its hold at `now`, and says what to ask
    /// the acquirer. A rejection here sends nothing and appends nothing.
    public static func prepare(
        _ operation: HoldOperation,
        order: OrderState?,
        hold: HoldState?,
        modificationReference: String,
        now: Date
    ) -> Result<HoldAcquirerCall, HoldRejection> {
        guard let order else { return .failure(.unknownOrder(hold?.orderID ?? OrderID("unknown")!)) }
        guard let hold else { return .failure(.notAuthorized(order: order.id, status: order.status)) }
        let reference = hold.merchantReference
        let currency = hold.balance.open.currency
        func check(_ amount: Money) -> HoldRejection? {
            guard amount.currency == currency else { return .currencyMismatch(expected: currency, got: amount.currency) }
            guard amount.minorUnits > 0 else { return .nonPositiveAmount(amount) }
            return nil
        }
        func openCheck() -> HoldRejection? {
            if hold.expiredAt != nil { return .holdLapsed(order: order.id, expiresAt: hold.expiresAt) }
            if hold.isClosed { return .holdClosed(order: order.id, status: order.status) }
            if now >= hold.expiresAt { return .holdLapsed(order: order.id, expiresAt: hold.expiresAt) }
            return nil
        }
        switch operation {
        case .capture(let amount, let isFinal):
            if let rejection = openCheck() { return .failure(rejection) }
            let amount = amount ?? hold.balance.open
            if let rejection = check(amount) { return .failure(rejection) }
            guard amount.minorUnits <= hold.balance.open.minorUnits else { return .failure(.exceedsOpen(requested: amount, open: hold.balance.open)) }
            return .success(
                .capture(
                    CaptureRequest(
                        authorizationReference: reference,
                        modificationReference: modificationReference,
                        amount: amount,
                        isFinal: isFinal
                    )
                )
            )
        case .increment(let amount):
            if let rejection = openCheck() { return .failure(rejection) }
            if let rejection = check(amount) { return .failure(rejection) }
            // The figures must stay representable after the increment.
            guard hold.balance.open.minorUnits.addingReportingOverflow(amount.minorUnits).overflow == false,
                hold.balance.incremented.minorUnits.addingReportingOverflow(amount.minorUnits).overflow == false,
                hold.balance.authorized.minorUnits.addingReportingOverflow(
                    hold.balance.incremented.minorUnits + amount.minorUnits
                ).overflow == false
            else {
                return .failure(.amountOutOfRange(amount))
            }
            return .success(
                .increment(
                    IncrementRequest(
                        authorizationReference: reference,
                        modificationReference: modificationReference,
                        amount: amount
                    )
                )
            )
        case .void(let amount):
            if let rejection = openCheck() { return .failure(rejection) }
            if let amount {
                if let rejection = check(amount) { return .failure(rejection) }
                guard amount.minorUnits <= hold.balance.open.minorUnits else {
                    return .failure(.exceedsOpen(requested: amount, open: hold.balance.open))
                }
            }
            return .success(
                .reverse(
                    ReversalRequest(
                        authorizationReference: reference,
                        modificationReference: modificationReference,
                        amount: amount
                    )
                )
            )
        case .refund(let amount, let reason):
            // The cardholder's bank already took the funds back: a refund would return them twice.
            if order.status == .chargedBack { return .failure(.chargedBack(order.id)) }
            guard !reason.allSatisfy(\.isWhitespace) else { return .failure(.missingReason) }
            if let rejection = check(amount) { return .failure(rejection) }
            guard amount.minorUnits <= hold.refundable.minorUnits else {
                return .failure(.exceedsRefundable(requested: amount, refundable: hold.refundable))
            }
            return .success(
                .refund(
                    RefundRequest(
                        authorizationReference: reference,
                        modificationReference: modificationReference,
                        amount: amount
                    )
                )
            )
        case .ship:
            guard order.shipment == nil else { return .failure(.alreadyShipped(order.id)) }
            guard order.status.isPaid else { return .failure(.nothingToShip(order: order.id, status: order.status)) }
            if !hold.isClosed && now < hold.expiresAt {
                return .success(
                    .capture(
                        CaptureRequest(
                            authorizationReference: reference,
                            modificationReference: modificationReference,
                            amount: hold.balance.open,
                            isFinal: true
                        )
                    )
                )
            }
            // Nothing open: ship only what was captured and not refunded.
            guard hold.refundable.minorUnits > 0 else { return .failure(.nothingToShip(order: order.id, status: order.status)) }
            return .success(.none)
        }
    }

    /// The operations an operator may start on the order now, in the order capture, void, refund, ship: those
    /// ``prepare(_:order:hold:modificationReference:now:)`` itself does not refuse when asked for the least each can
    /// ask (all that is open; one minor unit refunded, with a reason), so what a console offers and what the operation
    /// refuses are one rule. An amount beyond the hold's figures is still the operation's refusal.
    public static func offered(order: OrderState?, hold: HoldState?, now: Date) -> [HoldOperation] {
        guard let hold else { return [] }
        let candidates: [HoldOperation] = [
            .capture(amount: nil, isFinal: false),
            .void(amount: nil),
            .refund(amount: Money(minorUnits: 1, currency: hold.balance.open.currency), reason: "offered"),
            .ship(carrier: nil, tracking: nil),
        ]
        return candidates.filter {
            if case .success = prepare($0, order: order, hold: hold, modificationReference: "offered", now: now) { return true }
            return false
        }
    }

    /// Step 2: records the acquirer's answer to the call ``prepare`` asked for. `response` is `nil`
    /// only for ``HoldAcquirerCall/none``. A declined increment records nothing (empty plan). A
    /// modification already recorded (a retry) records nothing either.
    public static func record(
        _ operation: HoldOperation,
        response: ModificationResponse?,
        order: OrderState,
        hold: HoldState,
        products: [ProductID: ProductState],
        context: DecisionContext
    ) -> Result<AppendPlan, HoldRejection> {
        if let response {
            guard response.authorizationReference == hold.merchantReference else {
                return .failure(.responseMismatch("authorization reference \(response.authorizationReference)"))
            }
            if hold.modificationReferences.contains(response.modificationReference) { return .success(AppendPlan([])) }
            guard response.amount.currency == hold.balance.open.currency, response.amount.minorUnits >= 0 else {
                return .failure(.responseMismatch("amount \(response.amount)"))
            }
        }
        var holdEvents: [HoldEvent] = []
        var shipment: OrderShipped?
        switch (operation, response) {
        case (.increment, let response?):
            guard response.kind == .increment else { return .failure(.responseMismatch("kind \(response.kind)")) }
            guard response.responseCode.isApproved else { return .success(AppendPlan([])) }
            holdEvents.append(
                .incremented(
                    HoldIncremented(
                        orderID: order.id,
                        amount: response.amount,
                        modificationReference: response.modificationReference,
                        pspModificationReference: response.modificationPSPReference,
                        incrementedAt: response.processedAt
                    )
                )
            )
        case (.capture, let response?), (.ship, let response?):
            guard response.kind == .capture else { return .failure(.responseMismatch("kind \(response.kind)")) }
            guard response.amount.minorUnits <= hold.balance.open.minorUnits else {
                return .failure(.responseMismatch("captured \(response.amount) above open \(hold.balance.open)"))
            }
            let released = response.isFinal ? hold.balance.open.minus(response.amount) : .zero(response.amount.currency)
            // A final capture's release must be what the acquirer released: a larger one means the
            // acquirer reversed part of the hold before it, which this hold does not show yet.
            if let stated = response.released, stated != released {
                return .failure(.responseMismatch("released \(stated), but open less captured is \(released)"))
            }
            holdEvents.append(
                .captured(
                    HoldCaptured(
                        orderID: order.id,
                        amount: response.amount,
                        isFinal: response.isFinal,
                        released: released,
                        modificationReference: response.modificationReference,
                        pspModificationReference: response.modificationPSPReference,
                        capturedAt: response.processedAt
                    )
                )
            )
        case (.void, let response?):
            guard response.kind == .reversal else { return .failure(.responseMismatch("kind \(response.kind)")) }
            guard response.amount.minorUnits <= hold.balance.open.minorUnits else {
                return .failure(.responseMismatch("reversed \(response.amount) above open \(hold.balance.open)"))
            }
            holdEvents.append(
                .reversed(
                    HoldReversed(
                        orderID: order.id,
                        amount: response.amount,
                        modificationReference: response.modificationReference,
                        pspModificationReference: response.modificationPSPReference,
                        reversedAt: response.processedAt
                    )
                )
            )
        case (.refund(_, let reason), let response?):
            guard response.kind == .refund else { return .failure(.responseMismatch("kind \(response.kind)")) }
            guard response.amount.minorUnits <= hold.refundable.minorUnits else {
                return .failure(.responseMismatch("refunded \(response.amount) above refundable \(hold.refundable)"))
            }
            holdEvents.append(
                .refunded(
                    HoldRefunded(
                        orderID: order.id,
                        amount: response.amount,
                        reason: reason,
                        modificationReference: response.modificationReference,
                        pspModificationReference: response.modificationPSPReference,
                        refundedAt: response.processedAt
                    )
                )
            )
        case (.ship, nil):
            break
        case (_, nil):
            return .failure(.responseMismatch("no acquirer answer for \(operation.name)"))
        }
        if case .ship(let carrier, let tracking) = operation {
            guard order.shipment == nil else { return .success(AppendPlan([])) }
            shipment = OrderShipped(orderID: order.id, carrier: carrier, tracking: tracking, shippedAt: context.now, status: .shipped)
        }
        return plan(
            order: order,
            hold: hold,
            holdEvents: holdEvents,
            shipment: shipment,
            operation: operation.name,
            products: products,
            context: context
        )
    }

    /// The sweeper's step: a hold still open at its expiry lapses — its open amount is released, the
    /// order's status follows, and its stock goes back when nothing was captured. Returns an empty
    /// plan when there is nothing to expire (closed already, or not yet due at `context.now`).
    public static func expire(
        order: OrderState,
        hold: HoldState,
        products: [ProductID: ProductState],
        context: DecisionContext
    ) -> Result<AppendPlan, HoldRejection> {
        guard !hold.isClosed, context.now >= hold.expiresAt else { return .success(AppendPlan([])) }
        return plan(
            order: order,
            hold: hold,
            holdEvents: [.expired(expiry(of: hold, order: order))],
            shipment: nil,
            operation: "expire",
            products: products,
            context: context
        )
    }

    /// The expiry the sweeper records for an open hold: its open amount, released at its expiry.
    static func expiry(of hold: HoldState, order: OrderState) -> HoldExpired {
        HoldExpired(orderID: order.id, amount: hold.balance.open, expiredAt: hold.expiresAt)
    }

    /// The order's status as reads show it once its open hold has passed its expiry, before the
    /// sweeper records the expiry; nil when reads show the status as recorded.
    ///
    /// It is the status the sweeper will record (``expire(order:hold:products:context:)``, through
    /// ``status(balance:shipped:)``), for the two statuses whose lapse reads rewrite: `authorized`
    /// (→ `expired`) and `partially_captured` (→ `captured`). The live reads rewrite those two in SQL
    /// (`ProjectionOrderReader.lapsed`), the as-of reads through `AggregateStates.lapsed(at:)`, and the
    /// as-of tests keep the two alike. Other statuses with money still open (a partly refunded order)
    /// read as recorded until the sweep. Whether `now` is past the expiry is the caller's question.
    public static func lapsedStatus(order: OrderState, hold: HoldState) -> OrderStatus? {
        guard order.status == .authorized || order.status == .partiallyCaptured, !hold.isClosed,
            let expired = HoldState.evolve(hold, .expired(expiry(of: hold, order: order)))
        else { return nil }
        return status(balance: expired.balance, shipped: order.shipment != nil)
    }

    /// Whether the hold's expiry returns the order's stock: nothing captured is left unrefunded
    /// and nothing shipped (the same rule ``expire(order:hold:products:context:)`` applies). Reads
    /// use it to count a lapsed hold's reservation as available before the sweeper runs.
    public static func expiryReleasesStock(order: OrderState, hold: HoldState) -> Bool {
        order.holdsStock && order.shipment == nil && hold.refundable.isZero
    }

    /// The order's status given its hold's money, its shipment and its dispute (if any). One
    /// function, used by the deciders (to record it) and by tests (to check it).
    ///
    /// A dispute decides first: while its funds are debited, and once it is accepted or
    /// lost, the order is `charged_back`; while it is open with its funds not debited, `disputed`; a
    /// won dispute leaves the status its money and shipment give.
    public static func status(balance b: HoldBalance, shipped: Bool, dispute: DisputeState? = nil) -> OrderStatus {
        if let dispute, dispute.status != .won {
            return dispute.debited || dispute.status.isClosed ? .chargedBack : .disputed
        }
        if b.refunded.minorUnits > 0 {
            return b.refunded == b.captured && b.open.isZero ? .refunded : .partiallyRefunded
        }
        if shipped { return .shipped }
        if b.open.minorUnits > 0 { return b.captured.isZero ? .authorized : .partiallyCaptured }
        if b.captured.minorUnits > 0 { return .captured }
        return b.expired.minorUnits > 0 ? .expired : .voided
    }

    /// The order's status across all its disputes: a dispute charged back (debited, accepted or lost)
    /// decides first, then one still open (`disputed`); won disputes and none leave the status its
    /// money and shipment give (``status(balance:shipped:dispute:)`` for each, the gravest kept).
    public static func status(balance b: HoldBalance, shipped: Bool, disputes: [DisputeState]) -> OrderStatus {
        let each = disputes.map { status(balance: b, shipped: shipped, dispute: $0) }
        if each.contains(.chargedBack) { return .chargedBack }
        if each.contains(.disputed) { return .disputed }
        return status(balance: b, shipped: shipped)
    }

    /// The status a hold operation records: a dispute's status (`disputed`, `charged_back`) stays
    /// until the dispute service changes it (a hold operation does not read disputes, so it must
    /// not recompute it away); otherwise the status the hold's money gives.
    public static func keepingDispute(_ current: OrderStatus, else computed: OrderStatus) -> OrderStatus {
        current == .disputed || current == .chargedBack ? current : computed
    }

    /// Assembles the append: hold events, the order's event (shipment or payment update), and the
    /// stock's sale (at shipment) or release (when the order ends with nothing to ship).
    private static func plan(
        order: OrderState,
        hold: HoldState,
        holdEvents: [HoldEvent],
        shipment: OrderShipped?,
        operation: String,
        products: [ProductID: ProductState],
        context: DecisionContext
    ) -> Result<AppendPlan, HoldRejection> {
        let after = holdEvents.reduce(hold) { HoldState.evolve($0, $1)! }
        let shipped = order.shipment != nil || shipment != nil
        let status = keepingDispute(order.status, else: status(balance: after.balance, shipped: shipped))
        let orderEvent: OrderEvent
        if var shipment {
            shipment.status = status
            orderEvent = .shipped(shipment)
        } else {
            orderEvent = .paymentUpdated(OrderPaymentUpdated(orderID: order.id, operation: operation, status: status))
        }
        var appends = [
            PlannedAppend(streamID: order.id.streamID, expectedVersion: .exact(order.version), events: [.order(orderEvent)]),
            PlannedAppend(streamID: order.id.holdStreamID, expectedVersion: .exact(hold.version), events: holdEvents.map(DomainEvent.hold)),
        ]
        // Stock moves once per order: sold when it ships, released when it ends with nothing to ship.
        // Whether the order still holds its stock is the order's to say (its reservation exists exactly
        // while it does); a product state that does not show it is out of date, never a reason to skip.
        let nothingToShip = after.isClosed && after.refundable.isZero && !shipped
        let stock: ProductCommand?
        if !order.holdsStock {
            stock = nil
        } else if shipment != nil {
            stock = .sell(order: order.id, quantity: nil)
        } else if nothingToShip {
            let reason: ReservationReleaseReason =
                holdEvents.contains { if case .expired = $0 { true } else { false } }
                ? .holdExpired : .orderVoided
            stock = .release(order: order.id, quantity: nil, reason: reason)
        } else {
            stock = nil
        }
        if let stock {
            for line in order.lines {
                guard let product = products[line.productID], product.reservations[order.id] != nil else {
                    return .failure(.stockOutOfDate(line.productID))
                }
                switch ProductDecider.decide(stock, product: product.id, state: product, context: context) {
                case .failure(let rejection): return .failure(.responseMismatch(rejection.description))
                case .success(let events):
                    appends.append(
                        PlannedAppend(
                            streamID: product.id.streamID,
                            expectedVersion: PlannedAppend.expectation(forVersion: product.version),
                            events: events.map(DomainEvent.product)
                        )
                    )
                }
            }
        }
        return .success(AppendPlan(appends))
    }
}
