import LedgerBank
import LedgerCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The matching rules on values (``PayoutMatcher``): by reference, by amount in the window, many-to-one and
/// one-to-many, and each class of break with its resolution by a later credit.
@Suite struct PayoutMatcherTests {
    static let eur = Currency.eur
    static let day = BusinessDate("2026-12-07")!

    static func payout(_ batch: String, _ reference: String, _ minor: Int64, currency: Currency = eur, on date: BusinessDate = day) -> ExpectedPayout
    {
        ExpectedPayout(
            payout: BankPayoutRef(
                batchID: batch,
                payoutReference: reference,
                merchantAccount: "OrderLedgerStore",
                amount: Money(minorUnits: minor, currency: currency)
            ),
            expectedDate: date,
            earliest: date,
            latest: date.adding(days: 2)
        )
    }

    static func credit(
        _ entry: Int,
        _ minor: Int64,
        reference: String? = nil,
        text: String = "",
        statement: String = "S1",
        on date: BusinessDate = day,
        currency: Currency = eur
    ) -> BankDepositRef {
        BankDepositRef(
            stream: "bank_statement-\(statement)",
            account: "DE89370400440532013000",
            statementID: statement,
            entry: entry,
            amount: Money(minorUnits: minor, currency: currency),
            valueDate: date,
            bankReference: "BNK-\(statement)-\(entry)",
            ownerReference: nil,
            endToEndIDs: reference.map { [$0] } ?? [],
            remittanceInformation: text,
            position: Int64(entry)
        )
    }

    /// Folds `events` over `state`.
    static func applied(_ state: BankMatchState, _ events: [BankMatchEvent]) -> BankMatchState {
        var state = state
        for event in events { state.apply(event) }
        return state
    }

    static func found(_ events: [BankMatchEvent]) -> [BankBreakFound] {
        events.compactMap { if case .breakFound(let f) = $0 { f } else { nil } }
    }

    static func matched(_ events: [BankMatchEvent]) -> [BankPayoutMatched] {
        events.compactMap { if case .matched(let m) = $0 { m } else { nil } }
    }

    @Test func aCreditMatchesByReferenceOrByAmountInTheWindowAndTheRestAreBreaks() {
        let payouts = [Self.payout("B-1", "PO-1", 100_000), Self.payout("B-2", "PO-2", 50_000), Self.payout("B-3", "PO-3", 7_500)]
        let credits = [
            Self.credit(1, 100_000, reference: "PO-1"),  // in full, by its end-to-end id
            Self.credit(2, 49_900, text: "Settlement PO-2 December"),  // short by 1.00, the reference in the text
            Self.credit(3, 7_500),  // no reference: by amount, in the window
            Self.credit(4, 1_234),  // nothing explains it
        ]
        let events = PayoutMatcher.match(state: BankMatchState(), payouts: payouts, credits: credits, today: Self.day, file: "f1")
        let matches = Self.matched(events)
        #expect(matches.map(\.rule) == ["reference", "reference", "amount"])
        #expect(matches.map { $0.payouts.map(\.batchID) } == [["B-1"], ["B-2"], ["B-3"]])
        #expect(matches.map(\.outstanding.minorUnits) == [0, 100, 0])
        let breaks = Self.found(events)
        #expect(breaks.map(\.breakClass) == [.amountDiffers, .unexpectedCredit])
        #expect(breaks.first?.difference == Money(minorUnits: -100, currency: Self.eur))
        #expect(breaks.first?.detail.contains("short by 1.00 EUR") == true, "\(breaks.first?.detail ?? "")")
        #expect(breaks.last?.deposits.map(\.entry) == [4])

        // The same credits again (a statement re-sent): nothing new.
        let state = Self.applied(BankMatchState(), events)
        #expect(PayoutMatcher.match(state: state, payouts: payouts, credits: credits, today: Self.day, file: "f1").isEmpty)

        // The remainder the next day, naming the payout: matched, and the break resolved naming the file.
        let next = PayoutMatcher.match(
            state: state,
            payouts: payouts,
            credits: [Self.credit(1, 100, reference: "PO-2", statement: "S2", on: Self.day.adding(days: 1))],
            today: Self.day.adding(days: 1),
            file: "f2"
        )
        #expect(Self.matched(next).map(\.outstanding.minorUnits) == [0])
        let resolved = next.compactMap { if case .breakResolved(let r) = $0 { r } else { nil } }
        #expect(resolved.map(\.breakID) == [breaks[0].breakID] && resolved.first?.file == "f2")
        #expect(resolved.first?.reason.contains("the statement file f2") == true)
        #expect(Self.applied(state, next).openBreaks.map(\.breakClass) == [.unexpectedCredit])
    }

