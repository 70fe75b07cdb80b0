import struct Foundation.Date

/// A back-office operation on an order's hold (capture, increment, void, refund, ship), decided without I/O: the steps
/// `HoldService` performs, each decided here. The service probes the idempotency key, reads the order and hold, notes
/// and sends the acquirer call, records the answer and catches up what the acquirer applied first; every rule about
/// what a repeated key means, when the acquirer is called, what its refusal or silence leaves behind, when the ledger
/// must record the acquirer's earlier modifications before this one, and what the operator is answered is stated
/// here once. (What the operation may do and what its answer appends are ``HoldLifecycle``'s decisions; the append is
/// decided inside the writer's batch.)
///
/// | step | given | decision |
/// |---|---|---|
/// | ``start(keyGiven:stored:requestHash:)`` | no key, or a key not seen | ``HoldStep/prepare`` |
/// | | the key seen with this request | ``HoldStep/answerReplay``: nothing sent, nothing appended |
/// | | the key seen with a different request | ``HoldStep/fail(_:)`` ``HoldFailure/idempotencyConflict`` |
/// | ``prepared(_:order:hold:modificationReference:now:)`` | ``HoldLifecycle/prepare(_:order:hold:modificationReference:now:)`` refuses | fail, ``HoldFailure/rejected(_:)`` (nothing sent) |
/// | | nothing to ask the acquirer (a shipment with nothing open) | ``HoldStep/record(_:checkingBalance:)`` no answer |
/// | | a call to make | ``HoldStep/send(_:)``: note it (recovery finds it if this process dies), then send it |
/// | ``sent(_:)`` | the acquirer applied it (or declined an increment) | ``HoldStep/record(_:checkingBalance:)`` the answer, its balance checked |
/// | | the acquirer refused it (a definite answer: nothing applied) | ``HoldStep/abandon(_:)``: drop the note, fail ``HoldFailure/acquirerRefused(_:)`` |
/// | | no answer | fail, ``HoldFailure/acquirerUnavailable``; the note stays for recovery (a retry with the key is the same modification) |
/// | ``recorded(_:outcome:checkedBalance:)`` | recorded (or replayed: an earlier request with the key was) | ``HoldStep/reply(_:)`` applied, or replayed (a sent call's note is dropped: it is recorded) |
/// | | a declined increment, nothing appended | reply declined |
/// | | balance checked, and the answer does not land the hold where the acquirer says it is, or does not fit it at all | ``HoldStep/catchUp(_:)``: record the acquirer's earlier modifications first |
/// | | the answer does not fit the hold, unchecked (caught up already) | fail, ``HoldFailure/rejected(_:)`` |
/// | | other writers kept moving the order | fail, ``HoldFailure/busy`` |
/// | ``caughtUp(_:)`` | always | ``HoldStep/record(_:checkingBalance:)`` the answer again, unchecked: a difference left comes from later modifications already recorded (they commute) |
public enum HoldWorkflow {
    /// The first step: what a repeated idempotency key means.
    /// - Parameters:
    ///   - stored: the request hash recorded with the key (nil: not seen).
    public static func start(keyGiven: Bool, stored: [UInt8]?, requestHash: [UInt8]) -> HoldStep {
        guard keyGiven, let stored else { return .prepare }
        return stored == requestHash ? .answerReplay : .fail(.idempotencyConflict)
    }

    /// On the order and hold as read: what to ask the acquirer, if anything.
    public static func prepared(
        _ operation: HoldOperation,
        order: OrderState?,
        hold: HoldState?,
        modificationReference: String,
        now: Date
    ) -> HoldStep {
        switch HoldLifecycle.prepare(operation, order: order, hold: hold, modificationReference: modificationReference, now: now) {
        case .failure(let rejection): return .fail(.rejected(rejection))
        case .success(.none): return .record(nil, checkingBalance: false)
        case .success(let call): return .send(call)
        }
    }

    /// On what the acquirer's call returned.
    public static func sent(_ attempt: ModificationAttempt) -> HoldStep {
        switch attempt {
        case .answered(let response): return .record(response, checkingBalance: true)
        case .refused(let error): return .abandon(.acquirerRefused(error))
        case .unreachable: return .fail(.acquirerUnavailable)
        }
    }

    /// On how recording `response` went.
    public static func recorded(_ response: ModificationResponse?, outcome: HoldRecording, checkedBalance: Bool) -> HoldStep {
        switch outcome {
        case .recorded(let appended, let replayed):
            if !appended, let response, response.kind == .increment, !response.responseCode.isApproved { return .reply(.declined(response)) }
            return .reply(replayed ? .replayed(response) : .applied(response))
        case .behindTheAcquirer:
            guard let response, checkedBalance else { return .fail(.rejected(.responseMismatch("the hold's balance after the answer"))) }
            return .catchUp(response)
        case .refused(.responseMismatch(let why)):
            guard let response, checkedBalance else { return .fail(.rejected(.responseMismatch(why))) }
            return .catchUp(response)
        case .refused(let rejection): return .fail(.rejected(rejection))
        case .contended: return .fail(.busy)
        }
    }

