import Foundation
import LedgerCore
import LedgerCoreTestSupport
import Synchronization
import Testing

@testable import LedgerServices

/// Every row of ``HoldWorkflow``'s transition table, through the loop the service runs
/// (``HoldActions/perform(from:recording:)``), without a database: the order and hold are real states (an authorized
/// order of 59.00 on the in-memory ledger) and ``HoldLifecycle`` decides what to ask the acquirer; the acquirer's
/// answers and how recording goes are scripted per test. Each test states the steps taken — a note kept or dropped,
/// a call sent or not, a recording checked or not — and the answer.
@Suite struct HoldWorkflowTests {
    static let orderID = oid("o-1")

    /// An in-memory performer of one operation's steps, recording which it was asked for.
    final class Steps: HoldActions {
        struct Script: Sendable {
            var operation: HoldOperation
            var acquirer: [ModificationAttempt] = []
            var recordings: [HoldRecording] = []
        }

        let ledger: InMemoryLedger
        let state: Mutex<(script: Script, taken: [String])>

        init(_ ledger: InMemoryLedger, _ script: Script) {
            self.ledger = ledger
            state = Mutex((script, []))
        }

        var taken: [String] { state.withLock { $0.taken } }
        func take(_ step: String) { state.withLock { $0.taken.append(step) } }

        func prepare() async throws -> HoldPreparation {
            take("prepare")
            let order = ledger.orders[HoldWorkflowTests.orderID]!
            let operation = state.withLock { $0.script.operation }
            return HoldPreparation(
                operation: operation,
                order: order,
                hold: ledger.holds[HoldWorkflowTests.orderID],
                modificationReference: HoldLifecycle.modificationReference(order: order, operation: operation, key: "k1"),
                now: t0
            )
        }

        func current() async throws -> (order: OrderState, hold: HoldState?) {
            take("current")
            return (ledger.orders[HoldWorkflowTests.orderID]!, ledger.holds[HoldWorkflowTests.orderID])
        }

        func note(_ call: HoldAcquirerCall) async throws { take("note") }
        func dropNote(_ call: HoldAcquirerCall) async { take("drop note") }

        func send(_ call: HoldAcquirerCall) async -> ModificationAttempt {
            state.withLock {
                $0.taken.append("send")
                return $0.script.acquirer.removeFirst()
            }
        }

        func record(
            _ operation: HoldOperation,
            _ response: ModificationResponse?,
            checkingBalance: Bool,
            decidedOn: (order: OrderState, hold: HoldState)?
        ) async throws -> (HoldRecording, after: (order: OrderState, hold: HoldState?)?) {
            let outcome = state.withLock {
                $0.taken.append(checkingBalance ? "record checked" : "record")
                return $0.script.recordings.removeFirst()
            }
            guard case .recorded = outcome else { return (outcome, nil) }
            return (outcome, (ledger.orders[HoldWorkflowTests.orderID]!, ledger.holds[HoldWorkflowTests.orderID]))
        }

        func catchUp(before response: ModificationResponse) async throws { take("catch up before \(response.modificationReference)") }
    }

    /// The seeded catalogue with order o-1 (the clock, 59.00) authorized.
    static func authorized() throws -> InMemoryLedger { try InMemoryLedger.withAuthorizedOrder(orderID) }

    /// The acquirer's answer to a capture of `amount` on the authorized hold (the balance it reports after it).
    static func captured(_ amount: String, reference: String = "o-1-capture-k1", approved: Bool = true) throws -> ModificationResponse {
        let hold = try authorized().holds[orderID]!
        var balance = hold.balance
        balance.captured = usd(amount)
        balance.open = Money(minorUnits: hold.balance.open.minorUnits - usd(amount).minorUnits, currency: .usd)
        return ModificationResponse(
            kind: .capture,
            authorizationReference: hold.merchantReference,
            modificationReference: reference,
            pspReference: "PSP0001",
            modificationPSPReference: "PSPC-\(reference)",
            responseCode: approved ? .approved : .insufficientFunds,
            amount: usd(amount),
            isFinal: false,
            processedAt: t0,
            balance: balance
        )
    }

