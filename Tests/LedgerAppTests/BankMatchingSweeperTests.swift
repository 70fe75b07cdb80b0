import Foundation
import LedgerAcquirer
import LedgerApp
import LedgerBank
import LedgerCore
import LedgerEngine
import LedgerServices
import LedgerTestSupport
import Testing

/// Issue 53: a payout whose funding window runs out with no statement imported is `payout_not_received`, recorded by
/// the periodic matching (``BankMatchingSweeper``) on the injected clock, not only by the next import.
@Suite struct BankMatchingSweeperTests {
    @Test func aPayoutPastItsWindowIsNotReceivedWithoutAnImport() async throws {
        let day = BusinessDate("2026-12-04")!  // a Friday: the window (2 business days) ends on Tuesday the 8th
        let clock = SimulatedClock(TestApp.instant("2026-12-07T10:00:00Z"))
        try await TestApp.withApp(clock: { clock.now }) { _, services in
            let now = clock.now
            let opened = SettlementBatchOpened(
                batchID: "EUR-B-1",
                merchantAccount: "OrderLedgerStore",
                currency: .eur,
                businessDate: day.adding(days: -1),
                cutOffAt: now,
                pinnedPosition: 0,
                earlyClose: nil
            )
            let payout = SettlementPayoutScheduled(
                batchID: "EUR-B-1",
                payoutReference: "PO-1",
                amount: Money(minorUnits: 10_100, currency: .eur),
                valueDate: day,
                expectedValueDate: day
            )
            _ = try await services.writer.append(
                AppendRequest(
                    streams: [
                        StreamAppend(
                            streamID: SettlementBatch.streamID(batchID: "EUR-B-1"),
                            expectedVersion: .noStream,
                            events: [
                                try NewEvent(eventID: UUID(), payload: opened, effectiveAt: now),
                                try NewEvent(eventID: UUID(), payload: payout, effectiveAt: now),
                            ]
                        )
                    ]
                )
            )
            let sweeper = BankMatchingSweeper(bank: services.bank, interval: .milliseconds(50), logger: TestCluster.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await sweeper.run() }
                defer { group.cancelAll() }
                // Inside the window the passes record nothing.
                try await Task.sleep(for: .milliseconds(300))
                var (state, _) = try await services.bank.matchState()
                #expect(state.breaks.isEmpty)
                // Past it, the next pass records the break once, with no import.
                clock.set(TestApp.instant("2026-12-10T10:00:00Z"))
                for _ in 0..<200 where state.openBreaks.isEmpty {
                    try await Task.sleep(for: .milliseconds(50))
                    (state, _) = try await services.bank.matchState()
                }
                #expect(state.openBreaks.map(\.breakClass) == [.payoutNotReceived])
                #expect(state.openBreaks.first?.payouts.map(\.batchID) == ["EUR-B-1"])
                try await Task.sleep(for: .milliseconds(200))
                (state, _) = try await services.bank.matchState()
                #expect(state.breaks.count == 1)
            }
        }
    }
}