    /// After the acquirer's earlier modifications are recorded: this answer again, unchecked.
    public static func caughtUp(_ response: ModificationResponse) -> HoldStep { .record(response, checkingBalance: false) }

    /// Whether recording `plan` for `response` leaves `hold` where the acquirer says it is. When it does not, the
    /// acquirer applied something before this answer that the ledger lacks (another daemon's answer still on its
    /// way): those are recorded first. A difference that remains after catching up comes from later modifications
    /// already recorded (they commute), so only the first recording is checked.
    public static func landsWhereTheAcquirerSays(_ plan: AppendPlan, hold: HoldState, response: ModificationResponse) -> Bool {
        guard !plan.isEmpty else { return true }
        let after = plan.events.reduce(hold) { state, event in
            if case .hold(let e) = event, let next = HoldState.evolve(state, e) { return next }
            return state
        }
        return after.balance == response.balance
    }

    /// The modifications the acquirer applied that `hold` lacks, in the acquirer's order; with `reference`, only those
    /// applied before that one.
    public static func unrecorded(_ details: PaymentDetails, hold: HoldState, before reference: String? = nil) -> [ModificationResponse] {
        let missing = details.modifications.filter {
            $0.responseCode.isApproved && !hold.modificationReferences.contains($0.modificationReference)
        }
        guard let reference, let ours = missing.firstIndex(where: { $0.modificationReference == reference }) else { return missing }
        return Array(missing[..<ours])
    }

    /// The operation a modification the acquirer applied records (catching up, or recovering a noted call).
    public static func operation(of modification: ModificationResponse) -> HoldOperation {
        switch modification.kind {
        case .capture: return .capture(amount: modification.amount, isFinal: modification.isFinal)
        case .increment: return .increment(amount: modification.amount)
        case .reversal: return .void(amount: modification.amount)
        case .refund: return .refund(amount: modification.amount, reason: "recorded from the acquirer")
        }
    }
}

/// What the acquirer's modification call returned.
public enum ModificationAttempt: Hashable, Sendable {
    /// Applied, or (an increment) declined by the issuer.
    case answered(ModificationResponse)
    /// Refused: nothing was applied.
    case refused(AcquirerError)
    /// No answer: it may or may not have been applied.
    case unreachable
}

/// How recording an answer went.
public enum HoldRecording: Hashable, Sendable {
    /// Appended (or nothing to append: a declined increment, or an answer recorded already); `replayed`: an earlier
    /// request with the same idempotency key was recorded instead.
    case recorded(appended: Bool, replayed: Bool)
    /// The answer does not land the hold where the acquirer says it is (checked recordings only).
    case behindTheAcquirer
    case refused(HoldRejection)
    /// Every decision met an order, hold or product another process kept moving.
    case contended
}

/// What a step of ``HoldWorkflow`` decided.
public enum HoldStep: Hashable, Sendable {
    /// Read the order and hold, then ``HoldWorkflow/prepared(_:order:hold:modificationReference:now:)``.
    case prepare
    /// Answer the order and hold as they stand, as a replay.
    case answerReplay
    /// Note the call, send it, then ``HoldWorkflow/sent(_:)``.
    case send(HoldAcquirerCall)
    /// Record the answer (``HoldLifecycle/record(_:response:order:hold:products:context:)`` in the writer's batch),
    /// checking the balance it leaves when asked, then ``HoldWorkflow/recorded(_:outcome:checkedBalance:)``.
    case record(ModificationResponse?, checkingBalance: Bool)
    /// Record what the acquirer applied before this answer and the ledger lacks, then ``HoldWorkflow/caughtUp(_:)``.
    case catchUp(ModificationResponse)
    /// Drop the call's note, then fail.
    case abandon(HoldFailure)
    case fail(HoldFailure)
    /// Drop the sent call's note (its answer is recorded), then answer from the order and hold the recording left.
    case reply(HoldAnswer)
}

/// What the operator is answered, from the order and hold the step left.
public enum HoldAnswer: Hashable, Sendable {
    /// Applied and recorded, with the acquirer's answer (nil: nothing was sent).
    case applied(ModificationResponse?)
    /// The same key and request were seen before: the order as it stands, with this request's answer when the
    /// acquirer gave one (it is the same modification: the acquirer keys it by the same reference).
    case replayed(ModificationResponse?)
    /// The issuer declined an increment: nothing changed.
    case declined(ModificationResponse)
}

/// Why a hold operation fails.
public enum HoldFailure: Error, Hashable, Sendable {
    case idempotencyConflict
    case rejected(HoldRejection)
    case acquirerRefused(AcquirerError)
    case acquirerUnavailable
    /// The order is too busy right now: retry with the same key.
    case busy
}
