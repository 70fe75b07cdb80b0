import LedgerMacros

import struct Foundation.Date

/// Which step a settlement batch takes next, as a pure state machine: the settlement job tells it
/// what it read and what its last action produced, and it answers with the next action for the job
/// to perform (a query, an acquirer call, an append). It does no I/O and reads no clock; like
/// postgres-nio's `PoolStateMachine`, value types go in and actions come out.
///
/// A batch walks opened → closed → submitted → cleared → payout scheduled, one append per step,
/// each expecting the version the decision was made on, from wherever its stream stands:
///
/// | the batch is   | action                          | fed back with                          |
/// |----------------|---------------------------------|----------------------------------------|
/// | not opened     | `.append(.opened)`               | ``appended()`` / ``versionConflict()`` |
/// | opened         | `.close(opened)`                 | ``closed(_:)``, then `.append(.closed)` |
/// | closed         | `.submit(closed)`                | ``submitted(_:reportSHA256:cleared:)``, then `.append(.submitted)` |
/// | submitted      | `.append(.cleared)` with the totals of this run's submit, else `.loadStoredClearing` | ``clearingLoaded(_:)`` |
/// | cleared        | `.fetchPayout(batchNumber)`      | ``payoutFetched(_:)``, then `.append(.payoutScheduled)` |
/// | payout scheduled or paid | `.reconcile(state)`    | ``reconciled()``, then `.done`          |
///
/// After an append the next step is decided on the state the append produced: it was checked
/// against the version the state was read at, so the stream now holds exactly that state. A
/// version conflict (another daemon recorded the step, or the database refused the closed event's
/// items) answers `.reread`: the job reads the stream again and passes it to ``read(_:)``, and the
/// batch goes on from the stage it finds. Every decision is one attempt; when `maximumAttempts`
/// have been used without reaching the end, the answer is `.fail(.tooBusy)`.
///
/// Calling an input that does not answer the last action is a programming error and traps.
public struct SettlementSteps: Hashable, Sendable {
    /// What the settlement job does next.
    public enum Action: Hashable, Sendable {
        /// Read the batch's stream (its version changed under us), then ``read(_:)``.
        case reread
        /// Append the event to the batch's stream with this expectation, then ``appended()``, or
        /// ``versionConflict()`` when the expectation is not met.
        case append(SettlementEvent, expectedVersion: ExpectedVersion)
        /// Select and tally the opened batch's items (its own opened event: its cut-off and pinned
        /// position, which may be an earlier run's), then ``closed(_:)``.
        case close(SettlementBatchOpened)
        /// Submit the closed batch's items to the acquirer and store its report, then
        /// ``submitted(_:reportSHA256:cleared:)``.
        case submit(SettlementBatchClosed)
        /// Total the report an earlier run stored, then ``clearingLoaded(_:)``.
        case loadStoredClearing
        /// Ask the acquirer for the batch's payout notice, then ``payoutFetched(_:)``.
        case fetchPayout(batchNumber: Int)
        /// Reconcile the settled batch (and the one before it), then ``reconciled()``.
        case reconcile(SettlementBatchState)
        /// The batch is settled; nothing is left to do.
        case done(Outcome)
        /// The batch cannot be settled now.
        case fail(Failure)
    }

    /// How a batch ended up in this run.
    @MemberwiseInit
    public struct Outcome: Hashable, Sendable {
        /// The batch's state at the end: payout scheduled or paid.
        public var state: SettlementBatchState
        /// The events this run appended to the batch's stream.
        public var appendedEvents: Int
    }

    /// Why a batch could not be settled.
    public enum Failure: Error, Hashable, Sendable {
        /// Every attempt (this many) found the stream changed, or ran out before the last step.
        case tooBusy(attempts: Int)
    }

    /// What the machine waits for: the answer to the action it returned last.
    private enum Phase: Hashable, Sendable {
        case reading
        case closing(SettlementBatchState)
        case submitting(SettlementBatchState)
        case loadingClearing(SettlementBatchState)
        case fetchingPayout(SettlementBatchState)
        case appending(SettlementBatchState?, SettlementEvent)
        case reconciling(SettlementBatchState)
        case finished
    }

    /// The opened event a batch this run starts gets: the run's cut-off and pinned position.
    public let opening: SettlementBatchOpened
    /// The payout value date our calendar expects: the business date + the funding lag.
    public let expectedValueDate: BusinessDate
    /// Decisions allowed (one after each read and each recorded step) before the batch is too busy.
    public let maximumAttempts: Int
    private var phase = Phase.reading
    private var attempts = 0
    private var appendedEvents = 0
    /// The report's totals once this run knows them (from its own submit, or the stored report):
    /// kept across re-reads, as the report does not change.
    private var clearing: SettlementBatchCleared?

