import Foundation
import LedgerCore
import LedgerCoreTestSupport
import Testing

/// A settlement run's snapshot of the batches: what a run records lands where a fresh read of the
/// ledger would put it.
@Suite struct SettlementBatchesTests {
    static func batch(_ merchant: String, _ currency: Currency, _ date: String, stage: Int = 1) -> SettlementBatchState {
        let day = BusinessDate(date)!
        let id = SettlementBatch.batchID(merchantAccount: merchant, currency: currency, businessDate: day)
        var events: [SettlementEvent] = [
            .opened(
                SettlementBatchOpened(
                    batchID: id,
                    merchantAccount: merchant,
                    currency: currency,
                    businessDate: day,
                    cutOffAt: t0,
                    pinnedPosition: 9
                )
            )
        ]
        if stage > 1 {
            func money(_ units: Int64) -> Money { Money(minorUnits: units, currency: currency) }
            events.append(
                .closed(
                    SettlementBatchClosed(
                        batchID: id,
                        captureCount: 1,
                        refundCount: 0,
                        grossCredit: money(100),
                        grossDebit: money(0),
                        gross: money(100),
                        itemsSHA256: nil
                    )
                )
            )
        }
        return SettlementBatchState.fold(events)!
    }

    static let usd16 = batch("Store", .usd, "2026-06-16")
    static let eur17 = batch("Store", .eur, "2026-06-17")
    static let usd17 = batch("Store", .usd, "2026-06-17")
    static let usd19 = batch("Store", .usd, "2026-06-19")

    @Test func aRecordedStateReplacesTheBatchsStateInPlace() {
        var batches = SettlementBatches([Self.usd16, Self.usd17, Self.usd19])
        let closed = Self.batch("Store", .usd, "2026-06-17", stage: 2)
        batches.record(closed)
        #expect(batches.states == [Self.usd16, closed, Self.usd19])
    }

    @Test func aBatchTheRunOpenedGoesLastAmongItsDaysAndBeforeLaterDays() {
        var batches = SettlementBatches([Self.usd16, Self.eur17, Self.usd19])
        batches.record(Self.usd17)
        #expect(batches.states == [Self.usd16, Self.eur17, Self.usd17, Self.usd19])
        var empty = SettlementBatches([])
        empty.record(Self.usd19)
        empty.record(Self.usd16)
        #expect(empty.states == [Self.usd16, Self.usd19])
    }

    @Test func aMerchantsBatchesInACurrencyAreItsOnlyByBusinessDate() {
        let other = Self.batch("Other", .usd, "2026-06-18")
        let batches = SettlementBatches([Self.usd16, Self.eur17, Self.usd17, other, Self.usd19])
        #expect(batches.of(merchantAccount: "Store", currency: .usd) == [Self.usd16, Self.usd17, Self.usd19])
        #expect(batches.of(merchantAccount: "Store", currency: .eur) == [Self.eur17])
        #expect(batches.of(merchantAccount: "Other", currency: .eur).isEmpty)
    }
}
