import Foundation
import LedgerCore
import Testing

@testable import LedgerAcquirer

/// Disputes from the acquirer model (issue 17): the test card that always draws a Visa 10.4
/// chargeback on the business day after its capture settles, the seeded dispute rate, the feed and
/// the Chargeback line of the batch that debits it.
@Suite struct DisputeModelTests {
    /// Authorizes and captures `reference` (all of `amount`) on `token` at `now`; the capture's settlement item.
    func captured(_ state: inout AcquirerModelState, _ reference: String, token: String, amount: Int64 = 5_900, now: Date) throws -> SettlementItem {
        _ = try state.approve(reference, usd(amount), token: token, now: now)
        let capture = CaptureRequest(authorizationReference: reference, modificationReference: reference + "-c", amount: usd(amount), isFinal: true)
        _ = try state.capture(capture, now: now)
        return SettlementItem(kind: .capture, authorizationReference: reference, modificationReference: reference + "-c", amount: usd(amount))
    }

    func settle(_ state: inout AcquirerModelState, _ reference: String, _ items: [SettlementItem], day: String, now: Date) throws -> SettlementReport
    {
        try state.submitBatch(SettlementBatchRequest(batchReference: reference, currency: .usd, items: items, businessDate: date(day)), now: now)
    }

    @Test func theChargebackCardDrawsAVisa104RaisedOnTheNextBusinessDayAndDebitedInThatDaysBatch() throws {
        var state = AcquirerModelState(seed: 5)
        // Friday 2025-01-10: the next business day is Monday 2025-01-13.
        let friday = at("2025-01-10", 10)
        let fraud = try captured(&state, "ord-fraud", token: "tok_visa_chargeback_fraud", now: friday)
        let good = try captured(&state, "ord-good", token: "tok_visa", now: friday)
        let first = try settle(&state, "B-1", [fraud, good], day: "2025-01-10", now: at("2025-01-10", 22, 30))
        #expect(!first.lines.contains { $0.type == .chargeback })

        // Nothing is raised over the weekend; at Monday's start it is.
        #expect(try state.disputeNotifications(after: 0, limit: 10, now: at("2025-01-12", 23, 59, 59)).isEmpty)
        let feed = try state.disputeNotifications(after: 0, limit: 10, now: at("2025-01-13"))
        #expect(feed.count == 1)
        let notification = try #require(feed.first)
        #expect(notification.sequence == 1 && notification.stage == .chargeback && notification.stageNumber == 1)
        #expect(notification.reason == .visaFraudCardAbsent)
        #expect(notification.merchantReference == "ord-fraud" && notification.amount == usd(5_900))
        #expect(notification.pspReference == state.pspReference(of: "ord-fraud"))
        #expect(notification.raisedAt == at("2025-01-13"))
        #expect(try state.disputeNotifications(after: 1, limit: 10, now: at("2025-01-14")).isEmpty)

        // Monday's batch debits it: a Chargeback line, and the payout is the lines' net.
        let monday = try captured(&state, "ord-monday", token: "tok_visa", now: at("2025-01-13", 9))
        let second = try settle(&state, "B-2", [monday], day: "2025-01-13", now: at("2025-01-13", 22, 30))
        let chargebacks = second.lines.filter { $0.type == .chargeback }
        #expect(chargebacks.count == 1)
        let line = try #require(chargebacks.first)
        #expect(line.pspReference == notification.pspReference && line.modificationReference == notification.disputeID)
        #expect(line.merchantReference == "ord-fraud" && line.grossDebit == usd(5_900) && line.netDebit == usd(5_900))
        #expect(line.signedNetMinorUnits == -5_900 && line.batchNumber == second.batchNumber)
        #expect(second.payout.amount.minorUnits == second.lines.dropLast().reduce(0) { $0 + $1.signedNetMinorUnits })
        #expect(second.payout.amount.minorUnits < second.lines.first { $0.type == .settled }!.signedNetMinorUnits)
        // Debited once: the next batch has no chargeback line.
        let tuesday = try captured(&state, "ord-tuesday", token: "tok_visa", now: at("2025-01-14", 9))
        #expect(try !settle(&state, "B-3", [tuesday], day: "2025-01-14", now: at("2025-01-14", 22, 30)).lines.contains { $0.type == .chargeback })
        #expect(state.invariantViolations().isEmpty)
    }