    /// The steps of the batch of `merchantAccount`, `currency` and `businessDate`, for a run that
    /// opens it (if no run did) with `cutOffAt` and `pinnedPosition` (and `earlyClose` when an operator
    /// closes the day before its scheduled cut-off). `addingBusinessDays(n, date)` is the calendar's
    /// business date `n` business days after `date` (T+n).
    public init(
        merchantAccount: String,
        currency: Currency,
        businessDate: BusinessDate,
        cutOffAt: Date,
        earlyClose: SettlementEarlyClose? = nil,
        pinnedPosition: Int64,
        fundingLagBusinessDays: Int,
        addingBusinessDays: (Int, BusinessDate) -> BusinessDate,
        maximumAttempts: Int
    ) {
        let batchID = SettlementBatch.batchID(merchantAccount: merchantAccount, currency: currency, businessDate: businessDate)
        opening = SettlementBatchOpened(
            batchID: batchID,
            merchantAccount: merchantAccount,
            currency: currency,
            businessDate: businessDate,
            cutOffAt: cutOffAt,
            pinnedPosition: pinnedPosition,
            earlyClose: earlyClose
        )
        expectedValueDate = addingBusinessDays(fundingLagBusinessDays, businessDate)
        self.maximumAttempts = maximumAttempts
    }

    /// The batch's id: its stream's and our reference at the acquirer.
    public var batchID: String { opening.batchID }

    // MARK: Inputs

    /// The batch's stream as read (nil: no batch yet): the first input of a run, and the answer to `.reread`.
    public mutating func read(_ state: SettlementBatchState?) -> Action {
        guard case .reading = phase else { preconditionFailure("read(_:) answers no .reread (\(phase))") }
        return decide(state)
    }

    /// The closed event `.close` tallied.
    public mutating func closed(_ event: SettlementBatchClosed) -> Action {
        guard case .closing(let state) = phase else { preconditionFailure("closed(_:) answers no .close (\(phase))") }
        return append(.closed(event), to: state)
    }

    /// The acquirer's receipt for `.submit`, the digest of the report as stored, and the report's totals.
    public mutating func submitted(_ receipt: SettlementReceipt, reportSHA256: String, cleared: SettlementBatchCleared) -> Action {
        guard case .submitting(let state) = phase else { preconditionFailure("submitted(_:) answers no .submit (\(phase))") }
        clearing = cleared
        return append(
            .submitted(
                SettlementBatchSubmitted(
                    batchID: batchID,
                    batchNumber: receipt.batchNumber,
                    reportSHA256: reportSHA256,
                    reportLineCount: receipt.lineCount
                )
            ),
            to: state
        )
    }

    /// The stored report's totals `.loadStoredClearing` read.
    public mutating func clearingLoaded(_ cleared: SettlementBatchCleared) -> Action {
        guard case .loadingClearing(let state) = phase else { preconditionFailure("clearingLoaded(_:) answers no .loadStoredClearing (\(phase))") }
        clearing = cleared
        return append(.cleared(cleared), to: state)
    }

    /// The acquirer's payout notice `.fetchPayout` asked for.
    public mutating func payoutFetched(_ notice: PayoutNotice) -> Action {
        guard case .fetchingPayout(let state) = phase else { preconditionFailure("payoutFetched(_:) answers no .fetchPayout (\(phase))") }
        return append(
            .payoutScheduled(
                SettlementPayoutScheduled(
                    batchID: batchID,
                    payoutReference: notice.payoutReference,
                    amount: notice.amount,
                    valueDate: notice.valueDate,
                    expectedValueDate: expectedValueDate
                )
            ),
            to: state
        )
    }

    /// The `.append` was recorded.
    public mutating func appended() -> Action {
        guard case .appending(let state, let event) = phase else { preconditionFailure("appended() answers no .append (\(phase))") }
        appendedEvents += 1
        guard attempts < maximumAttempts else { return fail() }
        return decide(SettlementBatchState.evolve(state, event))
    }

    /// The `.append` was refused: the stream's version is not the one expected.
    public mutating func versionConflict() -> Action {
        guard case .appending = phase else { preconditionFailure("versionConflict() answers no .append (\(phase))") }
        guard attempts < maximumAttempts else { return fail() }
        phase = .reading
        return .reread
    }

    /// The `.reconcile` is done.
    public mutating func reconciled() -> Action {
        guard case .reconciling(let state) = phase else { preconditionFailure("reconciled() answers no .reconcile (\(phase))") }
        phase = .finished
        return .done(Outcome(state: state, appendedEvents: appendedEvents))
    }

    // MARK: Deciding

    /// The next step of a batch whose stream stands at `state`: one attempt.
    private mutating func decide(_ state: SettlementBatchState?) -> Action {
        attempts += 1
        guard let state else { return append(.opened(opening), to: nil) }
        // The fold sets each stage's event with the stage, so the stage's event is there.
        switch state.stage {
        case .opened:
            phase = .closing(state)
            return .close(state.opened)
        case .closed:
            phase = .submitting(state)
            return .submit(state.closed!)
        case .submitted:
            if let clearing { return append(.cleared(clearing), to: state) }
            phase = .loadingClearing(state)
            return .loadStoredClearing
        case .cleared:
            phase = .fetchingPayout(state)
            return .fetchPayout(batchNumber: state.submitted!.batchNumber)
        case .payoutScheduled, .paid:
            phase = .reconciling(state)
            return .reconcile(state)
        }
    }

    private mutating func append(_ event: SettlementEvent, to state: SettlementBatchState?) -> Action {
        phase = .appending(state, event)
        return .append(event, expectedVersion: PlannedAppend.expectation(forVersion: state?.version ?? 0))
    }

    private mutating func fail() -> Action {
        phase = .finished
        return .fail(.tooBusy(attempts: attempts))
    }
}