    static func declinedIncrement() throws -> ModificationResponse {
        var response = try captured("0.00")
        response.kind = .increment
        response.amount = usd("10.00")
        response.responseCode = .insufficientFunds
        return response
    }

    func run(_ steps: Steps, from first: HoldStep = .prepare) async throws -> HoldAnswer {
        try await steps.perform(from: first).answer
    }

    // MARK: The idempotency key

    @Test func aKeyNotSeenOrNoKeyPrepares() {
        #expect(HoldWorkflow.start(keyGiven: false, stored: [1], requestHash: [2]) == .prepare, "without a key nothing was stored for it")
        #expect(HoldWorkflow.start(keyGiven: true, stored: nil, requestHash: [2]) == .prepare)
    }

    @Test func aKeySeenWithThisRequestAnswersTheOrderAsItStandsWithoutCallingTheAcquirer() async throws {
        let first = HoldWorkflow.start(keyGiven: true, stored: [7, 7], requestHash: [7, 7])
        #expect(first == .answerReplay)
        let steps = Steps(try Self.authorized(), .init(operation: .capture(amount: usd("20.00"), isFinal: false)))
        let done = try await steps.perform(from: first)
        #expect(done.answer == .replayed(nil))
        #expect(done.order.status == .authorized)
        #expect(steps.taken == ["current"])
    }

    @Test func aKeySeenWithAnotherRequestFailsWithoutAnyStep() async throws {
        let first = HoldWorkflow.start(keyGiven: true, stored: [7], requestHash: [8])
        let steps = Steps(try Self.authorized(), .init(operation: .capture(amount: nil, isFinal: true)))
        await #expect(throws: HoldFailure.idempotencyConflict) { try await run(steps, from: first) }
        #expect(steps.taken.isEmpty)
    }

    // MARK: Preparing and sending

    @Test func anOperationTheLifecycleRefusesSendsAndNotesNothing() async throws {
        let steps = Steps(try Self.authorized(), .init(operation: .capture(amount: usd("60.00"), isFinal: false)))
        await #expect(throws: HoldFailure.rejected(.exceedsOpen(requested: usd("60.00"), open: usd("59.00")))) { try await run(steps) }
        #expect(steps.taken == ["prepare"])
    }

    @Test func anAppliedCaptureIsNotedSentRecordedCheckedAndItsNoteDropped() async throws {
        let answer = try Self.captured("20.00")
        let steps = Steps(
            try Self.authorized(),
            .init(
                operation: .capture(amount: usd("20.00"), isFinal: false),
                acquirer: [.answered(answer)],
                recordings: [.recorded(appended: true, replayed: false)]
            )
        )
        #expect(try await run(steps) == .applied(answer))
        #expect(steps.taken == ["prepare", "note", "send", "record checked", "drop note"])
    }

    @Test func aRefusalIsDefiniteTheNoteIsDroppedAndNothingRecorded() async throws {
        let refusal = AcquirerError(.holdExpired, "expired")
        let steps = Steps(try Self.authorized(), .init(operation: .void(amount: nil), acquirer: [.refused(refusal)]))
        await #expect(throws: HoldFailure.acquirerRefused(refusal)) { try await run(steps) }
        #expect(steps.taken == ["prepare", "note", "send", "drop note"])
    }

    @Test func noAnswerKeepsTheNoteForRecoveryAndRecordsNothing() async throws {
        let steps = Steps(try Self.authorized(), .init(operation: .capture(amount: nil, isFinal: true), acquirer: [.unreachable]))
        await #expect(throws: HoldFailure.acquirerUnavailable) { try await run(steps) }
        #expect(steps.taken == ["prepare", "note", "send"], "the note stays: recovery asks the acquirer whether it applied it")
    }

