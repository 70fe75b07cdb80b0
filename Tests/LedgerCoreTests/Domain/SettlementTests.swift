import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

/// The pure settlement steps: cut-off instants (daylight saving included), closing a batch over its
/// items, and the money-conservation identities.
@Suite struct SettlementTests {
    func date(_ text: String) -> BusinessDate { BusinessDate(text)! }
    func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    func item(_ kind: SettlementItemKind, _ reference: String, _ amount: String, at: Date = t0, position: Int64 = 1) -> SettlementBatchItem {
        SettlementBatchItem(
            kind: kind,
            orderID: "o-\(reference)",
            modificationReference: reference,
            pspModificationReference: "psp-\(reference)",
            amount: usd(amount),
            recordedAt: at,
            position: position
        )
    }

    func opened(cutOff: Date = t0.addingTimeInterval(3600), pinned: Int64 = 100) -> SettlementBatchOpened {
        SettlementBatchOpened(
            batchID: "Store-USD-2025-06-15",
            merchantAccount: "Store",
            currency: .usd,
            businessDate: date("2025-06-15"),
            cutOffAt: cutOff,
            pinnedPosition: pinned
        )
    }

    @Test func theCutOffIsTheLocalTimeWithThatDaysOffset() throws {
        let newYork = try #require(SettlementCutOff(timeZoneIdentifier: "America/New_York", secondsAfterMidnight: 22 * 3600))
        // Standard time (UTC−5) the day before spring forward, daylight time (UTC−4) on the change day and after.
        #expect(newYork.instant(closing: date("2026-03-07")) == utc("2026-03-08T03:00:00Z"))
        #expect(newYork.instant(closing: date("2026-03-08")) == utc("2026-03-09T02:00:00Z"))
        // Fall back: daylight time the day before, standard time on the change day.
        #expect(newYork.instant(closing: date("2026-10-31")) == utc("2026-11-01T02:00:00Z"))
        #expect(newYork.instant(closing: date("2026-11-01")) == utc("2026-11-02T03:00:00Z"))
        // A cut-off inside the change itself: 02:30 does not exist on 2026-03-08 in New York.
        let early = try #require(SettlementCutOff(timeZoneIdentifier: "America/New_York", secondsAfterMidnight: 2 * 3600 + 1800))
        #expect(early.instant(closing: date("2026-03-08")) == utc("2026-03-08T07:30:00Z"))
        // The merchant's date: 02:30 UTC on 03-09 is still 03-08 in New York.
        #expect(newYork.localDate(of: utc("2026-03-09T02:30:00Z")) == date("2026-03-08"))
        #expect(newYork.localDate(of: utc("2026-03-09T04:30:00Z")) == date("2026-03-09"))
        let utcZone = try #require(SettlementCutOff(timeZoneIdentifier: "UTC", secondsAfterMidnight: 0))
        #expect(utcZone.instant(closing: date("2026-03-08")) == utc("2026-03-08T00:00:00Z"))
    }

    @Test func badCutOffsAreRefused() {
        #expect(SettlementCutOff(timeZoneIdentifier: "Mars/Olympus", secondsAfterMidnight: 0) == nil)
        #expect(SettlementCutOff(timeZoneIdentifier: "UTC", secondsAfterMidnight: 86_400) == nil)
        #expect(SettlementCutOff.parseTime("22:00") == 79_200)
        #expect(SettlementCutOff.parseTime("24:00") == nil && SettlementCutOff.parseTime("7:00") == nil && SettlementCutOff.parseTime("") == nil)
    }

    @Test func closingSumsCapturesMinusRefunds() throws {
        let items = [item(.capture, "a", "59.00", position: 1), item(.capture, "b", "5.00", position: 2), item(.refund, "c", "20.50", position: 3)]
        let closed = try SettlementBatch.close(opened(), items: items, itemsSHA256: "digest")
        #expect(closed.captureCount == 2 && closed.refundCount == 1 && closed.itemsSHA256 == "digest")
        #expect(closed.grossCredit == usd("64.00") && closed.grossDebit == usd("20.50") && closed.gross == usd("43.50"))
        #expect(SettlementConservation.grossViolation(closed, items: items) == nil)
        var tampered = closed
        tampered.gross = usd("43.51")
        #expect(SettlementConservation.grossViolation(tampered, items: items) != nil)
        #expect(SettlementConservation.grossViolation(closed, items: Array(items.dropLast())) != nil)
        var euro = item(.capture, "e", "1.00")
        euro.amount = eur("1.00")
        #expect(throws: SettlementRejection.self) { try SettlementBatch.close(opened(), items: [euro], itemsSHA256: "") }
        // The tally takes items in ledger order only (which items belong in the batch is the
        // database's rule, tested against the database in SettlementMembershipSQLTests).
        #expect(throws: SettlementRejection.self) { try SettlementBatch.close(opened(), items: items.reversed(), itemsSHA256: "") }
        let empty = try SettlementBatch.close(opened(), items: [], itemsSHA256: "e3b0")
        #expect(empty.gross == usd("0.00") && empty.captureCount == 0)
    }

    @Test func canonicalLinesNameEveryFieldOfTheItem() {
        let a = item(.refund, "ref-1", "20.50", position: 42)
        #expect(a.canonicalLine.hasPrefix("42\trefund\t") && a.canonicalLine.hasSuffix("Z\n"))
        #expect(a.canonicalLine.contains("\tref-1\t") && a.canonicalLine.contains("\t20.50\tUSD\t"))
        var b = a
        b.pspModificationReference += "x"
        #expect(a.canonicalLine != b.canonicalLine)
    }

