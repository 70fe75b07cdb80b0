import LedgerMacros

import struct Foundation.Date
import typealias Foundation.TimeInterval

// The storefront payment as pure steps. Each step turns current states (and, between steps, the
// acquirer's answer) into one ``AppendPlan`` to commit atomically; the acquirer is called by the
// caller *between* two appends, never inside one:
//
//   placeOrder ──► [OrderOpened, StockReserved…]                          status pending_payment
//   (caller: Acquirer.authorize(merchantReference: order id))
//   recordAuthorization(approved) ──► [AuthorizationHoldPlaced, OrderAuthorized]       authorized
//   recordAuthorization(declined) ──► [PaymentDeclined, ReservationReleased…]            declined
//   recordAuthorization(91/96)    ──► [PaymentOutcomeUnknown]                     payment_unknown
//   recover(query answer)         ──► one of the above, or "reverse, then releasePendingOrder"
//   releasePendingOrder           ──► [OrderCancelled, ReservationReleased…]            cancelled
//
// Reserving stock in the same append as opening the order is what prevents overselling: the
// reservation is checked against the product's state at the version the append expects.

/// One line the shopper asks for.
@MemberwiseInit
public struct RequestedLine: Hashable, Sendable {
    public var productID: ProductID
    public var quantity: Int64 = 1
}

/// The amount the app says it will pay (`amount` in minor units, `currency` as sent).
@MemberwiseInit
public struct ClaimedAmount: Hashable, Sendable {
    public var minorUnits: Int64
    public var currencyCode: String
}

/// Open an order for `lines` with `shippingMethodID`, reserving its stock. The caller chooses `orderID`.
@MemberwiseInit
public struct PlaceOrder: Hashable, Sendable {
    public var orderID: OrderID
    public var lines: [RequestedLine]
    public var shippingMethodID: ShippingMethodID
    /// Reference to the shipping contact stored outside the log.
    public var contactRef: String
    /// When present, the server's total must equal it (the app's `amount`/`currency`); the server never
    /// trusts it as the amount to charge.
    public var claimedAmount: ClaimedAmount?
    public var taxPolicy: TaxPolicy = .storefront
}

/// Why a payment step was refused. Nothing is appended for a rejection.
public enum PaymentFlowRejection: Error, Hashable, Sendable, CustomStringConvertible {
    case orderAlreadyExists(OrderID)
    case unknownProduct(ProductID)
    case unknownShippingMethod(ShippingMethodID)
    /// The same product twice in one order: one reservation per product and order.
    case duplicateLine(ProductID)
    case invalidContactRef
    case pricing(PricingError)
    /// The app's amount or currency differs from the server's computation (carries the expected breakdown).
    case amountMismatch(AmountCheck)
    /// Nothing to authorize.
    case zeroTotal
    /// A product refused its part (above all: insufficient stock).
    case stock(ProductRejection)
    /// The step does not apply to the order's status.
    case invalidStatus(order: OrderID, status: OrderStatus)
    /// The acquirer's answer does not belong to this order or is incomplete.
    case responseMismatch(String)

    public var description: String {
        switch self {
        case .orderAlreadyExists(let id): return "order \(id) already exists"
        case .unknownProduct(let id): return "unknown product \(id)"
        case .unknownShippingMethod(let id): return "unknown shipping method \(id)"
        case .duplicateLine(let id): return "product \(id) appears twice"
        case .invalidContactRef: return "invalid contact reference"
        case .pricing(let e): return e.description
        case .amountMismatch(let check):
            switch check {
            case .match: return "amount matches"
            case .amountMismatch(let claimed, let expected):
                return "amount \(claimed) does not match the expected \(expected.total.minorUnits) (\(expected.total))"
            case .currencyMismatch(let claimed, let expected): return "currency \(claimed) is not the order's \(expected.currency)"
            case .unsupportedCurrency(let code, _): return "unsupported currency \(code)"
            }
        case .zeroTotal: return "the order total is zero"
        case .stock(let e): return e.description
        case .invalidStatus(let id, let status): return "order \(id) is \(status.rawValue)"
        case .responseMismatch(let why): return "acquirer response does not fit the order: \(why)"
        }
    }
}

/// How recovery treats orders still waiting for the acquirer.
public struct RecoveryPolicy: Hashable, Sendable {
    /// An order younger than this may still have its authorization in flight from another process;
    /// recovery leaves it alone until then, so that "not found" cannot race an approval.
    public var minimumPendingAge: TimeInterval

    public init(minimumPendingAge: TimeInterval) { self.minimumPendingAge = minimumPendingAge }

    /// Two minutes: well beyond any acquirer timeout the payment service uses.
    public static let standard = RecoveryPolicy(minimumPendingAge: 120)
}

