import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerCoreTestSupport
import Testing

/// The dispute lifecycle (issue 17) as a pure decider: each network's deadlines, legal and illegal
/// transitions, and money that moves at most once each way.
@Suite struct DisputeDeciderTests {
    static let t0 = Date(timeIntervalSince1970: 1_781_690_400)  // 2026-06-17T10:00:00Z
    static let order = OrderID("o-1")!
    static let amount = Money(minorUnits: 5900, currency: .usd)
    static func days(_ n: Double) -> Date { t0.addingTimeInterval(n * 86_400) }

    func run(_ commands: [(DisputeCommand, Date)], reason: DisputeReason = .visaFraudCardAbsent) -> (DisputeState?, [DisputeEvent]) {
        var state: DisputeState?
        var all: [DisputeEvent] = []
        for (command, at) in commands {
            guard case .success(let events) = DisputeDecider.decide(command, state: state, disputable: Self.amount, now: at) else {
                Issue.record("\(command) refused")
                return (state, all)
            }
            all += events
            state = events.reduce(state) { DisputeState.evolve($0, $1) }
        }
        return (state, all)
    }

    func chargeback(_ reason: DisputeReason = .visaFraudCardAbsent) -> DisputeCommand {
        .chargeback(disputeID: "d-1", orderID: Self.order, pspReference: "PSP1", reason: reason, amount: Self.amount)
    }

    @Test func aVisaChargebackDebitsTheAmountAndIsDueInThirtyDaysAMastercardOneInFortyFive() throws {
        let (visa, events) = run([(chargeback(), Self.t0)])
        #expect(events.count == 1 && visa?.status == .chargedBack && visa?.debited == true)
        #expect(visa?.dueAt == Self.days(30) && visa?.netDebited == Self.amount)
        let (mc, _) = run([(chargeback(.mastercardNoAuthorization), Self.t0)])
        #expect(mc?.dueAt == Self.days(45) && mc?.reason.title == "No Cardholder Authorization")
        for reason in [DisputeReason.visaNotReceived, .mastercardCardholderDispute] { #expect(reason.isKnown) }
        let unknown = DisputeReason(network: .visa, code: "99.9")
        #expect(
            DisputeDecider.decide(
                .chargeback(disputeID: "d", orderID: Self.order, pspReference: "P", reason: unknown, amount: Self.amount),
                state: nil,
                now: Self.t0
            ) == .failure(.unknownReason(unknown))
        )
    }

