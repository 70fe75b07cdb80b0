import Foundation
import LedgerCoreTestSupport
import LedgerEngine
import LedgerPostgres
import Synchronization
import Testing

@testable import LedgerCore
@testable import LedgerServices

/// Every row of ``DisputeWorkflow``'s transition table, without a database: which order a command concerns, a
/// repeated notification, an unknown dispute, order or payment, the decider's refusal (what is disputable counts the
/// order's other disputes), and the order's status following the dispute — updated only when it changes.
@Suite struct DisputeWorkflowTests {
    static let order = oid("o-1")

    /// Order o-1 for the clock (59.00), authorized and captured in full; the order's status as its money gives it.
    static func captured() throws -> (OrderState, HoldState) {
        let ledger = try InMemoryLedger.withAuthorizedOrder(order)
        let authorized = try #require(ledger.holds[order])
        let capture = HoldCaptured(
            orderID: order,
            amount: usd("59.00"),
            isFinal: true,
            released: usd("0.00"),
            modificationReference: "o-1-capture-k1",
            pspModificationReference: "PSPC1",
            capturedAt: t0
        )
        let hold = try #require(HoldState.evolve(authorized, .captured(capture)))
        var order = try #require(ledger.orders[order])
        order.status = HoldLifecycle.status(balance: hold.balance, shipped: false)
        #expect(order.status == .captured)
        return (order, hold)
    }

    static func chargeback(_ id: String = "d-1", amount: String = "59.00") -> DisputeCommand {
        .chargeback(disputeID: id, orderID: order, pspReference: "PSP0001", reason: .visaFraudCardAbsent, amount: usd(amount))
    }

    static func inquiry(_ id: String = "d-1") -> DisputeCommand {
        .raiseInquiry(disputeID: id, orderID: order, pspReference: "PSP0001", reason: .visaNotReceived, amount: usd("59.00"))
    }

    /// The events a chargeback on the captured order records.
    static func chargedBack() throws -> [DisputeEvent] {
        let (order, hold) = try captured()
        guard case .record(let events, _) = DisputeWorkflow.decide(chargeback(), recorded: [], order: order, hold: hold, otherDisputes: [], now: t0)
        else {
            Issue.record("the chargeback was not recorded")
            return []
        }
        return events
    }

