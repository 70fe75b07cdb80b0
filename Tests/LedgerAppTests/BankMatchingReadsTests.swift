import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerBank
import LedgerCore
import LedgerEngine
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

/// Issue 53: the matching pass reads only what is new. With 1,000 payouts announced and matched, a pass that finds one
/// new credit reads that credit and nothing of the matched history (the matching's stream, the payouts); a service
/// started afresh (a restart) folds the history once and comes to the same state; a resolution another process appends
/// is read as the one event after the remembered version.
@Suite(.machine(.shared)) struct BankMatchingReadsTests {
    @Test func aPassAfterAThousandMatchesReadsOnlyTheNewCredit() async throws {
        let count = 1_000
        let day = BusinessDate("2026-12-04")!
        let now = TestApp.instant("2026-12-04T18:00:00Z")
        try await TestApp.withApp(clock: { now }) { client, services in
            // The payouts, as the settlement writes them: each batch's opened event and its announced payout.
            let streams = try (0..<count).map { i in
                let id = "EUR-B-\(i)"
                let opened = SettlementBatchOpened(
                    batchID: id,
                    merchantAccount: "OrderLedgerStore",
                    currency: .eur,
                    businessDate: day.adding(days: -1),
                    cutOffAt: now,
                    pinnedPosition: 0,
                    earlyClose: nil
                )
                let payout = SettlementPayoutScheduled(
                    batchID: id,
                    payoutReference: "PO-\(i)",
                    amount: Money(minorUnits: 101, currency: .eur),
                    valueDate: day,
                    expectedValueDate: day
                )
                return StreamAppend(
                    streamID: SettlementBatch.streamID(batchID: id),
                    expectedVersion: .noStream,
                    events: [
                        try NewEvent(eventID: UUID(), payload: opened, effectiveAt: now),
                        try NewEvent(eventID: UUID(), payload: payout, effectiveAt: now),
                    ]
                )
            }
            _ = try await services.writer.append(AppendRequest(streams: streams))
            // One statement paying every payout by its reference: 1,000 matches.
            var text = ":20:BIG\n:25:NL91ABNA0417164300\n:28C:1/1\n:60F:C261204EUR0,\n"
            for i in 0..<count { text += ":61:2612041204C1,01NTRFNONREF//B-\(i)\n:86:/EREF/PO-\(i)/REMI/payout \(i)\n" }
            text += ":62F:C261204EUR\(count * 101 / 100),\(String(format: "%02d", count * 101 % 100))\n"
            let imported = try await client.execute(
                uri: "/bank/statements",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)"],
                body: ByteBuffer(string: text)
            ) { ($0.status, String(buffer: $0.body)) }
            #expect(imported.0 == .ok, "\(imported.1.prefix(300))")
            let matching = (try? JSONSerialization.jsonObject(with: Data(imported.1.utf8)) as? [String: Any])?["matching"] as? [String: Any]
            #expect(matching?["matched"] as? Int == count, "\(imported.1.prefix(300))")

            // A credit nobody announced, booked on a statement of its own (appended as an import appends it), then one pass.
            let stream = BankStatementReceived.stream(account: "NL91ABNA0417164300", statementID: "LATE", sequence: "1")
            let credit = BankEntryBooked(
                account: "NL91ABNA0417164300",
                statementID: "LATE",
                entry: 1,
                amount: Money(minorUnits: 555, currency: .eur),
                bookingDate: day,
                valueDate: day,
                bankReference: "B-LATE",
                ownerReference: nil,
                endToEndIDs: [],
                remittanceInformation: "/REMI/interest",
                transactionCode: "NTRF",
                reversal: false,
                booked: true
            )
            _ = try await services.writer.append(
                AppendRequest(
                    streams: [
                        StreamAppend(
                            streamID: stream,
                            expectedVersion: .noStream,
                            events: [try NewEvent(eventID: UUID(), payload: credit, effectiveAt: now)]
                        )
                    ]
                )
            )
            let pass = try await services.bank.matchPayouts()
            #expect(pass.breaks == ["unexpected_credit": 1], "\(pass)")
            // The new credit and nothing else: not the 1,000 matches, not the 2,000 payout events.
            #expect(pass.eventsRead == 1, "\(pass)")
            let (state, version) = try await services.bank.matchState()
            #expect(state.received.count == count && state.openBreaks.map(\.breakClass) == [.unexpectedCredit])

            // A restarted service folds the history once and agrees; what it appends, the first reads as one event.
            let restarted = BankStatementService(client: services.client, writer: services.writer, clock: { now }, logger: TestCluster.logger)
            let (fresh, freshVersion) = try await restarted.matchState()
            #expect(freshVersion == version && fresh.received == state.received && fresh.openBreakIDs == state.openBreakIDs)
            #expect(try await restarted.expectedPayouts().count == count)
            let found = try #require(fresh.openBreaks.first)
            _ = try await restarted.resolveBankBreak(id: found.breakID, reason: "interest, booked by hand", actor: "operator:test")
            let next = try await services.bank.matchPayouts()
            #expect(next.eventsRead == 1 && next.appended == 0 && next.openBreaks == 0, "\(next)")
        }
    }
}
