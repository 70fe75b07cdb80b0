import LedgerMacros

/// The storefront payment once its order append is decided, without I/O: the steps `PaymentService` performs, each
/// decided here. The service performs a step (reads the order, calls the acquirer, records, captures, recovers) and
/// hands what it returned to the next decision; every rule about what a replay continues with, when the acquirer is
/// called, when the money is captured at once, when an unknown outcome is resolved on the spot, and what the shopper
/// is answered is stated here once. (How the order is opened and how the acquirer's answer is recorded are
/// ``PaymentFlow``'s decisions, made inside the writer's batch.)
///
/// | step | given | decision |
/// |---|---|---|
/// | ``opened(_:)`` | the order was opened | ``PaymentStep/loadOrder(_:)`` that order |
/// | | the append replayed an earlier request with the same key | ``PaymentStep/loadReplayedOrder(_:)`` the earlier request's order |
/// | | the key was used for a different payment | ``PaymentStep/fail(_:)`` ``PaymentFailure/idempotencyConflict`` |
/// | | every decision met a product another process kept moving | fail, ``PaymentFailure/busy`` |
/// | | another payment took the Apple Pay token's transaction id | fail, ``PaymentFailure/applePayReplayed`` |
/// | ``loaded(_:)`` | no such order | fail, ``PaymentFailure/orderMissing`` |
/// | | the order waits for payment (pending, or outcome unknown) | ``PaymentStep/authorize(_:)`` it (the acquirer is idempotent by the order's reference) |
/// | | the order is past payment | ``PaymentStep/answer(_:)``: the order as it stands |
/// | ``loadedForReplay(_:)`` | no such order | fail, ``PaymentFailure/orderMissing`` |
/// | | the order waits for payment (the earlier request died before the acquirer answered) | ``PaymentStep/authorize(_:)`` it: this request carries on |
/// | | the order is past payment | ``PaymentStep/answerFirst(_:)``: what the earlier request answered (``replayed(first:current:)``) |
/// | ``authorized(_:_:)`` | the acquirer could not be reached | ``PaymentStep/reply(_:)`` not charged, code 96 (system error); the order stays pending for recovery |
/// | | it answered | ``PaymentStep/record(_:on:)`` the answer |
/// | ``recorded(_:order:hold:capturePolicy:)`` | approved, and the policy captures at authorization | ``PaymentStep/capture(_:)`` the whole amount |
/// | | an unknown outcome (91/96) | ``PaymentStep/recover(_:)``: ask the acquirer now, never assume |
/// | | otherwise (approved on shipment capture, declined) | ``PaymentStep/reply(_:)`` from the order and hold recorded |
/// | ``captured(_:succeeded:)`` | either way (a failed capture leaves the order authorized: the payment succeeded) | ``PaymentStep/answer(_:)`` |
/// | ``recovered(_:resolved:)`` | either way (a young order stays for the recovery sweep) | ``PaymentStep/answer(_:)`` |
/// | ``answer(_:hold:acquirerUnavailable:)`` | approved | succeeded, with the PSP reference and the hold's auth code |
/// | | declined | declined, with the decline code and message |
/// | | still waiting, or ended without a charge (voided, expired, released) | not charged (the order id as reference) |
public enum PaymentWorkflow {
    /// The first step, on the outcome of the order's append.
    public static func opened(_ opening: PaymentOpening) -> PaymentStep {
        switch opening {
        case .opened(let order): return .loadOrder(order)
        case .replayed(let order): return .loadReplayedOrder(order)
        case .idempotencyConflict: return .fail(.idempotencyConflict)
        case .contended: return .fail(.busy)
        case .applePayTransactionUsed: return .fail(.applePayReplayed)
        }
    }

    /// On the order as read (after ``PaymentStep/loadOrder(_:)``).
    public static func loaded(_ order: OrderState?) -> PaymentStep {
        guard let order else { return .fail(.orderMissing) }
        return order.status.awaitsPayment ? .authorize(order) : .answer(order.id)
    }

    /// On the order a replay names, as read (after ``PaymentStep/loadReplayedOrder(_:)``): a payment the earlier
    /// request left waiting is carried on; a decided one is answered as the earlier request answered it.
    public static func loadedForReplay(_ order: OrderState?) -> PaymentStep {
        guard let order else { return .fail(.orderMissing) }
        return order.status.awaitsPayment ? .authorize(order) : .answerFirst(order.id)
    }

    /// The order a replay is answered for: `first`, the order as the earlier request's own appends left it (what that
    /// request answered: a capture, shipment or refund since does not change the replay) — unless that request left
    /// the payment undecided (it answered "not charged": the acquirer was unreachable, or the outcome unknown and not
    /// resolved on the spot), then the decision made since: `current`, the order as it stands.
    public static func replayed(first: OrderState, current: OrderState) -> OrderState {
        first.status.awaitsPayment ? current : first
    }

    /// On what the acquirer's authorization call returned.
    public static func authorized(_ order: OrderState, _ attempt: AuthorizationAttempt) -> PaymentStep {
        switch attempt {
        case .unreachable: return .reply(answer(order, hold: nil, acquirerUnavailable: true))
        case .answered(let response): return .record(response, on: order)
        }
    }

    /// On the order and hold the recorded answer left.
    public static func recorded(
        _ response: AuthorizationResponse,
        order: OrderState,
        hold: HoldState?,
        capturePolicy: CapturePolicy
    )
        -> PaymentStep
    {
        if capturePolicy == .automatic && response.responseCode.isApproved { return .capture(order.id) }
        if response.responseCode.isUnknownOutcome { return .recover(order.id) }
        return .reply(answer(order, hold: hold))
    }