    @Test func startAsksForTheDisputesOrderOrTheOrderANewDisputeNames() throws {
        #expect(DisputeWorkflow.start(Self.chargeback(), recorded: [], repeats: false) == .loadOrder(Self.order))
        #expect(DisputeWorkflow.start(Self.inquiry(), recorded: [], repeats: false) == .loadOrder(Self.order))
        let recorded = try Self.chargedBack()
        #expect(
            DisputeWorkflow.start(.defend(evidenceRefs: ["ev-1"], by: "operator:op"), recorded: recorded, repeats: false) == .loadOrder(Self.order)
        )
    }

    @Test func aRepeatedNotificationOfARecordedDisputeAppendsNothingButOneOfNoDisputeIsDecided() throws {
        let recorded = try Self.chargedBack()
        #expect(DisputeWorkflow.start(.secondPresentment, recorded: recorded, repeats: true) == .alreadyRecorded)
        // Nothing recorded yet: a "repeat" has nothing to repeat, so the notification opens the dispute.
        #expect(DisputeWorkflow.start(Self.chargeback(), recorded: [], repeats: true) == .loadOrder(Self.order))
    }

    @Test func aCommandOnNoDisputeThatOpensNoneIsRefused() {
        for command: DisputeCommand in [
            .defend(evidenceRefs: ["ev"], by: "operator:op"), .accept(by: "operator:op"), .secondPresentment, .reverse, .preArbitration,
            .secondChargeback, .decide(.won, by: "acquirer"),
        ] {
            #expect(DisputeWorkflow.start(command, recorded: [], repeats: false) == .refused(.unknownDispute), "\(command.name)")
        }
    }

    @Test func noOrderOrNoPaymentIsRefusedBeforeTheDeciderIsAsked() throws {
        let (order, _) = try Self.captured()
        #expect(
            DisputeWorkflow.decide(Self.chargeback(), recorded: [], order: nil, hold: nil, otherDisputes: [], now: t0)
                == .refused(.unknownOrder(Self.order))
        )
        #expect(
            DisputeWorkflow.decide(Self.chargeback(), recorded: [], order: order, hold: nil, otherDisputes: [], now: t0)
                == .refused(.notCaptured(Self.order))
        )
    }

    @Test func whatOtherDisputesClaimIsNotDisputableAgainAndAWonOneFreesItsAmount() throws {
        let (order, hold) = try Self.captured()
        let other = try #require(DisputeState.fold(try Self.chargedBack()))
        var half = other
        half.disputeID = "d-0"
        half.amount = usd("20.00")
        #expect(DisputeWorkflow.disputable(hold: hold, others: [half]) == usd("39.00"))
        #expect(
            DisputeWorkflow.decide(Self.chargeback("d-2", amount: "40.00"), recorded: [], order: order, hold: hold, otherDisputes: [half], now: t0)
                == .refused(.rejected(.exceedsDisputable(requested: usd("40.00"), disputable: usd("39.00"))))
        )
        var won = half
        won.status = .won
        #expect(DisputeWorkflow.disputable(hold: hold, others: [won]) == usd("59.00"))
        guard
            case .record = DisputeWorkflow.decide(
                Self.chargeback("d-2", amount: "40.00"),
                recorded: [],
                order: order,
                hold: hold,
                otherDisputes: [won],
                now: t0
            )
        else {
            Issue.record("a won dispute still claimed its amount")
            return
        }
    }

    @Test func theDecidersRefusalComesBackAsIs() throws {
        let (order, hold) = try Self.captured()
        let recorded = try Self.chargedBack()
        // A chargeback is open for defence for 30 days: after them, defending is refused by the decider.
        let late = t0.addingTimeInterval(31 * 86_400)
        let step = DisputeWorkflow.decide(
            .defend(evidenceRefs: ["ev-1"], by: "operator:op"),
            recorded: recorded,
            order: order,
            hold: hold,
            otherDisputes: [],
            now: late
        )
        guard case .refused(.rejected(.deadlinePassed)) = step else {
            Issue.record("\(step)")
            return
        }
        #expect(
            DisputeWorkflow.decide(Self.chargeback(), recorded: recorded, order: order, hold: hold, otherDisputes: [], now: t0)
                == .refused(.rejected(.illegalTransition(command: "chargeback", status: .chargedBack)))
        )
    }

    @Test func theOrdersStatusFollowsTheDisputeAndIsUpdatedOnlyWhenItChanges() throws {
        let (captured, hold) = try Self.captured()
        var order = captured
        // A chargeback debits the merchant: captured → charged_back, one update of the order (operation "dispute").
        let step = DisputeWorkflow.decide(Self.chargeback(), recorded: [], order: order, hold: hold, otherDisputes: [], now: t0)
        guard case .record(let events, let update) = step else {
            Issue.record("\(step)")
            return
        }
        #expect(events.count == 1 && update == OrderPaymentUpdated(orderID: Self.order, operation: "dispute", status: .chargedBack))
        // An inquiry moves no money: captured → disputed.
        guard case .record(_, let asked) = DisputeWorkflow.decide(Self.inquiry(), recorded: [], order: order, hold: hold, otherDisputes: [], now: t0)
        else { return #expect(Bool(false)) }
        #expect(asked?.status == .disputed)
        // Defending a charged-back dispute leaves the order charged back: the dispute's events only.
        order.status = .chargedBack
        guard
            case .record(let defended, let unchanged) = DisputeWorkflow.decide(
                .defend(evidenceRefs: ["ev-1"], by: "operator:op"),
                recorded: events,
                order: order,
                hold: hold,
                otherDisputes: [],
                now: t0.addingTimeInterval(86_400)
            )
        else { return #expect(Bool(false)) }
        #expect(!defended.isEmpty && unchanged == nil)
        // Another dispute still charged back keeps the order charged back whatever this one does.
        var other = try #require(DisputeState.fold(events))
        other.amount = usd("20.00")
        guard
            case .record(_, let stays) = DisputeWorkflow.decide(
                Self.chargeback("d-2", amount: "39.00"),
                recorded: [],
                order: order,
                hold: hold,
                otherDisputes: [other],
                now: t0
            )
        else { return #expect(Bool(false)) }
        #expect(stays == nil)
    }
}

/// The loop the service runs over ``DisputeWorkflow`` (``DisputeActions/perform(_:repeats:)``), without a database:
/// the dispute's stream and the order's facts are in memory, and a commit can be scripted to meet a moved stream.
@Suite struct DisputeRunTests {
    /// An in-memory dispute stream and order; `conflicts` commits meet a moved stream first (another daemon's append).
    final class Steps: DisputeActions {
        let state: Mutex<(events: [DisputeEvent], order: OrderState?, hold: HoldState?, conflicts: Int, taken: [String])>

        init(events: [DisputeEvent] = [], order: OrderState?, hold: HoldState?, conflicts: Int = 0) {
            state = Mutex((events, order, hold, conflicts, []))
        }

        var taken: [String] { state.withLock { $0.taken } }
        var events: [DisputeEvent] { state.withLock { $0.events } }

        func recorded() async throws -> [DisputeEvent] {
            state.withLock {
                $0.taken.append("read dispute")
                return $0.events
            }
        }

        func facts(of order: OrderID, fresh: Bool) async throws -> DisputeFacts {
            state.withLock {
                $0.taken.append(fresh ? "read order fresh" : "read order")
                return DisputeFacts(order: $0.order, hold: $0.hold, otherDisputes: [])
            }
        }

        func now() -> Date { t0 }

        func commit(
            _ events: [DisputeEvent],
            after recorded: Int,
            orderUpdate: OrderPaymentUpdated?,
            order: OrderState,
            hold: HoldState,
            now: Date
        )
            async throws -> OrderStatus?
        {
            state.withLock {
                $0.taken.append("commit")
                guard $0.conflicts == 0, recorded == $0.events.count else {
                    $0.conflicts -= 1
                    return nil
                }
                $0.events += events
                return orderUpdate?.status ?? order.status
            }
        }
    }

    @Test func aChargebackIsDecidedOnTheOrderAndCommittedWithTheOrdersNewStatus() async throws {
        let (order, hold) = try DisputeWorkflowTests.captured()
        let steps = Steps(order: order, hold: hold)
        #expect(try await steps.perform(DisputeWorkflowTests.chargeback(), repeats: { _ in false }) == .recorded(orderStatus: .chargedBack))
        #expect(steps.taken == ["read dispute", "read order", "commit"])
        #expect(steps.events.count == 1)
    }

    @Test func aMovedStreamIsDecidedAgainOnFreshReads() async throws {
        let (order, hold) = try DisputeWorkflowTests.captured()
        let steps = Steps(order: order, hold: hold, conflicts: 1)
        #expect(try await steps.perform(DisputeWorkflowTests.chargeback(), repeats: { _ in false }) == .recorded(orderStatus: .chargedBack))
        #expect(steps.taken == ["read dispute", "read order", "commit", "read dispute", "read order fresh", "commit"])
    }

    @Test func aRepeatRecordedMeanwhileIsAnsweredAsRecordedAfterAConflict() async throws {
        // Two daemons record one numbered notification: the other's append lands first, so this one's is a repeat.
        let (order, hold) = try DisputeWorkflowTests.captured()
        let steps = Steps(order: order, hold: hold, conflicts: 1)
        let outcome = try await steps.perform(DisputeWorkflowTests.chargeback(), repeats: { !$0.isEmpty })
        #expect(outcome == .recorded(orderStatus: .chargedBack))
        let again = try await steps.perform(DisputeWorkflowTests.chargeback(), repeats: { !$0.isEmpty })
        #expect(again == .asRecorded)
        #expect(steps.events.count == 1)
    }

    @Test func aStreamOthersKeepMovingEndsBusyAfterTheAttemptBudget() async throws {
        let (order, hold) = try DisputeWorkflowTests.captured()
        let steps = Steps(order: order, hold: hold, conflicts: .max)
        await #expect(throws: AggregateStore.Contended.self) { try await steps.perform(DisputeWorkflowTests.chargeback(), repeats: { _ in false }) }
        #expect(steps.taken.filter { $0 == "commit" }.count == AggregateStore.maximumAttempts)
        #expect(steps.events.isEmpty)
    }

    @Test func refusalsComeBackWithoutACommit() async throws {
        let (order, hold) = try DisputeWorkflowTests.captured()
        let noDispute = Steps(order: order, hold: hold)
        await #expect(throws: DisputeRefusal.unknownDispute) { try await noDispute.perform(.accept(by: "operator:op"), repeats: { _ in false }) }
        #expect(noDispute.taken == ["read dispute"])
        let noOrder = Steps(order: nil, hold: nil)
        await #expect(throws: DisputeRefusal.unknownOrder(DisputeWorkflowTests.order)) {
            try await noOrder.perform(DisputeWorkflowTests.chargeback(), repeats: { _ in false })
        }
        let noPayment = Steps(order: order, hold: nil)
        await #expect(throws: DisputeRefusal.notCaptured(DisputeWorkflowTests.order)) {
            try await noPayment.perform(DisputeWorkflowTests.chargeback(), repeats: { _ in false })
        }
        let tooMuch = Steps(order: order, hold: hold)
        await #expect(throws: DisputeRefusal.rejected(.exceedsDisputable(requested: usd("60.00"), disputable: usd("59.00")))) {
            try await tooMuch.perform(DisputeWorkflowTests.chargeback(amount: "60.00"), repeats: { _ in false })
        }
        #expect((noOrder.taken + noPayment.taken + tooMuch.taken).allSatisfy { $0 != "commit" })
    }

    @Test func theMerchantKeepsCapturedLessRefundedLessChargedBackPlusReversed() throws {
        let (_, hold) = try DisputeWorkflowTests.captured()
        var dispute = try #require(DisputeState.fold(try DisputeWorkflowTests.chargedBack()))
        #expect(DisputeWorkflow.netKept(hold: hold, disputes: []) == usd("59.00"))
        #expect(DisputeWorkflow.netKept(hold: hold, disputes: [dispute]) == usd("0.00"))
        dispute.reversed = usd("59.00")
        #expect(DisputeWorkflow.netKept(hold: hold, disputes: [dispute]) == usd("59.00"))
    }
}