    @Test func manyToOneAndOneToMany() {
        // Two payouts of one day in one deposit (no reference: their sum), and two references named in one deposit.
        let payouts = [
            Self.payout("B-1", "PO-1", 30_000), Self.payout("B-2", "PO-2", 20_000),
            Self.payout("B-3", "PO-3", 1_000, on: Self.day.adding(days: 1)), Self.payout("B-4", "PO-4", 2_000, on: Self.day.adding(days: 1)),
            Self.payout("B-5", "PO-5", 9_000),
        ]
        let credits = [
            Self.credit(1, 50_000), Self.credit(2, 3_000, text: "PO-3 PO-4"),
            // One payout paid in two parts (one-to-many).
            Self.credit(3, 4_000, reference: "PO-5"), Self.credit(4, 5_000, reference: "PO-5"),
        ]
        let events = PayoutMatcher.match(state: BankMatchState(), payouts: payouts, credits: credits, today: Self.day, file: "f")
        let matches = Self.matched(events)
        #expect(matches.map(\.rule) == ["reference", "reference", "reference", "amount_group"])
        #expect(matches.map { $0.payouts.map(\.batchID) } == [["B-3", "B-4"], ["B-5"], ["B-5"], ["B-1", "B-2"]])
        #expect(matches.map(\.outstanding.minorUnits) == [0, 5_000, 0, 0])
        // The part payment's amount_differs is resolved by the second part.
        let state = Self.applied(BankMatchState(), events)
        #expect(state.openBreaks.isEmpty, "\(state.openBreaks.map(\.detail))")
        #expect(state.received == ["B-1": 30_000, "B-2": 20_000, "B-3": 1_000, "B-4": 2_000, "B-5": 9_000])
    }

    @Test func aPayoutPastItsWindowIsNotReceivedAndADepositSeenTwiceIsNotBookedAgain() {
        let payouts = [Self.payout("B-1", "PO-1", 10_000), Self.payout("B-2", "PO-2", 20_000)]
        // Within the window: nothing yet.
        #expect(PayoutMatcher.match(state: BankMatchState(), payouts: payouts, credits: [], today: Self.day.adding(days: 2), file: "").isEmpty)
        let late = PayoutMatcher.match(state: BankMatchState(), payouts: payouts, credits: [], today: Self.day.adding(days: 3), file: "")
        #expect(Self.found(late).map(\.breakClass) == [.payoutNotReceived, .payoutNotReceived])
        var state = Self.applied(BankMatchState(), late)
        // Raised once.
        #expect(PayoutMatcher.match(state: state, payouts: payouts, credits: [], today: Self.day.adding(days: 9), file: "").isEmpty)

        // PO-1 arrives late, by reference: matched, its break resolved; the same deposit on another statement (a
        // notification, then the day's statement) is a deposit seen twice; PO-1 paid again in full is too.
        let first = Self.credit(1, 10_000, reference: "PO-1", on: Self.day.adding(days: 5))
        var again = first
        again.stream = "bank_statement-S9"
        again.statementID = "S9"
        let paidTwice = Self.credit(2, 10_000, reference: "PO-1", statement: "S3", on: Self.day.adding(days: 6))
        let events = PayoutMatcher.match(
            state: state,
            payouts: payouts,
            credits: [first, again, paidTwice],
            today: Self.day.adding(days: 9),
            file: "f"
        )
        state = Self.applied(state, events)
        #expect(Self.matched(events).map(\.amount.minorUnits) == [10_000])
        #expect(Self.found(events).map(\.breakClass) == [.depositSeenTwice, .depositSeenTwice])
        #expect(state.openBreaks.map(\.breakClass) == [.payoutNotReceived, .depositSeenTwice, .depositSeenTwice])
        #expect(state.openBreaks.first?.payouts.map(\.batchID) == ["B-2"])
    }

