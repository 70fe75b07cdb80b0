import Foundation
import LedgerCore
import LedgerCoreTestSupport
import Synchronization
import Testing

@testable import LedgerServices

/// Every row of ``PaymentWorkflow``'s transition table, through the loop the service runs
/// (``PaymentActions/perform(_:paying:correlation:)``), without a database: the steps are performed on an in-memory
/// ledger whose orders and holds are decided by the same ``PaymentFlow`` the writer runs, and an acquirer scripted per
/// test. Each test states the steps taken (so a skipped or extra acquirer call fails it) and the answer.
@Suite struct PaymentWorkflowTests {
    static let orderID = oid("o-1")

    /// An in-memory performer of the payment's steps, recording which it was asked for.
    final class Steps: PaymentActions {
        let capturePolicy: CapturePolicy
        let state: Mutex<(ledger: InMemoryLedger, acquirer: [AuthorizationAttempt], query: PaymentQueryResult?, taken: [String])>
        let captureSucceeds: Bool
        /// The order as the earlier request's appends left it (``PaymentActions/firstOrder(_:)``); nil: as it stands.
        let first: OrderState?

        init(
            _ ledger: InMemoryLedger,
            acquirer: [AuthorizationAttempt],
            query: PaymentQueryResult? = nil,
            capture: CapturePolicy = .onShipment,
            captureSucceeds: Bool = true,
            first: OrderState? = nil
        ) {
            state = Mutex((ledger, acquirer, query, []))
            capturePolicy = capture
            self.captureSucceeds = captureSucceeds
            self.first = first
        }

        var taken: [String] { state.withLock { $0.taken } }
        var ledger: InMemoryLedger { state.withLock { $0.ledger } }

        func order(_ id: OrderID) async throws -> OrderState? {
            state.withLock {
                $0.taken.append("load")
                return $0.ledger.orders[id]
            }
        }

        func hold(_ id: OrderID) async throws -> HoldState? {
            state.withLock {
                $0.taken.append("hold")
                return $0.ledger.holds[id]
            }
        }

        func authorize(_ order: OrderState, paying method: PaymentMethodData) async -> AuthorizationAttempt {
            state.withLock {
                $0.taken.append("authorize")
                return $0.acquirer.removeFirst()
            }
        }

        func record(
            _ response: AuthorizationResponse,
            for order: OrderState,
            correlation: String
        ) async throws -> (order: OrderState, hold: HoldState?) {
            try state.withLock {
                $0.taken.append("record")
                let products = $0.ledger.products(for: order)
                try $0.ledger.commit(try PaymentFlow.recordAuthorization(response, order: order, products: products, context: ctx).get())
                return ($0.ledger.orders[order.id]!, $0.ledger.holds[order.id])
            }
        }

        func firstOrder(_ id: OrderID) async throws -> OrderState? {
            state.withLock {
                $0.taken.append("first")
                return first ?? $0.ledger.orders[id]
            }
        }

        func captureAtAuthorization(_ order: OrderID, correlation: String) async -> Bool {
            state.withLock {
                $0.taken.append("capture")
                guard captureSucceeds, let hold = $0.ledger.holds[order] else { return false }
                try! $0.ledger.commit(PaymentWorkflowTests.captureInFull(hold, order: $0.ledger.orders[order]!))
                return true
            }
        }

        func resolveNow(_ order: OrderID, correlation: String) async -> Bool {
            state.withLock {
                $0.taken.append("recover")
                guard let query = $0.query, let current = $0.ledger.orders[order] else { return false }
                let later = DecisionContext(now: t0.addingTimeInterval(600))
                switch PaymentFlow.recover(
                    order: current,
                    query: query,
                    products: $0.ledger.products(for: current),
                    policy: .standard,
                    context: later
                ) {
                case .success(.append(let plan)):
                    try! $0.ledger.commit(plan)
                    return true
                default: return false
                }
            }
        }
    }

    /// The seeded catalogue with order o-1 opened for the clock (59.00), pending payment.
    static func opened() throws -> InMemoryLedger { try InMemoryLedger.withOpenOrder(orderID) }

    /// The hold and order events of a final capture of everything open on `hold` (what the automatic capture records).
    static func captureInFull(_ hold: HoldState, order: OrderState) throws -> AppendPlan {
        var after = hold.balance
        after.captured = hold.balance.open
        after.open = usd("0.00")
        let response = ModificationResponse(
            kind: .capture,
            authorizationReference: hold.merchantReference,
            modificationReference: "o-1-capture-automatic",
            pspReference: hold.pspReference,
            modificationPSPReference: "PSPC1",
            responseCode: .approved,
            amount: hold.balance.open,
            isFinal: true,
            processedAt: t0,
            balance: after,
            released: usd("0.00")
        )
        return try HoldLifecycle.record(
            .capture(amount: nil, isFinal: true),
            response: response,
            order: order,
            hold: hold,
            products: [:],
            context: ctx
        ).get()
    }

