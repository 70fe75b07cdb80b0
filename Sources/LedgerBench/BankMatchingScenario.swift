import Foundation
import LedgerCore
import LedgerEngine

/// The bank matching's figure (issue 53), one scenario shared by `ledgerd bench bank` and `BankMatchingFigureTests`: the
/// acquirer's payouts announced as the settlement writes them (each batch's `SettlementBatchOpened` then its
/// `SettlementPayoutScheduled`), then one MT940 statement of `count` credits, value date Friday 4 December 2026, that pays
/// them. Credit `i` (from 0):
///
/// - `i % 1000 == 999`: an **unexpected credit**, 0.07 EUR naming nothing; no payout is announced for it;
/// - `i % 100 == 1`: names nothing (`/REMI/transfer i`) and pays its payout's exact amount: matched **by amount**;
/// - `i % 100 == 50`: names its payout (end-to-end id) and is 0.15 EUR short: matched by reference, `amount_differs`;
/// - the others name their payout (end-to-end id) and pay it in full: matched **by reference**.
///
/// Payout `i` is batch `EUR-<tag>-<i>`, reference `PO-<tag>-<i>`, 100.00 EUR + `i` cents: amounts are distinct, so the
/// amount rule has one right answer, and no payout or sum of payouts is 0.07. The tag names the run, so a run on a
/// cluster that holds an earlier one announces batches of its own. ``expected`` is what a correct matching records.
public struct BankMatchingScenario: Sendable {
    public let count: Int
    public let tag: String
    public static let day = BusinessDate("2026-12-04")!
    public static let account = "NL91ABNA0417164300"

    public init(count: Int, tag: String) {
        precondition(count > 0, "a scenario of no credits")
        self.count = count
        self.tag = tag
    }

    enum Kind { case reference, amount, short, unexpected }

    static func kind(_ i: Int) -> Kind {
        if i % 1000 == 999 { return .unexpected }
        if i % 100 == 1 { return .amount }
        if i % 100 == 50 { return .short }
        return .reference
    }

    /// Payout `i`'s amount in cents.
    static func payoutCents(_ i: Int) -> Int64 { 10_000 + Int64(i) }

    /// The outcome counts a correct pass records: matches by rule, breaks by class.
    public struct Outcome: Sendable, Hashable, CustomStringConvertible {
        public var matchedByRule: [String: Int] = [:]
        public var breaks: [String: Int] = [:]
        public var matched: Int { matchedByRule.values.reduce(0, +) }

        public init(matchedByRule: [String: Int], breaks: [String: Int]) {
            self.matchedByRule = matchedByRule
            self.breaks = breaks
        }

        public var description: String {
            let rules = matchedByRule.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            let classes = breaks.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "matched \(matched) (\(rules)); breaks: \(classes.isEmpty ? "none" : classes)"
        }
    }

    /// What the scenario plants.
    public var expected: Outcome {
        var outcome = Outcome(matchedByRule: [:], breaks: [:])
        for i in 0..<count {
            switch Self.kind(i) {
            case .unexpected: outcome.breaks["unexpected_credit", default: 0] += 1
            case .amount: outcome.matchedByRule["amount", default: 0] += 1
            case .short:
                outcome.matchedByRule["reference", default: 0] += 1
                outcome.breaks["amount_differs", default: 0] += 1
            case .reference: outcome.matchedByRule["reference", default: 0] += 1
            }
        }
        return outcome
    }

    /// The payouts announced (one per credit that is not unexpected).
    public var payouts: Int { (0..<count).filter { Self.kind($0) != .unexpected }.count }

    /// Appends the payouts as the settlement does (a batch's stream: opened, then its payout), 1,000 batches per append;
    /// event ids from the writer's IDSource.
    public func announce(on writer: LedgerWriter, at now: Date) async throws {
        let announced = (0..<count).filter { Self.kind($0) != .unexpected }
        for start in stride(from: 0, to: announced.count, by: 1_000) {
            let streams = try announced[start..<min(announced.count, start + 1_000)].map { i in
                let batch = "EUR-\(tag)-\(i)"
                let opened = SettlementBatchOpened(
                    batchID: batch,
                    merchantAccount: "OrderLedgerStore",
                    currency: .eur,
                    businessDate: Self.day.adding(days: -1),
                    cutOffAt: now,
                    pinnedPosition: 0,
                    earlyClose: nil
                )
                let payout = SettlementPayoutScheduled(
                    batchID: batch,
                    payoutReference: "PO-\(tag)-\(i)",
                    amount: Money(minorUnits: Self.payoutCents(i), currency: .eur),
                    valueDate: Self.day,
                    expectedValueDate: Self.day
                )
                return StreamAppend(
                    streamID: SettlementBatch.streamID(batchID: batch),
                    expectedVersion: .noStream,
                    events: [
                        try NewEvent(eventID: writer.ids.next(), payload: opened, effectiveAt: now),
                        try NewEvent(eventID: writer.ids.next(), payload: payout, effectiveAt: now),
                    ]
                )
            }
            _ = try await writer.append(AppendRequest(streams: streams))
        }
    }

    /// The MT940 statement (`:20:BENCH-<tag>`): opening 0, the credits, the closing balance their sum.
    public func statement() -> String {
        var text = ":20:BENCH-\(tag)\n:25:\(Self.account)\n:28C:1/1\n:60F:C261204EUR0,\n"
        text.reserveCapacity(count * 100)
        var total: Int64 = 0
        for i in 0..<count {
            let cents: Int64
            let details: String
            switch Self.kind(i) {
            case .unexpected: (cents, details) = (7, "/REMI/supplier refund \(i)")
            case .amount: (cents, details) = (Self.payoutCents(i), "/REMI/transfer \(i)")
            case .short: (cents, details) = (Self.payoutCents(i) - 15, "/EREF/PO-\(tag)-\(i)/REMI/payout \(i) less fee")
            case .reference: (cents, details) = (Self.payoutCents(i), "/EREF/PO-\(tag)-\(i)/REMI/payout \(i)")
            }
            total += cents
            text += ":61:2612041204C\(Self.mt940Amount(cents))NTRFREF-\(i)//B-\(i)\n:86:\(details)\n"
        }
        text += ":62F:C261204EUR\(Self.mt940Amount(total))\n"
        return text
    }

    /// Cents as MT940 writes an amount: a decimal comma, two digits after it.
    static func mt940Amount(_ cents: Int64) -> String {
        let fraction = cents % 100
        return "\(cents / 100),\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
