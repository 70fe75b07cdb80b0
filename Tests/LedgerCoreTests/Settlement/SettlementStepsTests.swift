import Foundation
import LedgerAcquirerAPI
import LedgerCore
import LedgerCoreTestSupport
import Testing

/// ``SettlementSteps`` transition by transition, in the manner of postgres-nio's
/// `PoolStateMachineTests`: feed an input, expect the exact action. No database, no acquirer: a
/// small in-memory performer stands in for the settlement job where a test walks a whole batch.
@Suite struct SettlementStepsTests {
    typealias Action = SettlementSteps.Action

    // MARK: The batch of Friday 2026-06-19, one event per stage, as a run records them

    static let friday = BusinessDate("2026-06-19")!
    static let monday = BusinessDate("2026-06-22")!
    static let tuesday = BusinessDate("2026-06-23")!
    static let cutOff = Date(timeIntervalSince1970: 1_781_906_400)  // 2026-06-19T22:00:00Z
    static let batchID = "Store-USD-2026-06-19"

    static let opened = SettlementBatchOpened(
        batchID: batchID,
        merchantAccount: "Store",
        currency: .usd,
        businessDate: friday,
        cutOffAt: cutOff,
        pinnedPosition: 40
    )
    static let closed = SettlementBatchClosed(
        batchID: batchID,
        captureCount: 2,
        refundCount: 1,
        grossCredit: usd("79.00"),
        grossDebit: usd("5.00"),
        gross: usd("74.00"),
        itemsSHA256: String(repeating: "ab", count: 32)
    )
    static let notice = PayoutNotice(payoutReference: "PO-7", batchNumber: 7, merchantAccount: "Store", valueDate: monday, amount: usd("71.10"))
    static let receipt = SettlementReceipt(batchReference: batchID, batchNumber: 7, businessDate: friday, lineCount: 4, payout: notice)
    static let reportSHA256 = String(repeating: "cd", count: 32)
    static let submitted = SettlementBatchSubmitted(batchID: batchID, batchNumber: 7, reportSHA256: reportSHA256, reportLineCount: 4)
    static let cleared = SettlementBatchCleared(
        batchID: batchID,
        lineCount: 3,
        gross: usd("74.00"),
        interchange: usd("1.20"),
        schemeFees: usd("0.40"),
        markup: usd("0.30"),
        commission: usd("1.00"),
        net: usd("71.10")
    )
    static let scheduled = SettlementPayoutScheduled(
        batchID: batchID,
        payoutReference: "PO-7",
        amount: usd("71.10"),
        valueDate: monday,
        expectedValueDate: monday
    )
    static let paid = SettlementPayoutPaid(batchID: batchID, payoutReference: "PO-7", amount: usd("71.10"), valueDate: monday)
    static let events: [SettlementEvent] = [
        .opened(opened), .closed(closed), .submitted(submitted), .cleared(cleared),
        .payoutScheduled(scheduled), .paid(paid),
    ]

    /// The batch's state once its first `count` events are recorded (nil: none).
    static func state(after count: Int) -> SettlementBatchState? { SettlementBatchState.fold(Array(events.prefix(count))) }
    static func recorded(_ count: Int) -> SettlementBatchState { state(after: count)! }

    /// Weekends and `holidays` are not business days; T+n rolls over them (the shape of LedgerAcquirer's `BusinessCalendar`).
    static func addingBusinessDays(holidays: [BusinessDate]) -> (Int, BusinessDate) -> BusinessDate {
        { count, date in
            func isBusinessDay(_ day: BusinessDate) -> Bool { day.isoWeekday < 6 && !holidays.contains(day) }
            var day = date
            while !isBusinessDay(day) { day = day.adding(days: 1) }
            for _ in 0..<count {
                repeat { day = day.adding(days: 1) } while !isBusinessDay(day)
            }
            return day
        }
    }

    /// The steps of the fixture's batch for a run pinned at 40 with T+`lag` funding.
    static func steps(lag: Int = 1, holidays: [BusinessDate] = [], maximumAttempts: Int = 20) -> SettlementSteps {
        SettlementSteps(
            merchantAccount: "Store",
            currency: .usd,
            businessDate: friday,
            cutOffAt: cutOff,
            pinnedPosition: 40,
            fundingLagBusinessDays: lag,
            addingBusinessDays: addingBusinessDays(holidays: holidays),
            maximumAttempts: maximumAttempts
        )
    }