    @Test func nothingToAskTheAcquirerRecordsWithoutANoteOrACall() async throws {
        // A void of an order whose hold is fully captured is refused; a shipment of a fully captured order asks nothing.
        var ledger = try Self.authorized()
        let hold = ledger.holds[Self.orderID]!
        var response = try Self.captured("59.00")
        response.isFinal = true
        response.released = usd("0.00")
        try ledger.commit(
            try HoldLifecycle.record(
                .capture(amount: usd("59.00"), isFinal: true),
                response: response,
                order: ledger.orders[Self.orderID]!,
                hold: hold,
                products: ledger.products(for: ledger.orders[Self.orderID]!),
                context: ctx
            ).get()
        )
        let steps = Steps(ledger, .init(operation: .ship(carrier: "UPS", tracking: "1Z"), recordings: [.recorded(appended: true, replayed: false)]))
        #expect(try await run(steps) == .applied(nil))
        #expect(steps.taken == ["prepare", "record"])
    }

    // MARK: Recording

    @Test func aDeclinedIncrementIsAnAnswerNotAnError() async throws {
        let declined = try Self.declinedIncrement()
        let steps = Steps(
            try Self.authorized(),
            .init(
                operation: .increment(amount: usd("10.00")),
                acquirer: [.answered(declined)],
                recordings: [.recorded(appended: false, replayed: false)]
            )
        )
        #expect(try await run(steps) == .declined(declined))
        #expect(steps.taken == ["prepare", "note", "send", "record checked", "drop note"])
    }

    @Test func aRecordingAnEarlierRequestMadeIsAReplayWithThisAnswer() async throws {
        let answer = try Self.captured("20.00")
        let steps = Steps(
            try Self.authorized(),
            .init(
                operation: .capture(amount: usd("20.00"), isFinal: false),
                acquirer: [.answered(answer)],
                recordings: [.recorded(appended: false, replayed: true)]
            )
        )
        #expect(try await run(steps) == .replayed(answer))
    }

    @Test func anAnswerAheadOfTheLedgerCatchesUpThenRecordsUnchecked() async throws {
        let answer = try Self.captured("20.00")
        let steps = Steps(
            try Self.authorized(),
            .init(
                operation: .capture(amount: usd("20.00"), isFinal: false),
                acquirer: [.answered(answer)],
                recordings: [.behindTheAcquirer, .recorded(appended: true, replayed: false)]
            )
        )
        #expect(try await run(steps) == .applied(answer))
        #expect(steps.taken == ["prepare", "note", "send", "record checked", "catch up before o-1-capture-k1", "record", "drop note"])
    }

    @Test func anAnswerThatDoesNotFitIsCaughtUpOnceThenRefused() async throws {
        let answer = try Self.captured("20.00")
        let steps = Steps(
            try Self.authorized(),
            .init(
                operation: .capture(amount: usd("20.00"), isFinal: false),
                acquirer: [.answered(answer)],
                recordings: [.refused(.responseMismatch("amount")), .refused(.responseMismatch("amount"))]
            )
        )
        await #expect(throws: HoldFailure.rejected(.responseMismatch("amount"))) { try await run(steps) }
        #expect(steps.taken == ["prepare", "note", "send", "record checked", "catch up before o-1-capture-k1", "record"], "the note stays")
    }

    @Test func anotherRefusalOfTheRecordingFailsAtOnce() async throws {
        let steps = Steps(
            try Self.authorized(),
            .init(
                operation: .capture(amount: nil, isFinal: true),
                acquirer: [.answered(try Self.captured("59.00"))],
                recordings: [.refused(.chargedBack(Self.orderID))]
            )
        )
        await #expect(throws: HoldFailure.rejected(.chargedBack(Self.orderID))) { try await run(steps) }
        #expect(steps.taken == ["prepare", "note", "send", "record checked"])
    }

    @Test func anOrderOthersKeepMovingIsBusy() async throws {
        let steps = Steps(
            try Self.authorized(),
            .init(operation: .capture(amount: nil, isFinal: true), acquirer: [.answered(try Self.captured("59.00"))], recordings: [.contended])
        )
        await #expect(throws: HoldFailure.busy) { try await run(steps) }
    }