    static let card = PaymentMethodData.token("tok_visa")

    func pay(_ steps: Steps, _ opening: PaymentOpening = .opened(orderID)) async throws -> PaymentAnswer {
        try await steps.perform(PaymentWorkflow.opened(opening), paying: Self.card, correlation: "c-1")
    }

    @Test func anApprovalIsRecordedAndAnsweredWithTheHoldsAuthCode() async throws {
        let ledger = try Self.opened()
        let steps = Steps(ledger, acquirer: [.answered(Responses.approved(ledger.orders[Self.orderID]!))])
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record"])
        #expect(answer.result == .succeeded)
        #expect(answer.reference == "PSP0001")
        #expect(answer.authCode == "A1B2C3")
        #expect(answer.orderStatus == .authorized)
        #expect(answer.amount == usd("59.00"))
    }

    @Test func aDeclineIsRecordedAndAnsweredWithItsCode() async throws {
        let ledger = try Self.opened()
        let steps = Steps(ledger, acquirer: [.answered(Responses.declined(ledger.orders[Self.orderID]!, code: .insufficientFunds))])
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record"])
        #expect(answer.result == .declined)
        #expect(answer.declineCode == "51")
        #expect(answer.orderStatus == .declined)
        #expect(steps.ledger.products[pid("clock")]?.reservations.isEmpty == true, "the reservation is released")
    }

    @Test func anUnreachableAcquirerLeavesTheOrderPendingAndTheShopperUncharged() async throws {
        let steps = Steps(try Self.opened(), acquirer: [.unreachable])
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize"], "nothing is recorded: recovery resolves the order")
        #expect(answer.result == .acquirerUnreachable)
        #expect(answer.declineCode == "96")
        #expect(answer.reference == Self.orderID.rawValue)
        #expect(steps.ledger.orders[Self.orderID]?.status == .pendingPayment)
    }

    @Test func anUnknownOutcomeIsResolvedOnTheSpotAndAnsweredAsRecovered() async throws {
        let ledger = try Self.opened()
        let order = ledger.orders[Self.orderID]!
        let steps = Steps(ledger, acquirer: [.answered(Responses.unknown(order))], query: Responses.found(Responses.approved(order), status: .open))
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record", "recover", "load", "hold"])
        #expect(answer.result == .succeeded, "the acquirer's later word (approved, open) is the answer")
        #expect(answer.orderStatus == .authorized)
    }

    @Test func anUnknownOutcomeRecoveryCannotResolveIsAnsweredUnchargedWithItsCode() async throws {
        let ledger = try Self.opened()
        let steps = Steps(ledger, acquirer: [.answered(Responses.unknown(ledger.orders[Self.orderID]!))], query: nil)
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record", "recover", "load"])
        #expect(answer.result == .acquirerUnreachable)
        #expect(answer.declineCode == "91")
        #expect(answer.orderStatus == .paymentUnknown)
    }

    @Test func theAutomaticPolicyCapturesAtAuthorizationAndAnswersTheCapturedOrder() async throws {
        let ledger = try Self.opened()
        let steps = Steps(ledger, acquirer: [.answered(Responses.approved(ledger.orders[Self.orderID]!))], capture: .automatic)
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record", "capture", "load", "hold"])
        #expect(answer.result == .succeeded)
        #expect(answer.orderStatus == .captured)
        #expect(answer.authCode == "A1B2C3")
    }

    @Test func aFailedAutomaticCaptureStillAnswersTheAuthorizedPayment() async throws {
        let ledger = try Self.opened()
        let steps = Steps(
            ledger,
            acquirer: [.answered(Responses.approved(ledger.orders[Self.orderID]!))],
            capture: .automatic,
            captureSucceeds: false
        )
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record", "capture", "load", "hold"])
        #expect(answer.result == .succeeded)
        #expect(answer.orderStatus == .authorized)
    }

    @Test func aDeclineIsNeverCapturedUnderTheAutomaticPolicy() async throws {
        let ledger = try Self.opened()
        let steps = Steps(ledger, acquirer: [.answered(Responses.declined(ledger.orders[Self.orderID]!, code: .doNotHonor))], capture: .automatic)
        let answer = try await pay(steps)
        #expect(steps.taken == ["load", "authorize", "record"])
        #expect(answer.result == .declined)
    }

