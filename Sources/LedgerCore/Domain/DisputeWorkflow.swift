import struct Foundation.Date

/// Recording a command on a dispute, decided without I/O: the steps `DisputeService` performs, each decided here.
/// The service reads what a step asks for and commits what it decides; every rule about which order a dispute
/// concerns, what a repeated notification means, what may be disputed and how the order's status follows is stated
/// here once.
///
/// | step | given | decision |
/// |---|---|---|
/// | ``start(_:recorded:repeats:)`` | a dispute whose events already record what the (numbered) notification reports | ``DisputeStep/alreadyRecorded``: nothing appended, the dispute answered as it is |
/// | | no dispute, and the command does not open one | ``DisputeStep/refused(_:)`` ``DisputeRefusal/unknownDispute`` |
/// | | otherwise | ``DisputeStep/loadOrder(_:)``: the dispute's order (a new dispute: the command's) |
/// | ``decide(_:recorded:order:hold:otherDisputes:now:)`` | no such order | refused, ``DisputeRefusal/unknownOrder(_:)`` |
/// | | the order has no payment (no hold) | refused, ``DisputeRefusal/notCaptured(_:)`` |
/// | | ``DisputeDecider`` refuses (the amount exceeds what is disputable, an illegal transition, a deadline passed…) | refused, ``DisputeRefusal/rejected(_:)`` |
/// | | the decider accepts and the order's status (balance, shipment, every dispute) stays | ``DisputeStep/record(events:orderUpdate:)`` without an order update |
/// | | the decider accepts and the status changes | ``DisputeStep/record(events:orderUpdate:)`` with `OrderPaymentUpdated` (operation `dispute`) |
///
/// A dispute never moves stock or the hold's money: its debits and credits are on its own stream.
public enum DisputeWorkflow {
    /// The first step: whether the command is a repeat, and which order it concerns.
    /// - Parameters:
    ///   - recorded: the dispute's events so far (none: no dispute yet).
    ///   - repeats: whether those events already record what the command reports (an acquirer notification whose
    ///     stage number is recorded).
    public static func start(_ command: DisputeCommand, recorded: [DisputeEvent], repeats: Bool) -> DisputeStep {
        if let dispute = DisputeState.fold(recorded) { return repeats ? .alreadyRecorded : .loadOrder(dispute.orderID) }
        switch command {
        case .raiseInquiry(_, let order, _, _, _), .chargeback(_, let order, _, _, _): return .loadOrder(order)
        default: return .refused(.unknownDispute)
        }
    }

    /// The second step, on the order, its payment and the order's other disputes as read.
    public static func decide(
        _ command: DisputeCommand,
        recorded: [DisputeEvent],
        order: OrderState?,
        hold: HoldState?,
        otherDisputes: [DisputeState],
        now: Date
    ) -> DisputeStep {
        let dispute = DisputeState.fold(recorded)
        guard let order else {
            if case .loadOrder(let id) = start(command, recorded: recorded, repeats: false) { return .refused(.unknownOrder(id)) }
            return .refused(.unknownDispute)
        }
        guard let hold else { return .refused(.notCaptured(order.id)) }
        let decided: [DisputeEvent]
        switch DisputeDecider.decide(command, state: dispute, disputable: disputable(hold: hold, others: otherDisputes), now: now) {
        case .failure(let rejection): return .refused(.rejected(rejection))
        case .success(let events): decided = events
        }
        guard let after = DisputeState.fold(recorded + decided) else { return .refused(.unknownDispute) }
        let status = HoldLifecycle.status(balance: hold.balance, shipped: order.shipment != nil, disputes: otherDisputes + [after])
        let update = status == order.status ? nil : OrderPaymentUpdated(orderID: order.id, operation: "dispute", status: status)
        return .record(events: decided, orderUpdate: update)
    }

    /// What the merchant keeps of an order: captured − refunded − charged back + reversed (a dispute's debits and
    /// credits are on its own stream; the hold's money is untouched).
    public static func netKept(hold: HoldState, disputes: [DisputeState]) -> Money {
        let b = hold.balance
        let net = disputes.reduce(b.captured.minorUnits - b.refunded.minorUnits) { $0 - $1.chargedBack.minorUnits + $1.reversed.minorUnits }
        return Money(minorUnits: net, currency: b.captured.currency)
    }

    /// What a new dispute on the order may claim: captured − what its other disputes (not won) claim.
    /// Refunds are not taken off: a cardholder's bank may charge back a payment the merchant refunded in
    /// part (the credit had not reached it), and the acquirer then debits the chargeback all the same.
    /// That is money that moved, so the ledger records it as reported — refusing it would leave the
    /// report's Chargeback line a break and the journal short — and the merchant defends it with the
    /// refund as evidence. Two disputes still never claim the same captured money.
    public static func disputable(hold: HoldState, others: [DisputeState]) -> Money {
        let claimed = others.filter { $0.status != .won }.reduce(Int64(0)) { $0 + $1.amount.minorUnits }
        let b = hold.balance
        return Money(minorUnits: b.captured.minorUnits - claimed, currency: b.captured.currency)
    }
}

/// What a step of ``DisputeWorkflow`` decided.
public enum DisputeStep: Hashable, Sendable {
    /// The command repeats what the dispute records: append nothing, answer the dispute as it is.
    case alreadyRecorded
    case refused(DisputeRefusal)
    /// Read this order, its payment and its other disputes, then ``DisputeWorkflow/decide(_:recorded:order:hold:otherDisputes:now:)``.
    case loadOrder(OrderID)
    /// Append `events` to the dispute's stream and, when the order's status changes, `orderUpdate` to the order's,
    /// in one commit expecting the versions read.
    case record(events: [DisputeEvent], orderUpdate: OrderPaymentUpdated?)
}

/// Why a command on a dispute is refused.
public enum DisputeRefusal: Error, Hashable, Sendable {
    /// No dispute with that id, and the command does not open one.
    case unknownDispute
    case unknownOrder(OrderID)
    /// The order has no payment to dispute.
    case notCaptured(OrderID)
    case rejected(DisputeRejection)
}