    @Test func anAnswerRecordedLateStartsFromItsRecordingOrItsCatchUp() async throws {
        let answer = try Self.captured("20.00")
        let late = Steps(try Self.authorized(), .init(operation: .void(amount: nil), recordings: [.recorded(appended: true, replayed: false)]))
        #expect(
            try await late.perform(from: .record(answer, checkingBalance: false), recording: HoldWorkflow.operation(of: answer)).answer
                == .applied(answer)
        )
        #expect(late.taken == ["record"])
        let recovered = Steps(try Self.authorized(), .init(operation: .void(amount: nil), recordings: [.recorded(appended: true, replayed: false)]))
        _ = try await recovered.perform(from: .catchUp(answer), recording: HoldWorkflow.operation(of: answer))
        #expect(recovered.taken == ["catch up before o-1-capture-k1", "record"])
    }

    // MARK: The balance check and what the ledger lacks

    @Test func anAnswerLandsWhereTheAcquirerSaysOnlyWhenItsBalanceIsTheHoldsAfterIt() throws {
        let ledger = try Self.authorized()
        let hold = ledger.holds[Self.orderID]!
        let order = ledger.orders[Self.orderID]!
        let answer = try Self.captured("20.00")
        let plan = try HoldLifecycle.record(
            .capture(amount: usd("20.00"), isFinal: false),
            response: answer,
            order: order,
            hold: hold,
            products: [:],
            context: ctx
        ).get()
        #expect(HoldWorkflow.landsWhereTheAcquirerSays(plan, hold: hold, response: answer))
        var ahead = answer
        ahead.balance.captured = usd("30.00")  // the acquirer applied another 10.00 capture first
        ahead.balance.open = usd("29.00")
        #expect(!HoldWorkflow.landsWhereTheAcquirerSays(plan, hold: hold, response: ahead))
        #expect(HoldWorkflow.landsWhereTheAcquirerSays(AppendPlan([]), hold: hold, response: ahead), "nothing appended: nothing to check")
    }

    @Test func theLedgerLacksTheApprovedModificationsItHasNotRecordedBeforeTheGivenOne() throws {
        let hold = try Self.authorized().holds[Self.orderID]!
        let first = try Self.captured("10.00", reference: "m-1")
        let declined = try Self.captured("5.00", reference: "m-2", approved: false)
        let ours = try Self.captured("20.00", reference: "m-3")
        let later = try Self.captured("1.00", reference: "m-4")
        let details = PaymentDetails(
            authorization: Responses.approved(try Self.authorized().orders[Self.orderID]!),
            status: .open,
            balance: nil,
            modifications: [
                first, declined, ours, later,
            ]
        )
        #expect(HoldWorkflow.unrecorded(details, hold: hold).map(\.modificationReference) == ["m-1", "m-3", "m-4"])
        #expect(HoldWorkflow.unrecorded(details, hold: hold, before: "m-3").map(\.modificationReference) == ["m-1"])
        #expect(HoldWorkflow.unrecorded(details, hold: hold, before: "unknown").map(\.modificationReference) == ["m-1", "m-3", "m-4"])
    }

    @Test(arguments: [ModificationKind.capture, .increment, .reversal, .refund])
    func aModificationTheAcquirerAppliedRecordsTheOperationOfItsKind(kind: ModificationKind) throws {
        var modification = try Self.captured("20.00")
        modification.kind = kind
        switch (kind, HoldWorkflow.operation(of: modification)) {
        case (.capture, .capture(let amount, let isFinal)): #expect(amount == usd("20.00") && !isFinal)
        case (.increment, .increment(let amount)), (.reversal, .void(let amount?)): #expect(amount == usd("20.00"))
        case (.refund, .refund(let amount, let reason)): #expect(amount == usd("20.00") && reason == "recorded from the acquirer")
        case (_, let other): Issue.record("\(kind) recorded as \(other)")
        }
    }
}