    /// Every action of a fresh batch, in order: what a run that finds nothing recorded does.
    static let freshRun: [Action] = [
        .append(.opened(opened), expectedVersion: .noStream),
        .close(opened),
        .append(.closed(closed), expectedVersion: .exact(1)),
        .submit(closed),
        .append(.submitted(submitted), expectedVersion: .exact(2)),
        .append(.cleared(cleared), expectedVersion: .exact(3)),
        .fetchPayout(batchNumber: 7),
        .append(.payoutScheduled(scheduled), expectedVersion: .exact(4)),
        .reconcile(recorded(5)),
        .done(SettlementSteps.Outcome(state: recorded(5), appendedEvents: 5)),
    ]

    // MARK: A stand-in for the settlement job

    /// Performs the actions on an in-memory stream (an append is checked against its version like
    /// the database checks it) and answers with the fixture's results; records every action.
    struct Performer {
        var stream: [SettlementEvent]
        /// Appends to refuse (a conflict, the stream unchanged) before the others go through.
        var refusals = 0
        /// Event types another daemon records just before this run tries to: the run's append then conflicts.
        var recordedByAnotherDaemonFirst: Set<String> = []
        private(set) var actions: [Action] = []

        init(recorded count: Int) { stream = Array(SettlementStepsTests.events.prefix(count)) }

        /// Runs `steps` to `.done` or `.fail` (or 100 actions, so a looping machine fails the test instead of hanging it).
        mutating func run(_ steps: inout SettlementSteps) -> Action {
            var action = steps.read(SettlementBatchState.fold(stream))
            for _ in 0..<100 {
                actions.append(action)
                switch action {
                case .reread: action = steps.read(SettlementBatchState.fold(stream))
                case .close(let opened):
                    #expect(opened == SettlementStepsTests.opened)
                    action = steps.closed(SettlementStepsTests.closed)
                case .submit(let closed):
                    #expect(closed == SettlementStepsTests.closed)
                    action = steps.submitted(
                        SettlementStepsTests.receipt,
                        reportSHA256: SettlementStepsTests.reportSHA256,
                        cleared: SettlementStepsTests.cleared
                    )
                case .loadStoredClearing: action = steps.clearingLoaded(SettlementStepsTests.cleared)
                case .fetchPayout(let number):
                    #expect(number == SettlementStepsTests.notice.batchNumber)
                    action = steps.payoutFetched(SettlementStepsTests.notice)
                case .append(let event, let expectedVersion):
                    if recordedByAnotherDaemonFirst.remove(event.type) != nil { stream.append(event) }
                    if refusals > 0 || !expectedVersion.accepts(current: Int64(stream.count)) {
                        refusals = max(0, refusals - 1)
                        action = steps.versionConflict()
                    } else {
                        stream.append(event)
                        action = steps.appended()
                    }
                case .reconcile: action = steps.reconciled()
                case .done, .fail: return action
                }
            }
            Issue.record("no end after 100 actions")
            return action
        }
    }

    // MARK: One transition each

    @Test func aFreshBatchIsOpenedWithTheRunsCutOffAndPinnedPosition() {
        var steps = Self.steps()
        #expect(steps.read(nil) == .append(.opened(Self.opened), expectedVersion: .noStream))
    }

    @Test func anOpenedBatchIsClosedOverItsOwnOpenedEventNotTheRuns() {
        // Opened by an earlier run, pinned at 12: the run pinned at 40 closes it at 12.
        var earlier = Self.opened
        earlier.pinnedPosition = 12
        let state = SettlementBatchState.fold([.opened(earlier)])
        var steps = Self.steps()
        #expect(steps.read(state) == .close(earlier))
    }

    @Test func theTalliedItemsAreAppendedAsTheClosedEvent() {
        var steps = Self.steps()
        _ = steps.read(Self.recorded(1))
        #expect(steps.closed(Self.closed) == .append(.closed(Self.closed), expectedVersion: .exact(1)))
    }

    @Test func aClosedBatchIsSubmitted() {
        var steps = Self.steps()
        #expect(steps.read(Self.recorded(2)) == .submit(Self.closed))
    }