    @Test func aReplayOfASettledPaymentAnswersItWithoutCallingTheAcquirer() async throws {
        var ledger = try Self.opened()
        let order = ledger.orders[Self.orderID]!
        try ledger.commit(
            try PaymentFlow.recordAuthorization(Responses.approved(order), order: order, products: ledger.products(for: order), context: ctx).get()
        )
        let steps = Steps(ledger, acquirer: [])
        let answer = try await pay(steps, .replayed(Self.orderID))
        #expect(steps.taken == ["load", "load", "first", "hold"])
        #expect(answer.result == .succeeded)
        #expect(answer.authCode == "A1B2C3")
    }

    /// A replay answers what the earlier request answered: the order as that request left it (authorized), not as it
    /// stands after a shipment captured it; but a payment that request left undecided is answered as decided since.
    @Test func aReplayAnswersTheFirstRequestsOrderUnlessItLeftThePaymentUndecided() async throws {
        var ledger = try Self.opened()
        let pending = ledger.orders[Self.orderID]!
        try ledger.commit(
            try PaymentFlow.recordAuthorization(Responses.approved(pending), order: pending, products: ledger.products(for: pending), context: ctx)
                .get()
        )
        let authorized = ledger.orders[Self.orderID]!
        try ledger.commit(try Self.captureInFull(ledger.holds[Self.orderID]!, order: authorized))
        #expect(ledger.orders[Self.orderID]!.status != authorized.status, "the capture moved the order on")
        let steps = Steps(ledger, acquirer: [], first: authorized)
        let answer = try await pay(steps, .replayed(Self.orderID))
        #expect(steps.taken == ["load", "load", "first", "hold"])
        #expect(answer.orderStatus == authorized.status && answer.result == .succeeded && answer.authCode == "A1B2C3")
        // The earlier request answered "not charged" (the order still pending): the replay answers the decision since.
        let undecided = Steps(ledger, acquirer: [], first: pending)
        let decided = try await pay(undecided, .replayed(Self.orderID))
        #expect(decided.orderStatus == ledger.orders[Self.orderID]!.status && decided.result == .succeeded)
        #expect(PaymentWorkflow.replayed(first: pending, current: authorized) == authorized)
        #expect(PaymentWorkflow.replayed(first: authorized, current: pending) == authorized)
    }

    @Test func aReplayOfADeclinedPaymentAnswersTheDeclineWithoutReadingAHold() async throws {
        var ledger = try Self.opened()
        let order = ledger.orders[Self.orderID]!
        try ledger.commit(
            try PaymentFlow.recordAuthorization(
                Responses.declined(order, code: .stolenCard),
                order: order,
                products: ledger.products(for: order),
                context: ctx
            )
            .get()
        )
        let steps = Steps(ledger, acquirer: [])
        let answer = try await pay(steps, .replayed(Self.orderID))
        #expect(steps.taken == ["load", "load", "first"])
        #expect(answer.result == .declined)
        #expect(answer.declineCode == "43")
    }

    @Test func aReplayOfAPaymentStillPendingCarriesOnWithItsOrder() async throws {
        let ledger = try Self.opened()
        let steps = Steps(ledger, acquirer: [.answered(Responses.approved(ledger.orders[Self.orderID]!))])
        let answer = try await pay(steps, .replayed(Self.orderID))
        #expect(steps.taken == ["load", "authorize", "record"], "the earlier request died before its answer: this one completes it")
        #expect(answer.result == .succeeded)
    }

    @Test(arguments: [
        (PaymentOpening.idempotencyConflict, PaymentFailure.idempotencyConflict), (.contended, .busy), (.applePayTransactionUsed, .applePayReplayed),
    ])
    func anAppendThatOpenedNothingFailsWithoutAnyStep(opening: PaymentOpening, failure: PaymentFailure) async throws {
        let steps = Steps(try Self.opened(), acquirer: [])
        await #expect(throws: failure) { try await pay(steps, opening) }
        #expect(steps.taken.isEmpty)
    }

    @Test func anOrderThatCannotBeReadIsADefectNotAnAnswer() async throws {
        let steps = Steps(InMemoryLedger.seeded(), acquirer: [])
        await #expect(throws: PaymentFailure.orderMissing) { try await pay(steps) }
        #expect(steps.taken == ["load"])
    }

    @Test func anOrderEndedWithoutAChargeIsAnsweredUncharged() async throws {
        var ledger = try Self.opened()
        let order = ledger.orders[Self.orderID]!
        try ledger.commit(
            try PaymentFlow.releasePendingOrder(order: order, products: ledger.products(for: order), reason: .paymentNotFound, context: ctx).get()
        )
        let released = ledger.orders[Self.orderID]!
        #expect(PaymentWorkflow.loaded(released) == .answer(Self.orderID))
        let answer = PaymentWorkflow.answer(released, hold: nil)
        #expect(answer.result == .acquirerUnreachable)
        #expect(answer.reference == Self.orderID.rawValue)
        #expect(PaymentWorkflow.answerShowsHold(released) == false)
    }
}
