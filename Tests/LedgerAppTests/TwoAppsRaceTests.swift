import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// Two applications (two daemons: each its own locks, caches and writer) on one database, sharing the
/// acquirer as real daemons share the real one, racing over HTTP for the same order and the same day.
@Suite(.machine(.shared)) struct TwoAppsRaceTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    /// Both daemons capture from one hold at once: each first capture call waits at a barrier until the
    /// other's arrived, so both decided on the same hold version and both reached the acquirer before
    /// either recorded. Both captures are recorded, once each, and the ledger agrees with the acquirer.
    @Test(.timeLimit(.minutes(3))) func capturesOnOneOrderFromBothDaemonsAreBothRecordedOnce() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let model = AcquirerModel(seed: 9, clock: clock.reading)
        let barrier = Barrier(parties: 2)
        let (armedA, armedB) = (OneShot(), OneShot())
        let acquirerA = InterposedAcquirer(model) { call in if call == .capture, armedA.fire() { await barrier.arrive() } }
        let acquirerB = InterposedAcquirer(model) { call in if call == .capture, armedB.fire() { await barrier.arrive() } }
        let database = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: database, acquirer: acquirerA, clock: { clock.now }) { a, servicesA in
            try await TestApp.withApp(database: database, acquirer: acquirerB, clock: { clock.now }) { b, _ in
                let id = try await storefront.placeOrder(a)
                armedA.arm()
                armedB.arm()
                async let onA = backOffice.capture(a, id, #"{"amount": "10.00"}"#)
                async let onB = backOffice.capture(b, id, #"{"amount": "20.00"}"#)
                let (replyA, replyB) = try await (onA, onB)
                #expect(barrier.arrivals == 2)
                #expect(replyA.0 == .ok && replyB.0 == .ok, "\(replyA) \(replyB)")
                let order = try await backOffice.order(a, id)
                #expect(order.status == "partially_captured" && order.payment?.captured == "30.00", "\(String(describing: order.payment))")
                #expect(try await servicesA.eventCount(type: "HoldCaptured") == 2)
                let row = try await backOffice.order(b, id)
                #expect(row.payment?.captured == "30.00" && row.payment?.open == "29.00")
                guard case .found(let details) = try await model.query(merchantReference: id), let theirs = details.balance else {
                    Issue.record("the acquirer does not know the hold")
                    return
                }
                #expect(theirs.captured.minorUnits == 3_000 && theirs.open.minorUnits == 2_900)
            }
        }
    }

    /// The same business day settled on both daemons at once: one batch, each capture and refund in it
    /// once, every answer that names a batch naming the same batch and report (a run that starts after the
    /// other finished finds nothing left to do), and a clean reconciliation.
    @Test(.timeLimit(.minutes(2))) func aSettlementStartedOnBothDaemonsAtOnceSettlesEachItemOnce() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-19T10:00:00Z"))
        let model = AcquirerModel(seed: 4, clock: clock.reading)
        let database = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: database, acquirer: model, clock: { clock.now }) { a, servicesA in
            try await TestApp.withApp(database: database, acquirer: model, clock: { clock.now }) { b, _ in
                var ids: [String] = []
                for _ in 0..<4 { ids.append(try await storefront.placeOrder(a)) }
                for (i, id) in ids.enumerated() { expectReply(try await backOffice.capture(i % 2 == 0 ? a : b, id, #"{"amount": "5.00"}"#)) }
                expectReply(try await backOffice.refund(b, ids[0], #"{"amount": "1.00", "reason": "dent"}"#))
                clock.set(TestApp.instant("2026-06-19T22:00:01Z"))
                async let onA = backOffice.runSettlement(a, #"{"business_date": "2026-06-19"}"#)
                async let onB = backOffice.runSettlement(b, #"{"business_date": "2026-06-19"}"#)
                let replies = try await [onA, onB]
                for reply in replies { #expect(reply.0 == .ok, "\(reply.1)") }
                let summaries = try replies.map { try WireJSON.decode(SettlementRunReply.self, from: $0.1) }
                #expect(summaries.allSatisfy { $0.batches.count <= 1 }, "\(summaries)")
                let batches = summaries.flatMap(\.batches)
                #expect(!batches.isEmpty)
                #expect(Set(batches.map(\.batchId)).count == 1 && Set(batches.map(\.reportSha256)).count == 1)
                #expect(batches.allSatisfy { $0.stage == .payoutScheduled && $0.captures == 4 && $0.refunds == 1 && $0.gross == "19.00" })
                // Every event of the batch appended once, by one daemon or the other.
                let batchEvents = try await database.withOwner { client in
                    var count: Int64 = -1
                    for try await n in try await client.query("SELECT count(*) FROM ledger.events WHERE stream_id LIKE 'settlement-%'")
                        .decode(Int64.self)
                    {
                        count = n
                    }
                    return count
                }
                #expect(Int64(batches.map(\.appendedEvents).reduce(0, +)) == batchEvents && batchEvents >= 5)
                #expect(try await servicesA.eventCount(type: "SettlementBatchOpened") == 1)
                #expect(try await servicesA.eventCount(type: "SettlementBatchClosed") == 1)
                let assigned = try await database.withOwner { client in
                    var counts: [Int64] = []
                    let rows = try await client.query(
                        "SELECT count(*), count(DISTINCT position) FROM ledger.settlement_assignments"
                    )
                    for try await (all, distinct) in rows.decode((Int64, Int64).self) { counts = [all, distinct] }
                    return counts
                }
                #expect(assigned == [5, 5])
                let batchID = try #require(batches.first?.batchId)
                let rec = try await backOffice.reconciliation(b, batchID)
                #expect(rec.matched == 5 && rec.breaks.isEmpty && rec.openBreaks == 0, "\(rec.breaks.map(\._class.rawValue))")
            }
        }
    }
}