/// What recovery asks the caller to do next (values out, the caller does the I/O).
public enum RecoveryAction: Hashable, Sendable {
    /// The order does not wait for payment (already resolved): nothing to do.
    case nothingToDo
    /// Too young to judge; look again at `until`.
    case wait(until: Date)
    /// The acquirer's answer settles it: commit this plan.
    case append(AppendPlan)
    /// The acquirer itself does not know: reverse the authorization by `merchantReference`, then call
    /// ``PaymentFlow/releasePendingOrder(order:products:reason:context:)`` with `.reversedAfterUnknownOutcome`.
    case reverseThenRelease(merchantReference: String)
}

/// The pure steps of the storefront payment.
public enum PaymentFlow {
    /// Step 1: prices the order (server-side, never trusting the app), checks the claimed amount,
    /// and reserves stock for every line in the same plan as ``OrderOpened``.
    public static func placeOrder(
        _ command: PlaceOrder,
        order: OrderState?,
        products: [ProductID: ProductState],
        shippingMethod: ShippingMethodState?,
        context: DecisionContext
    ) -> Result<AppendPlan, PaymentFlowRejection> {
        guard order == nil else { return .failure(.orderAlreadyExists(command.orderID)) }
        guard let method = shippingMethod else { return .failure(.unknownShippingMethod(command.shippingMethodID)) }
        guard method.id == command.shippingMethodID else { return .failure(.unknownShippingMethod(command.shippingMethodID)) }
        // The reference must not be (or smuggle) contact data into the log; an id-shaped token is enforced.
        guard DomainIdentifierRules.isValid(command.contactRef) else { return .failure(.invalidContactRef) }
        var seen = Set<ProductID>()
        var pricingLines: [PricingLine] = []
        for line in command.lines {
            guard seen.insert(line.productID).inserted else { return .failure(.duplicateLine(line.productID)) }
            guard let product = products[line.productID] else { return .failure(.unknownProduct(line.productID)) }
            pricingLines.append(PricingLine(productID: product.id, name: product.name, unitPrice: product.price, quantity: line.quantity))
        }
        let priced: PricedOrder
        switch OrderPricing.price(lines: pricingLines, shipping: method.price, policy: command.taxPolicy) {
        case .failure(let error): return .failure(.pricing(error))
        case .success(let p): priced = p
        }
        if let claim = command.claimedAmount {
            let check = OrderPricing.check(claimedMinorUnits: claim.minorUnits, currencyCode: claim.currencyCode, against: priced.amounts)
            guard check.isMatch else { return .failure(.amountMismatch(check)) }
        }
        guard priced.amounts.total.minorUnits > 0 else { return .failure(.zeroTotal) }

        var appends: [PlannedAppend] = []
        for line in priced.lines {
            let product = products[line.productID]!
            switch ProductDecider.decide(
                .reserve(order: command.orderID, quantity: line.quantity),
                product: product.id,
                state: product,
                context: context
            ) {
            case .failure(let rejection): return .failure(.stock(rejection))
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
        let opened = OrderOpened(
            orderID: command.orderID,
            merchantReference: command.orderID.rawValue,
            lines: priced.lines,
            shipping: ShippingSelection(shippingMethodID: method.id, name: method.name, transitDays: method.transitDays, price: method.price),
            amounts: priced.amounts,
            contactRef: command.contactRef,
            openedAt: context.now
        )
        appends.insert(PlannedAppend(streamID: command.orderID.streamID, expectedVersion: .noStream, events: [.order(.opened(opened))]), at: 0)
        return .success(AppendPlan(appends))
    }

    /// Step 2: records the acquirer's answer to the authorization of `order`.
    ///
    /// Approved → hold placed + order authorized. Declined → decline recorded + stock released.
    /// 91/96 → payment unknown (stock stays reserved: a hold may exist). A repeat of the answer already
    /// recorded is accepted and appends nothing, so a retried step is harmless.
    public static func recordAuthorization(
        _ response: AuthorizationResponse,
        order: OrderState,
        products: [ProductID: ProductState],
        context: DecisionContext
    ) -> Result<AppendPlan, PaymentFlowRejection> {
        guard response.merchantReference == order.merchantReference else {
            return .failure(.responseMismatch("merchant reference \(response.merchantReference)"))
        }
        let code = response.responseCode
        if code.isApproved {
            if order.status == .authorized && order.pspReference == response.pspReference { return .success(AppendPlan([])) }
            guard order.status.awaitsPayment else { return .failure(.invalidStatus(order: order.id, status: order.status)) }
            guard response.amount == order.amounts.total else {
                return .failure(.responseMismatch("approved amount \(response.amount) is not the order total \(order.amounts.total)"))
            }
            guard let psp = response.pspReference, !psp.isEmpty, let authCode = response.authCode,
                let expiresAt = response.holdExpiresAt
            else {
                return .failure(.responseMismatch("approval without psp reference, auth code or hold expiry"))
            }
            // Capture at authorization is the capture policy's (HoldService, automatic capture); recording it as a plain hold would lose money facts.
            guard response.immediateCapture == nil else { return .failure(.responseMismatch("immediate capture is not handled yet")) }
            let hold = AuthorizationHoldPlaced(
                orderID: order.id,
                merchantReference: order.merchantReference,
                pspReference: psp,
                authCode: authCode,
                amount: response.amount,
                network: response.network,
                fundingType: response.fundingType,
                lastFour: response.lastFour,
                expiresAt: expiresAt,
                authorizedAt: response.processedAt
            )
            let authorized = OrderAuthorized(orderID: order.id, pspReference: psp, amount: response.amount, authorizedAt: response.processedAt)
            return .success(
                AppendPlan([
                    PlannedAppend(streamID: order.id.streamID, expectedVersion: .exact(order.version), events: [.order(.authorized(authorized))]),
                    // The hold stream is new: a second approval for the same order would conflict here.
                    PlannedAppend(streamID: order.id.holdStreamID, expectedVersion: .noStream, events: [.hold(.placed(hold))]),
                ])
            )
        }
        if code.isUnknownOutcome {
            if order.status == .paymentUnknown { return .success(AppendPlan([])) }
            guard order.status == .pendingPayment else { return .failure(.invalidStatus(order: order.id, status: order.status)) }
            let unknown = PaymentOutcomeUnknown(orderID: order.id, responseCode: code, message: code.meaning)
            return .success(
                AppendPlan([
                    PlannedAppend(
                        streamID: order.id.streamID,
                        expectedVersion: .exact(order.version),
                        events: [.order(.paymentOutcomeUnknown(unknown))]
                    )
                ])
            )
        }
        if order.status == .declined && order.lastResponseCode == code { return .success(AppendPlan([])) }
        guard order.status.awaitsPayment else { return .failure(.invalidStatus(order: order.id, status: order.status)) }
        let declined = PaymentDeclined(orderID: order.id, responseCode: code, message: code.meaning, pspReference: response.pspReference)
        return closeWithoutPayment(order: order, event: .paymentDeclined(declined), products: products, reason: .paymentDeclined, context: context)
    }

    /// Closes an order that waits for payment without a hold, releasing its stock. Used by recovery after
    /// the acquirer reported no payment, or after the caller reversed an unknown outcome.
    public static func releasePendingOrder(
        order: OrderState,
        products: [ProductID: ProductState],
        reason: OrderCancellationReason,
        context: DecisionContext
    ) -> Result<AppendPlan, PaymentFlowRejection> {
        guard order.status.awaitsPayment else { return .failure(.invalidStatus(order: order.id, status: order.status)) }
        return closeWithoutPayment(
            order: order,
            event: .cancelled(OrderCancelled(orderID: order.id, reason: reason)),
            products: products,
            reason: .paymentNotCompleted,
            context: context
        )
    }

    /// Recovery: decides what to do with an order left waiting, given the acquirer's answer to a query by
    /// the order's merchant reference. Never assumes an outcome the acquirer did not state.
    public static func recover(
        order: OrderState,
        query: PaymentQueryResult,
        products: [ProductID: ProductState],
        policy: RecoveryPolicy,
        context: DecisionContext
    ) -> Result<RecoveryAction, PaymentFlowRejection> {
        guard order.status.awaitsPayment else { return .success(.nothingToDo) }
        let ripe = order.openedAt.addingTimeInterval(policy.minimumPendingAge)
        // A "payment unknown" order already has an answer (91/96), so no authorization is in flight.
        if order.status == .pendingPayment && context.now < ripe { return .success(.wait(until: ripe)) }
        switch query {
        case .notFound(let reference):
            guard reference == order.merchantReference else { return .failure(.responseMismatch("query for \(reference)")) }
            return releasePendingOrder(order: order, products: products, reason: .paymentNotFound, context: context).map(RecoveryAction.append)
        case .found(let details):
            let authorization = details.authorization
            guard authorization.merchantReference == order.merchantReference else {
                return .failure(.responseMismatch("query answer for \(authorization.merchantReference)"))
            }
            if authorization.responseCode.isUnknownOutcome {
                return .success(.reverseThenRelease(merchantReference: order.merchantReference))
            }
            if authorization.responseCode.isApproved && details.status != .open {
                return releasePendingOrder(order: order, products: products, reason: .holdNotOpen, context: context).map(RecoveryAction.append)
            }
            return recordAuthorization(authorization, order: order, products: products, context: context).map(RecoveryAction.append)
        }
    }

    private static func closeWithoutPayment(
        order: OrderState,
        event: OrderEvent,
        products: [ProductID: ProductState],
        reason: ReservationReleaseReason,
        context: DecisionContext
    ) -> Result<AppendPlan, PaymentFlowRejection> {
        var appends = [PlannedAppend(streamID: order.id.streamID, expectedVersion: .exact(order.version), events: [.order(event)])]
        for line in order.lines {
            guard let product = products[line.productID] else { return .failure(.unknownProduct(line.productID)) }
            // Release exactly what this order holds (nil = all of it), never a count recomputed elsewhere.
            switch ProductDecider.decide(
                .release(order: order.id, quantity: nil, reason: reason),
                product: product.id,
                state: product,
                context: context
            ) {
            case .failure(let rejection): return .failure(.stock(rejection))
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
        return .success(AppendPlan(appends))
    }
}