    @Test func anInquiryMovesNoMoneyAndMayBecomeAChargeback() throws {
        let inquiry = DisputeCommand.raiseInquiry(
            disputeID: "d-1",
            orderID: Self.order,
            pspReference: "PSP1",
            reason: .visaNotReceived,
            amount: Self.amount
        )
        let (asked, _) = run([(inquiry, Self.t0)])
        #expect(asked?.status == .inquiry && asked?.debited == false && asked?.dueAt == Self.days(30))
        #expect(
            DisputeDecider.decide(.accept(by: "op"), state: asked, now: Self.t0) == .failure(.illegalTransition(command: "accept", status: .inquiry))
        )
        let (charged, _) = run([(inquiry, Self.t0), (chargeback(.visaNotReceived), Self.days(3))])
        #expect(charged?.status == .chargedBack && charged?.netDebited == Self.amount && charged?.dueAt == Self.days(33))
    }

    @Test func aDefenseAfterTheDeadlineIsRefusedOneBeforeIsRecordedWithItsReferencesOnly() throws {
        let (charged, _) = run([(chargeback(), Self.t0)])
        let late = DisputeDecider.decide(.defend(evidenceRefs: ["ev-1"], by: "op"), state: charged, now: Self.days(30.001))
        #expect(late == .failure(.deadlinePassed(command: "defend", dueAt: Self.days(30))))
        #expect(DisputeDecider.decide(.defend(evidenceRefs: [], by: "op"), state: charged, now: Self.days(1)) == .failure(.missingEvidence))
        #expect(
            DisputeDecider.decide(.defend(evidenceRefs: ["a document"], by: "op"), state: charged, now: Self.days(1))
                == .failure(.invalidEvidenceReference("a document"))
        )
        let onTime = DisputeDecider.decide(
            .defend(evidenceRefs: ["ev-1", "s3://evidence/d-1/receipt.pdf"], by: "op"),
            state: charged,
            now: Self.days(30)
        )
        guard case .success(let defended) = onTime, defended.count == 1, case .defenseSubmitted(let e) = defended[0] else {
            Issue.record("\(onTime)")
            return
        }
        #expect(e.evidenceRefs == ["ev-1", "s3://evidence/d-1/receipt.pdf"])
        // Accepting after the deadline is refused too; before it, the chargeback stands (no money moves again).
        #expect(
            DisputeDecider.decide(.accept(by: "op"), state: charged, now: Self.days(31))
                == .failure(.deadlinePassed(command: "accept", dueAt: Self.days(30)))
        )
        let (accepted, events) = run([(chargeback(), Self.t0), (.accept(by: "op"), Self.days(2))])
        #expect(accepted?.status == .accepted && accepted?.netDebited == Self.amount && events.count == 2)
    }

    @Test func theFullPathDebitsCreditsAndDebitsAgainExactlyOnceEach() throws {
        let (lost, events) = run([
            (chargeback(), Self.t0), (.defend(evidenceRefs: ["ev-1"], by: "op"), Self.days(5)), (.secondPresentment, Self.days(6)),
            (.reverse, Self.days(7)), (.preArbitration, Self.days(20)), (.secondChargeback, Self.days(25)),
            (.decide(.lost, by: "visa"), Self.days(60)),
        ])
        #expect(lost?.status == .lost && lost?.netDebited == Self.amount)
        #expect(lost?.chargedBack.minorUnits == 2 * Self.amount.minorUnits && lost?.reversed == Self.amount)
        #expect(events.count == 7)
        let (won, _) = run([
            (chargeback(), Self.t0), (.defend(evidenceRefs: ["ev-1"], by: "op"), Self.days(5)), (.secondPresentment, Self.days(6)),
            (.decide(.won, by: "visa"), Self.days(40)),
        ])
        #expect(won?.status == .won && won?.netDebited.isZero == true && won?.debited == false)
    }

    @Test func illegalTransitionsAreRefused() throws {
        let (charged, _) = run([(chargeback(), Self.t0)])
        #expect(
            DisputeDecider.decide(.reverse, state: charged, now: Self.t0) == .failure(.illegalTransition(command: "reverse", status: .chargedBack))
        )
        #expect(
            DisputeDecider.decide(.secondChargeback, state: charged, now: Self.t0)
                == .failure(.illegalTransition(command: "second_chargeback", status: .chargedBack))
        )
        #expect(
            DisputeDecider.decide(chargeback(), state: charged, now: Self.t0)
                == .failure(.illegalTransition(command: "chargeback", status: .chargedBack))
        )
        #expect(DisputeDecider.decide(.defend(evidenceRefs: ["e"], by: "op"), state: nil, now: Self.t0) == .failure(.unknownDispute("")))
        let (won, _) = run([
            (chargeback(), Self.t0), (.defend(evidenceRefs: ["e"], by: "op"), Self.days(1)), (.decide(.won, by: "visa"), Self.days(2)),
        ])
        for command in [DisputeCommand.accept(by: "op"), .defend(evidenceRefs: ["e"], by: "op"), .reverse, .decide(.lost, by: "visa")] {
            #expect(
                DisputeDecider.decide(command, state: won, now: Self.days(3)) == .failure(.illegalTransition(command: command.name, status: .won))
            )
        }
        let tooMuch = Money(minorUnits: 5901, currency: .usd)
        #expect(
            DisputeDecider.decide(
                .chargeback(disputeID: "d", orderID: Self.order, pspReference: "P", reason: .visaFraudCardAbsent, amount: tooMuch),
                state: nil,
                disputable: Self.amount,
                now: Self.t0
            ) == .failure(.exceedsDisputable(requested: tooMuch, disputable: Self.amount))
        )
    }

    /// The one order status rule reads the dispute: `disputed` while open without a debit,
    /// `charged_back` while debited and once accepted or lost, the money's status once won.
    @Test func theOrderStatusRuleReadsTheDispute() throws {
        let zero = Money(minorUnits: 0, currency: .usd)
        let captured = HoldBalance(
            authorized: Self.amount,
            incremented: zero,
            captured: Self.amount,
            reversed: zero,
            expired: zero,
            open: zero,
            refunded: zero
        )
        #expect(HoldLifecycle.status(balance: captured, shipped: true) == .shipped)
        let inquiry = DisputeCommand.raiseInquiry(
            disputeID: "d-1",
            orderID: Self.order,
            pspReference: "PSP1",
            reason: .visaNotReceived,
            amount: Self.amount
        )
        let cases: [([(DisputeCommand, Date)], OrderStatus)] = [
            ([(inquiry, Self.t0)], .disputed),
            ([(chargeback(), Self.t0)], .chargedBack),
            ([(chargeback(), Self.t0), (.defend(evidenceRefs: ["e"], by: "op"), Self.days(1)), (.reverse, Self.days(2))], .disputed),
            ([(chargeback(), Self.t0), (.defend(evidenceRefs: ["e"], by: "op"), Self.days(1)), (.decide(.won, by: "visa"), Self.days(2))], .shipped),
            ([(chargeback(), Self.t0), (.accept(by: "op"), Self.days(1))], .chargedBack),
        ]
        for (commands, expected) in cases {
            let (state, _) = run(commands)
            #expect(HoldLifecycle.status(balance: captured, shipped: true, dispute: state) == expected, "\(commands.map(\.0.name))")
        }
        // A dispute leaves the stock as it was: an unshipped disputed order still holds its reservation.
        #expect(OrderStatus.allCases.contains(.disputed) && OrderStatus.chargedBack.rawValue == "charged_back")
    }

    /// Random lifecycles (seeded): whatever the path, money moves at most once each way in turn (no
    /// debit while debited, no credit while not), the net is 0 or the amount, a refused command
    /// changes nothing, and no answer is accepted after its deadline.
    @Test(.seeded()) func randomLifecyclesNeverMoveMoneyTwice() throws {
        var random = PropertySeed.generator()
        for _ in 0..<500 {
            var state: DisputeState?
            var now = Self.t0
            var debited = false
            let reason = [DisputeReason.visaFraudCardAbsent, .visaNotReceived, .mastercardNoAuthorization, .mastercardCardholderDispute][
                Int(random.next(below: 4))
            ]
            let first: DisputeCommand =
                random.next(below: 2) == 0
                ? chargeback(reason)
                : .raiseInquiry(disputeID: "d-1", orderID: Self.order, pspReference: "PSP1", reason: reason, amount: Self.amount)
            for step in 0..<12 {
                let commands: [DisputeCommand] = [
                    chargeback(reason), .defend(evidenceRefs: ["ev-\(step)"], by: "op"), .secondPresentment, .reverse, .preArbitration,
                    .secondChargeback, .accept(by: "op"), .decide(.won, by: "net"), .decide(.lost, by: "net"),
                ]
                let command = step == 0 ? first : commands[Int(random.next(below: UInt64(commands.count)))]
                now = now.addingTimeInterval(Double(random.int(in: 0...(40 * 86_400))))
                switch DisputeDecider.decide(command, state: state, disputable: Self.amount, now: now) {
                case .failure(let rejection):
                    if case .deadlinePassed(_, let due) = rejection { #expect(now > due) }
                case .success(let events):
                    if let due = state?.dueAt, now > due, case .defend = command { Issue.record("defended after \(due)") }
                    if let due = state?.dueAt, now > due, case .accept = command { Issue.record("accepted after \(due)") }
                    for event in events {
                        switch event {
                        case .chargeback, .secondChargeback:
                            #expect(!debited, "debited twice")
                            debited = true
                        case .reversed:
                            #expect(debited, "credited without a debit")
                            debited = false
                        case .closed(let e):
                            #expect(e.credited.isZero || debited)
                            #expect(e.debited.isZero || !debited)
                            if !e.credited.isZero { debited = false }
                            if !e.debited.isZero { debited = true }
                        default: break
                        }
                        state = DisputeState.evolve(state, event)
                    }
                }
                if let s = state {
                    #expect(s.debited == debited)
                    #expect(s.netDebited.isZero || s.netDebited == Self.amount)
                    #expect(s.netDebited.isZero == !debited)
                }
            }
        }
    }
}