    @Test func theAcquirersReceiptAndTheStoredReportsDigestAreAppendedAsTheSubmittedEvent() {
        var steps = Self.steps()
        _ = steps.read(Self.recorded(2))
        #expect(
            steps.submitted(Self.receipt, reportSHA256: Self.reportSHA256, cleared: Self.cleared)
                == .append(.submitted(Self.submitted), expectedVersion: .exact(2))
        )
    }

    @Test func aBatchSubmittedInThisRunIsClearedWithItsSubmitsTotals() {
        var steps = Self.steps()
        _ = steps.read(Self.recorded(2))
        _ = steps.submitted(Self.receipt, reportSHA256: Self.reportSHA256, cleared: Self.cleared)
        #expect(steps.appended() == .append(.cleared(Self.cleared), expectedVersion: .exact(3)))
    }

    @Test func aBatchSubmittedByAnEarlierRunLoadsTheStoredClearingFirst() {
        var steps = Self.steps()
        #expect(steps.read(Self.recorded(3)) == .loadStoredClearing)
        #expect(steps.clearingLoaded(Self.cleared) == .append(.cleared(Self.cleared), expectedVersion: .exact(3)))
    }

    @Test func aClearedBatchFetchesThePayoutOfItsBatchNumber() {
        var steps = Self.steps()
        #expect(steps.read(Self.recorded(4)) == .fetchPayout(batchNumber: 7))
    }

    @Test func thePayoutIsScheduledWithTheAcquirersValueDateAndTheOneOurCalendarExpects() {
        var steps = Self.steps()
        _ = steps.read(Self.recorded(4))
        // Friday, T+1: Monday.
        #expect(steps.payoutFetched(Self.notice) == .append(.payoutScheduled(Self.scheduled), expectedVersion: .exact(4)))

        // Monday a holiday on our calendar: we expect Tuesday, the acquirer's Monday is recorded as it said.
        var holiday = Self.steps(holidays: [Self.monday])
        _ = holiday.read(Self.recorded(4))
        var expected = Self.scheduled
        expected.expectedValueDate = Self.tuesday
        #expect(holiday.payoutFetched(Self.notice) == .append(.payoutScheduled(expected), expectedVersion: .exact(4)))

        // T+2 from Friday: Tuesday; T+0: Friday itself.
        #expect(Self.steps(lag: 2).expectedValueDate == Self.tuesday)
        #expect(Self.steps(lag: 0).expectedValueDate == Self.friday)
    }

    @Test func aBatchWithItsPayoutScheduledIsReconciledThenDone() {
        var steps = Self.steps()
        #expect(steps.read(Self.recorded(5)) == .reconcile(Self.recorded(5)))
        #expect(steps.reconciled() == .done(SettlementSteps.Outcome(state: Self.recorded(5), appendedEvents: 0)))
    }

    @Test func aPaidBatchIsReconciledThenDone() {
        var steps = Self.steps()
        #expect(steps.read(Self.recorded(6)) == .reconcile(Self.recorded(6)))
        #expect(steps.reconciled() == .done(SettlementSteps.Outcome(state: Self.recorded(6), appendedEvents: 0)))
    }

    @Test func eachAppendedEventIsFollowedByTheNextStepOfTheStateItMade() {
        var steps = Self.steps()
        _ = steps.read(nil)
        #expect(steps.appended() == .close(Self.opened))
        _ = steps.closed(Self.closed)
        #expect(steps.appended() == .submit(Self.closed))
        _ = steps.submitted(Self.receipt, reportSHA256: Self.reportSHA256, cleared: Self.cleared)
        _ = steps.appended()
        #expect(steps.appended() == .fetchPayout(batchNumber: 7))
        _ = steps.payoutFetched(Self.notice)
        #expect(steps.appended() == .reconcile(Self.recorded(5)))
    }

    // MARK: Version conflicts and the attempts bound

    @Test func aVersionConflictRereadsAndGoesOnFromTheStageFound() {
        var steps = Self.steps()
        #expect(steps.read(nil) == .append(.opened(Self.opened), expectedVersion: .noStream))
        #expect(steps.versionConflict() == .reread)
        // Another daemon opened and closed it meanwhile: submit.
        #expect(steps.read(Self.recorded(2)) == .submit(Self.closed))
        _ = steps.submitted(Self.receipt, reportSHA256: Self.reportSHA256, cleared: Self.cleared)
        #expect(steps.versionConflict() == .reread)
        // It was submitted meanwhile too: cleared with this run's totals, nothing loaded.
        #expect(steps.read(Self.recorded(3)) == .append(.cleared(Self.cleared), expectedVersion: .exact(3)))
        #expect(steps.versionConflict() == .reread)
        // The re-read may also find the same stage: the step is decided again.
        #expect(steps.read(Self.recorded(3)) == .append(.cleared(Self.cleared), expectedVersion: .exact(3)))
    }

    @Test func aConflictOnTheClosedEventRereadsAndClosesAgain() {
        // The database refuses a closed event whose items another batch took: the items are selected again.
        var steps = Self.steps()
        _ = steps.read(Self.recorded(1))
        _ = steps.closed(Self.closed)
        #expect(steps.versionConflict() == .reread)
        #expect(steps.read(Self.recorded(1)) == .close(Self.opened))
    }

    @Test func anotherDaemonRecordingStepsFirstLeavesEachEventRecordedOnce() {
        var performer = Performer(recorded: 0)
        performer.recordedByAnotherDaemonFirst = [SettlementBatchOpened.eventType, SettlementBatchSubmitted.eventType]
        var steps = Self.steps()
        let end = performer.run(&steps)
        #expect(end == .done(SettlementSteps.Outcome(state: Self.recorded(5), appendedEvents: 3)))
        #expect(performer.stream == Array(Self.events.prefix(5)))
        #expect(
            performer.actions == [
                .append(.opened(Self.opened), expectedVersion: .noStream), .reread,
                .close(Self.opened), .append(.closed(Self.closed), expectedVersion: .exact(1)),
                .submit(Self.closed), .append(.submitted(Self.submitted), expectedVersion: .exact(2)), .reread,
                .append(.cleared(Self.cleared), expectedVersion: .exact(3)),
                .fetchPayout(batchNumber: 7), .append(.payoutScheduled(Self.scheduled), expectedVersion: .exact(4)),
                .reconcile(Self.recorded(5)), .done(SettlementSteps.Outcome(state: Self.recorded(5), appendedEvents: 3)),
            ]
        )
    }

    @Test func conflictsUseUpTheAttemptsThenTheBatchIsTooBusy() {
        var steps = Self.steps(maximumAttempts: 3)
        for _ in 0..<2 {
            #expect(steps.read(nil) == .append(.opened(Self.opened), expectedVersion: .noStream))
            #expect(steps.versionConflict() == .reread)
        }
        #expect(steps.read(nil) == .append(.opened(Self.opened), expectedVersion: .noStream))
        #expect(steps.versionConflict() == .fail(.tooBusy(attempts: 3)))
    }

    @Test func everyStepIsAnAttemptSoTheBoundCanRunOutOnProgressToo() {
        var steps = Self.steps(maximumAttempts: 2)
        _ = steps.read(nil)
        #expect(steps.appended() == .close(Self.opened))
        _ = steps.closed(Self.closed)
        #expect(steps.appended() == .fail(.tooBusy(attempts: 2)))
    }

    /// The service's bound (20): a fresh batch takes 6 attempts, so 14 conflicts on the way still
    /// settle it; after a 15th the 20th attempt records the payout and the batch is too busy to be
    /// reconciled in this run (the next run finds it scheduled and reconciles it).
    @Test(arguments: [(14, true), (15, false)])
    func withTwentyAttemptsAFreshBatchSurvivesFourteenConflicts(conflicts: Int, settles: Bool) {
        var performer = Performer(recorded: 0)
        performer.refusals = conflicts
        var steps = Self.steps(maximumAttempts: 20)
        let end = performer.run(&steps)
        #expect(end == (settles ? .done(SettlementSteps.Outcome(state: Self.recorded(5), appendedEvents: 5)) : .fail(.tooBusy(attempts: 20))))
        #expect(performer.stream == Array(Self.events.prefix(5)))
        #expect(performer.actions.filter { $0 == .reread }.count == conflicts)
    }

    // MARK: Whole runs

    @Test func aFreshRunWalksEveryStepInOrder() {
        var performer = Performer(recorded: 0)
        var steps = Self.steps()
        _ = performer.run(&steps)
        #expect(performer.actions == Self.freshRun)
        #expect(performer.stream == Array(Self.events.prefix(5)))
    }

    /// The actions left for a run that finds the first `count` events recorded (a crash after them).
    static func remaining(after count: Int) -> [Action] {
        func done(_ appended: Int) -> Action { .done(SettlementSteps.Outcome(state: recorded(5), appendedEvents: appended)) }
        switch count {
        case 0: return freshRun
        case 1: return Array(freshRun[1...8]) + [done(4)]
        case 2: return Array(freshRun[3...8]) + [done(3)]
        case 3: return [.loadStoredClearing] + Array(freshRun[5...8]) + [done(2)]
        case 4: return Array(freshRun[6...8]) + [done(1)]
        case 5: return [.reconcile(recorded(5)), done(0)]
        default: return [.reconcile(recorded(6)), .done(SettlementSteps.Outcome(state: recorded(6), appendedEvents: 0))]
        }
    }

    /// Crash recovery: from every stage a killed run may leave, the next run does exactly the steps
    /// left and the stream ends as a run that never crashed leaves it.
    @Test(arguments: 0...6)
    func aRunResumingAfterACrashDoesExactlyTheRemainingSteps(recorded count: Int) {
        var performer = Performer(recorded: count)
        var steps = Self.steps()
        _ = performer.run(&steps)
        #expect(performer.actions == Self.remaining(after: count))
        #expect(performer.stream == Array(Self.events.prefix(max(5, count))))
    }

    @Test func anInputThatAnswersNoPendingActionTraps() async {
        await #expect(processExitsWith: .failure) {
            var steps = SettlementStepsTests.steps()
            _ = steps.appended()
        }
    }
}