    @Test func aSchemaOneClosedEventWithItsItemListStillDecodes() throws {
        let json = """
            {"batch_id":"M-USD-2025-06-13","capture_count":1,"gross":{"amount":"59.00","currency":"USD"},\
            "gross_credit":{"amount":"59.00","currency":"USD"},"gross_debit":{"amount":"0.00","currency":"USD"},\
            "items":[{"kind":"capture"}],"refund_count":0}
            """
        guard case .closed(let closed) = try SettlementEvent.decode(type: SettlementBatchClosed.eventType, schemaVersion: 1, json: json) else {
            Issue.record("not a closed event")
            return
        }
        #expect(closed.captureCount == 1 && closed.gross == usd("59.00") && closed.itemsSHA256 == nil)
        #expect(throws: EventCodingError.self) {
            try SettlementEvent.decode(type: SettlementBatchClosed.eventType, schemaVersion: 3, json: json)
        }
    }

    func line(_ type: SettlementLineType, gross: Int64, interchange: Int64, scheme: Int64, markup: Int64, net: Int64? = nil) -> SettlementReportLine {
        let m = { (units: Int64) in Money(minorUnits: units, currency: .usd) }
        let signedNet = net ?? ((type == .refunded ? -gross : gross) - interchange - scheme - markup)
        return SettlementReportLine(
            companyAccount: "C",
            merchantAccount: "M",
            pspReference: "p",
            merchantReference: "o",
            paymentMethod: "visa",
            creationDate: nil,
            timeZone: "UTC",
            type: type,
            modificationReference: "pm",
            grossCurrency: .usd,
            grossDebit: type == .refunded ? m(gross) : nil,
            grossCredit: type == .refunded ? nil : m(gross),
            exchangeRate: nil,
            netCurrency: .usd,
            netDebit: signedNet < 0 ? m(-signedNet) : nil,
            netCredit: signedNet < 0 ? nil : m(signedNet),
            commission: nil,
            markup: m(markup),
            schemeFees: m(scheme),
            interchange: m(interchange),
            paymentMethodVariant: "visacredit",
            modificationMerchantReference: "r",
            batchNumber: 1
        )
    }

    @Test func clearingTotalsTheLinesAndTheIdentitiesCatchABrokenLineOrPayout() {
        // The domain page's worked example: 5.00 − (0.07 + 0.01 + 0.04) = 4.88.
        let example = line(.settled, gross: 500, interchange: 7, scheme: 1, markup: 4)
        #expect(example.signedNetMinorUnits == 488)
        let refund = line(.refunded, gross: 200, interchange: 0, scheme: 0, markup: 0)
        let lines = [example, refund]
        let cleared = SettlementBatch.cleared(batchID: "b", currency: .usd, lines: lines)
        #expect(
            cleared.lineCount == 2 && cleared.gross == usd("3.00") && cleared.interchange == usd("0.07")
                && cleared.schemeFees == usd("0.01") && cleared.markup == usd("0.04") && cleared.commission == usd("0.00")
                && cleared.net == usd("2.88")
        )
        #expect(lines.allSatisfy { SettlementConservation.lineViolation($0) == nil })
        #expect(
            SettlementConservation.lineViolation(line(.settled, gross: 500, interchange: 8, scheme: 1, markup: 4, net: 488))
                == "line r: net 4.88 USD ≠ gross 5.00 USD − fees 0.13 USD"
        )
        #expect(SettlementConservation.payoutViolation(lines: lines, payout: usd("2.88")) == nil)
        // Amounts in the message as people read them: decimal, with the currency.
        #expect(SettlementConservation.payoutViolation(lines: lines, payout: usd("1.88")) == "Σ line nets 2.88 USD ≠ payout 1.88 USD")
    }

    @Test func stateFollowsTheStepsAndEventsRoundTrip() throws {
        let o = opened()
        let closed = try SettlementBatch.close(o, items: [item(.capture, "a", "59.00")], itemsSHA256: "ab")
        let events: [SettlementEvent] = [
            .opened(o), .closed(closed),
            .submitted(SettlementBatchSubmitted(batchID: o.batchID, batchNumber: 7, reportSHA256: "ab", reportLineCount: 2)),
            .cleared(SettlementBatch.cleared(batchID: o.batchID, currency: .usd, lines: [])),
            .payoutScheduled(
                SettlementPayoutScheduled(
                    batchID: o.batchID,
                    payoutReference: "p",
                    amount: usd("57.00"),
                    valueDate: date("2025-06-16"),
                    expectedValueDate: date("2025-06-16")
                )
            ),
            .paid(SettlementPayoutPaid(batchID: o.batchID, payoutReference: "p", amount: usd("57.00"), valueDate: date("2025-06-16"))),
        ]
        var state: SettlementBatchState?
        for (n, event) in events.enumerated() {
            let encoded = try event.newEvent(eventID: UUID(), effectiveAt: t0)
            let decoded = try SettlementEvent.decode(type: encoded.type, schemaVersion: encoded.schemaVersion, json: encoded.data)
            #expect(decoded == event)
            #expect(try decoded.newEvent(eventID: UUID(), effectiveAt: t0).data == encoded.data)
            state = SettlementBatchState.evolve(state, decoded)
            #expect(state?.version == Int64(n + 1))
        }
        #expect(state?.stage == .paid && state?.closed == closed && state?.payout?.amount == usd("57.00") && state?.paid?.amount == usd("57.00"))
        #expect(SettlementBatchState.evolve(nil, events[1]) == nil)
        #expect(throws: EventCodingError.self) { try SettlementEvent.decode(type: "HoldCaptured", schemaVersion: 1, json: "{}") }
    }
}