    /// After the automatic capture: the capture moved the order on (or, failing, left it authorized).
    public static func captured(_ order: OrderID, succeeded: Bool) -> PaymentStep { .answer(order) }

    /// After resolving an unknown outcome on the spot: recovery may have moved the order on.
    public static func recovered(_ order: OrderID, resolved: Bool) -> PaymentStep { .answer(order) }

    /// Whether the answer for `order` shows its hold (only a success does): the hold need not be read otherwise.
    public static func answerShowsHold(_ order: OrderState) -> Bool {
        if case .succeeded = order.paymentOutcome { return true }
        return false
    }

    /// What the shopper is answered for `order` in the state given, with its hold (which only a success shows).
    public static func answer(_ order: OrderState, hold: HoldState?, acquirerUnavailable: Bool = false) -> PaymentAnswer {
        let total = order.amounts.total
        switch order.paymentOutcome {
        case .succeeded:
            return PaymentAnswer(
                result: .succeeded,
                reference: order.pspReference ?? order.id.rawValue,
                orderID: order.id,
                orderStatus: order.status,
                amount: total,
                authCode: hold?.authCode
            )
        case .failed where order.status == .declined:
            return PaymentAnswer(
                result: .declined,
                reference: order.pspReference ?? order.id.rawValue,
                orderID: order.id,
                orderStatus: order.status,
                amount: total,
                declineCode: order.lastResponseCode?.rawValue,
                message: order.lastResponseMessage
            )
        case .failed, .pending:
            return PaymentAnswer(
                result: .acquirerUnreachable,
                reference: order.id.rawValue,
                orderID: order.id,
                orderStatus: order.status,
                amount: total,
                declineCode: acquirerUnavailable ? ResponseCode.systemError.rawValue : order.lastResponseCode?.rawValue,
                message: "the card issuer could not be reached; you have not been charged"
            )
        }
    }
}

/// When the money of an authorized order is captured.
public enum CapturePolicy: String, Sendable, Hashable, CaseIterable {
    /// Capture what is open when the order ships (`POST /orders/{id}/ship`). The default.
    case onShipment = "on_shipment"
    /// Capture the whole amount as soon as the authorization is recorded.
    case automatic
}

/// How the order's append (reserve the stock, open the order) ended, when it did not refuse the request.
public enum PaymentOpening: Hashable, Sendable {
    case opened(OrderID)
    /// An earlier request with the same idempotency key and content opened this order.
    case replayed(OrderID)
    /// The idempotency key was used for a different payment.
    case idempotencyConflict
    /// Every decision met a product another process kept moving.
    case contended
    /// Another payment took the Apple Pay token's transaction id while this one was decided.
    case applePayTransactionUsed
}

/// What the acquirer's authorization call returned.
public enum AuthorizationAttempt: Hashable, Sendable {
    case answered(AuthorizationResponse)
    /// No answer (not reachable, timed out): the order stays pending for recovery.
    case unreachable
}

/// What a step of ``PaymentWorkflow`` decided.
public enum PaymentStep: Hashable, Sendable {
    /// Read this order, then ``PaymentWorkflow/loaded(_:)``.
    case loadOrder(OrderID)
    /// Read the order an earlier request with the same idempotency key opened, then ``PaymentWorkflow/loadedForReplay(_:)``.
    case loadReplayedOrder(OrderID)
    /// Call the acquirer for the order's total, then ``PaymentWorkflow/authorized(_:_:)``.
    case authorize(OrderState)
    /// Record the acquirer's answer (``PaymentFlow/recordAuthorization(_:order:products:context:)``, in the writer's
    /// batch), then ``PaymentWorkflow/recorded(_:order:hold:capturePolicy:)``.
    case record(AuthorizationResponse, on: OrderState)
    /// Capture the whole amount (keyed by the order, so a retried payment never captures twice), then
    /// ``PaymentWorkflow/captured(_:succeeded:)``.
    case capture(OrderID)
    /// Ask the acquirer about the order now and record what it says, then ``PaymentWorkflow/recovered(_:resolved:)``.
    case recover(OrderID)
    /// Read the order (and its hold when ``PaymentWorkflow/answerShowsHold(_:)``) as it stands and reply
    /// ``PaymentWorkflow/answer(_:hold:acquirerUnavailable:)``.
    case answer(OrderID)
    /// Read the order as the earlier request's appends left it and as it stands, and reply
    /// ``PaymentWorkflow/answer(_:hold:acquirerUnavailable:)`` for ``PaymentWorkflow/replayed(first:current:)``.
    case answerFirst(OrderID)
    case reply(PaymentAnswer)
    case fail(PaymentFailure)
}

/// Why a payment ends without an answer about its order.
public enum PaymentFailure: Error, Hashable, Sendable {
    case idempotencyConflict
    /// The product was too busy: the shopper may retry.
    case busy
    case applePayReplayed
    /// An order the ledger opened (or replayed) cannot be read: a defect, not the shopper's doing.
    case orderMissing
}

/// What a storefront payment came to: the order's state once the acquirer answered (or could not).
@MemberwiseInit
public struct PaymentAnswer: Sendable, Hashable {
    public enum Result: Sendable, Hashable {
        /// The acquirer approved: a hold is placed (and, under automatic capture, captured).
        case succeeded
        /// The issuer declined: the reservation is released; `declineCode` says why.
        case declined
        /// No usable answer: the order waits for recovery, which reverses or releases; the shopper is not charged.
        case acquirerUnreachable
    }

    public var result: Result
    /// The acquirer's PSP reference when there is one, else the order id.
    public var reference: String
    public var orderID: OrderID
    public var orderStatus: OrderStatus
    /// The order's total.
    public var amount: Money
    public var authCode: String?
    public var declineCode: String?
    public var message: String?
}