    /// The sum rule looks at a day's payouts that have received nothing, however many unexplained credits passed over
    /// that day before (a pass drops the paid ones from the day as it goes): a credit naming nothing comes first, then
    /// the netted deposit of the two payouts still open — not of the paid one, nor of any payout of another day.
    @Test func aNettedDepositAfterUnexplainedCreditsMatchesTheDaysOpenPayouts() {
        let payouts = [
            Self.payout("B-1", "PO-1", 10_000), Self.payout("B-2", "PO-2", 20_000), Self.payout("B-3", "PO-3", 30_000),
            Self.payout("B-4", "PO-4", 20_000, on: Self.day.adding(days: 1)),
        ]
        let credits = [
            Self.credit(1, 10_000, reference: "PO-1"),
            Self.credit(2, 7),  // nothing explains it: it looks at every day's open payouts
            Self.credit(3, 9),  // again, after the day's paid payout was dropped
            Self.credit(4, 50_000),  // PO-2 + PO-3, the day's open payouts
            Self.credit(5, 60_000),  // PO-1 + PO-2 + PO-3 — but PO-1, PO-2 and PO-3 are paid
        ]
        let events = PayoutMatcher.match(state: BankMatchState(), payouts: payouts, credits: credits, today: Self.day, file: "f")
        #expect(Self.matched(events).map(\.rule) == ["reference", "amount_group"])
        #expect(Self.matched(events).map { $0.payouts.map(\.batchID) } == [["B-1"], ["B-2", "B-3"]])
        #expect(Self.found(events).map(\.breakClass) == [.unexpectedCredit, .unexpectedCredit, .unexpectedCredit])
        #expect(Self.found(events).map { $0.deposits.map(\.entry) } == [[2], [3], [5]])
    }

    @Test func anUnexpectedCreditIsMatchedByAPayoutAnnouncedLater() {
        let credit = Self.credit(1, 4_200, text: "PO-7")
        let first = PayoutMatcher.match(state: BankMatchState(), payouts: [], credits: [credit], today: Self.day, file: "f1")
        #expect(Self.found(first).map(\.breakClass) == [.unexpectedCredit])
        let state = Self.applied(BankMatchState(), first)
        let later = PayoutMatcher.match(state: state, payouts: [Self.payout("B-7", "PO-7", 4_200)], credits: [], today: Self.day, file: "")
        #expect(Self.matched(later).map(\.deposits) == [[credit]])
        #expect(Self.applied(state, later).openBreaks.isEmpty)
    }

    /// The pass's own cost, in memory: 100,000 payouts and as many credits (every hundredth without a reference,
    /// matched by amount; every hundredth short), one pass. Prints the time; every payout is accounted for.
    @Test func aHundredThousandCreditsAreMatchedInOnePass() {
        let count = 100_000
        let payouts = (0..<count).map { Self.payout("B-\($0)", "PO-\($0)", 101) }
        let credits = (0..<count).map { i in
            Self.credit(i + 1, i % 100 == 0 ? 100 : 101, reference: i % 100 == 1 ? nil : "PO-\(i)", text: i % 100 == 1 ? "transfer \(i)" : "")
        }
        let started = ContinuousClock.now
        let cpuStarted = clock()
        let (events, state) = PayoutMatcher.pass(state: BankMatchState(), payouts: payouts, credits: credits, today: Self.day, file: "f")
        // Process CPU time (the other tests of this suite are tiny), less sensitive to the machine's load than the wall clock.
        let cpuMilliseconds = (clock() - cpuStarted) / (CLOCKS_PER_SEC / 1000)
        let elapsed = ContinuousClock.now - started
        print("payout matching in memory: \(count) credits against \(count) payouts in \(elapsed), CPU \(cpuMilliseconds) ms")
        // The state the pass returns is its events folded.
        #expect(Self.applied(BankMatchState(), events).received == state.received)
        #expect(Self.matched(events).count == count && state.received.count == count)
        #expect(Self.found(events).map(\.breakClass) == Array(repeating: .amountDiffers, count: count / 100))
    }
}
