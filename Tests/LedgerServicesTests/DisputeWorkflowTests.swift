import Foundation
import LedgerCoreTestSupport
import LedgerEngine
import LedgerPostgres
import Logging
import Synchronization
import Testing

@testable import LedgerCore
@testable import LedgerServices

/// Every row of ``DisputeWorkflow``'s transition table, without a database: which order a command concerns, a
/// repeated notification, an unknown dispute, order or payment, the decider's refusal (what is disputable counts the
/// order's other disputes), and the order's status following the dispute — updated only when it changes.
@Suite struct DisputeWorkflowTests {
    static let order = oid("o-1")

    /// The capture of o-1 in full.
    static let capture = HoldCaptured(
        orderID: order,
        amount: usd("59.00"),
        isFinal: true,
        released: usd("0.00"),
        modificationReference: "o-1-capture-k1",
        pspModificationReference: "PSPC1",
        capturedAt: t0
    )

    /// Order o-1 for the clock (59.00), authorized and captured in full; the order's status as its money gives it.
    static func captured() throws -> (OrderState, HoldState) {
        let ledger = try InMemoryLedger.withAuthorizedOrder(order)
        let authorized = try #require(ledger.holds[order])
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

/// The dispute commands through the real ``DisputeService`` on in-memory ports (issue 56: the service's own retry loop
/// and its test double are gone): the engine's runner and writer on the in-memory log, the log's dispute index; the
/// dispute's stream can be made to move under a decision (another daemon's append).
@Suite struct DisputeRunTests {
    static let logger = Logger(label: "dispute-run-test") { _ in SwiftLogNoOpLogHandler() }

    /// The service on a log holding order o-1, authorized and captured in full, its writer's loop running for `body`;
    /// `moves`: how many reads of a dispute's stream another daemon's chargeback follows.
    static func withService(moves: Int = 0, _ body: (DisputeService, InMemoryEventLog, MovingReads) async throws -> Void) async throws {
        let log = InMemoryEventLog()
        let writer = LedgerWriter(log: log, clock: ManualClock(t0), ids: SeededIDs(seed: 56))
        let loop = Task { try await writer.run() }
        defer {
            writer.stop()
            loop.cancel()
        }
        let ledger = try InMemoryLedger.withAuthorizedOrder(DisputeWorkflowTests.order)
        var streams = ledger.streams
        streams[DisputeWorkflowTests.order.holdStreamID]!.append(.hold(.captured(DisputeWorkflowTests.capture)))
        let seed = streams.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { PlannedAppend(streamID: $0.key, expectedVersion: .noStream, events: $0.value) }
        _ = try await writer.append(try AggregateStates().appendRequest(for: seed, now: t0, metadata: EventMetadata()).request)
        // Another daemon's chargeback of d-1 appended after each of the first `moves` reads of a dispute's stream.
        let reads = MovingReads(log: log, moves: moves, moving: { $0.rawValue.hasPrefix("dispute-") }) { streamID, _ in
            let theirs = try DisputeWorkflowTests.chargedBack().map { try $0.ledgerEvent.newEvent(eventID: UUID.newRandom(), effectiveAt: t0) }
            _ = try await writer.append(AppendRequest(stream: streamID, expectedVersion: .noStream, events: theirs))
        }
        let service = DisputeService(aggregates: AggregateStore(writer: writer, store: reads), index: log, clock: { t0 }, logger: logger)
        try await body(service, log, reads)
    }

    static func chargeback(amount: String = "59.00", stageNumber: Int? = nil, order: String = "o-1") -> DisputeNotification {
        DisputeNotification(
            disputeID: "d-1",
            stage: .chargeback,
            orderID: order,
            pspReference: "PSP0001",
            reason: .visaFraudCardAbsent,
            amount: usd(amount),
            stageNumber: stageNumber
        )
    }

    @Test func aChargebackIsDecidedOnTheOrderAndAppendedWithTheOrdersNewStatus() async throws {
        try await Self.withService { service, log, _ in
            let before = await log.head().position
            let view = try await service.receive(Self.chargeback())
            #expect(view.orderStatus == .chargedBack)
            #expect(view.state.chargedBack == usd("59.00"))
            // One append: the dispute's events and the order's update, nothing else.
            let appended = await log.events.filter { $0.position > before }
            #expect(appended.filter { $0.streamID == DisputeWorkflowTests.order.streamID }.map(\.type) == ["OrderPaymentUpdated"])
            #expect(appended.filter { $0.streamID.rawValue == "dispute-d-1" }.count == (try DisputeWorkflowTests.chargedBack()).count)
            #expect(appended.count == (try DisputeWorkflowTests.chargedBack()).count + 1)
            #expect(try await service.aggregates.order(DisputeWorkflowTests.order)?.status == .chargedBack)
        }
    }

    @Test func aMovedStreamIsPreparedAgainOnFreshReadsAndARepeatIsAnsweredAsRecorded() async throws {
        // Two daemons record one numbered notification: the other's append lands between this one's read and its
        // append; this one's is decided again on the stream read again, a repeat now, and appends nothing.
        try await Self.withService(moves: 1) { service, log, reads in
            let view = try await service.receive(Self.chargeback(stageNumber: 1))
            #expect(reads.reads.load(ordering: .relaxed) >= 2)
            #expect(view.state.chargedBack == usd("59.00"))
            let disputeEvents = await log.readStream(StreamID("dispute-d-1")!)
            #expect(disputeEvents.count == (try DisputeWorkflowTests.chargedBack()).count)
        }
    }

    @Test func anUnnumberedChargebackMetByAnotherDaemonsIsDecidedAgainAndRefusedAsIllegal() async throws {
        // The other daemon's chargeback lands between this one's read and its append: decided again on the stream read
        // again, this unnumbered one is a chargeback of a charged-back dispute now (409), appending nothing more.
        try await Self.withService(moves: 1) { service, log, _ in
            do {
                _ = try await service.receive(Self.chargeback())
                Issue.record("a second chargeback opened d-1 again")
            } catch let error as ServiceError {
                #expect(error.code == "illegal_transition")
            }
            let disputeEvents = await log.readStream(StreamID("dispute-d-1")!)
            #expect(disputeEvents.count == (try DisputeWorkflowTests.chargedBack()).count)
        }
    }

    @Test func refusalsAppendNothing() async throws {
        try await Self.withService { service, log, _ in
            let before = await log.head().position
            await #expect(throws: ServiceError.notFound("no dispute d-1")) { try await service.accept(id: "d-1", actor: "operator:op") }
            do {
                _ = try await service.receive(Self.chargeback(order: "o-2"))
                Issue.record("a chargeback of an unknown order was recorded")
            } catch let error as ServiceError {
                #expect(error.code == "unknown_order")
            }
            do {
                _ = try await service.receive(Self.chargeback(amount: "60.00"))
                Issue.record("a chargeback above the disputable amount was recorded")
            } catch let error as ServiceError {
                #expect(error.code == "exceeds_disputable")
            }
            #expect(await log.head().position == before)
        }
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