    /// Once a chargeback is raised its amount is back with the cardholder: a refund of it is refused
    /// (what is left of the payment stays refundable); before the raise the payment refunds as usual.
    @Test func aRaisedChargebackIsNotRefundableAgain() throws {
        var state = AcquirerModelState(seed: 5)
        let friday = at("2025-01-10", 10)
        let fraud = try captured(&state, "ord-fraud", token: "tok_visa_chargeback_fraud", now: friday)
        _ = try state.refund(RefundRequest(authorizationReference: "ord-fraud", modificationReference: "r-1", amount: usd(900)), now: friday)
        _ = try settle(&state, "B-1", [fraud], day: "2025-01-10", now: at("2025-01-10", 22, 30))
        // Drawn at settlement for what was captured less refunded; refundable until it is raised.
        let saturday = at("2025-01-11", 12)
        #expect(state.chargedBack("ord-fraud", at: saturday) == 0)
        // Raised on Monday: 50.00 charged back, nothing of 59.00 − 9.00 is refundable any more.
        let monday = at("2025-01-13", 9)
        #expect(state.chargedBack("ord-fraud", at: monday) == 5_000)
        #expect(throws: AcquirerError.self) {
            try state.refund(RefundRequest(authorizationReference: "ord-fraud", modificationReference: "r-2", amount: usd(1)), now: monday)
        }
        #expect(state.invariantViolations().isEmpty)
    }

    /// The rate knob: off draws nothing (and no random number), per mille 1000 disputes every Visa and
    /// Mastercard capture with one of its network's reason codes, never Amex or Discover.
    @Test func theDisputeRateIsSeededAndPerNetwork() throws {
        func run(rate: Int, seed: UInt64) throws -> (feed: [AcquirerDisputeNotification], snapshot: Data) {
            var configuration = AcquirerModelConfiguration()
            configuration.disputes = .perMille(rate)
            var state = AcquirerModelState(seed: seed, configuration: configuration)
            let tokens = ["tok_visa", "tok_mastercard", "tok_amex", "tok_discover", "tok_visa_debit", "tok_mastercard_prepaid"]
            var items: [SettlementItem] = []
            for index in 0..<60 {
                items.append(try captured(&state, "ord-\(index)", token: tokens[index % tokens.count], amount: 1_000 + Int64(index), now: monday))
            }
            _ = try settle(&state, "B-1", items, day: "2025-01-06", now: at("2025-01-06", 22, 30))
            return (try state.disputeNotifications(after: 0, limit: 1_000, now: at("2025-01-07")), try state.snapshot())
        }
        #expect(try run(rate: 0, seed: 3).feed.isEmpty)
        let all = try run(rate: 1_000, seed: 3).feed
        #expect(all.count == 40)  // 4 of every 6 tokens are Visa or Mastercard
        for notification in all {
            #expect(notification.reason.isKnown)
            let index = Int(notification.merchantReference.dropFirst(4))!
            #expect([0, 1, 4, 5].contains(index % 6), "\(notification.merchantReference)")
            #expect(notification.reason.network == (index % 6 == 0 || index % 6 == 4 ? .visa : .mastercard))
        }
        #expect(all.map(\.sequence) == Array(1...40))

        // Same seed and requests: the same disputes, byte for byte; another seed: others.
        let a = try run(rate: 300, seed: 9)
        let b = try run(rate: 300, seed: 9)
        #expect(a.snapshot == b.snapshot)
        let (aBytes, bBytes) = (try LedgerJSON.encode(a.feed), try LedgerJSON.encode(b.feed))
        #expect(aBytes == bBytes)
        #expect(!a.feed.isEmpty && a.feed.count < 40)
        let other = try run(rate: 300, seed: 10)
        #expect(other.feed.map(\.disputeID) != a.feed.map(\.disputeID))
        // A snapshot restores the feed.
        let restored = try AcquirerModelState(snapshot: a.snapshot)
        #expect(try restored.disputeNotifications(after: 0, limit: 1_000, now: at("2025-01-07")) == a.feed)
    }

    /// A model that never decided a dispute keeps its snapshot bytes (no empty feed is written).
    @Test func aModelWithoutDisputesKeepsItsSnapshotShape() throws {
        var state = AcquirerModelState(seed: 1)
        let item = try captured(&state, "ord-1", token: "tok_visa", now: monday)
        _ = try settle(&state, "B-1", [item], day: "2025-01-06", now: at("2025-01-06", 22, 30))
        #expect(!String(decoding: try state.snapshot(), as: UTF8.self).contains("disputeFeed"))
        #expect(throws: AcquirerError.self) { try state.disputeNotifications(after: -1, limit: 1, now: monday) }
    }
}
