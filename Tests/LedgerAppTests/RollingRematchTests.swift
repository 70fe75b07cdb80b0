import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

/// Issue 53, point 3, the acquirer's leg (issue 52's session): a report that arrives later resolves the earlier breaks
/// it explains. The acquirer settles Wednesday's capture in Thursday's batch (the model's `moveToNextBatch`): Wednesday's
/// reconciliation has a `timing` break for it, and Thursday's report, which carries the line, resolves that break
/// itself — a resolution event naming Thursday's report and its SHA-256, by the reconciliation, not an operator — while
/// Thursday's reconciliation counts the carried line as `carried`, not as one of its own matched items.
extension SettlementRunTests {
    @Test func aLaterReportResolvesTheTimingBreakItExplains() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        var faults = FaultConfiguration()
        faults.moveToNextBatch = FaultKnob(probability: Rate(numerator: 1, denominator: 1))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(faults: faults), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            try await capture(client, first)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let wednesday = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            // Before Thursday's report: an open timing break, expected in the next batch.
            var rec = try await reconciliation(client, wednesday)
            #expect(rec.breaks.map(\._class.rawValue) == ["timing"] && rec.openBreaks == 1, "\(rec.breaks)")

            let second = try await storefront.placeOrder(client)
            try await capture(client, second, #"{"amount": "10.00"}"#)
            clock.set(Self.instant("2026-06-18T22:00:01Z"))
            let thursday = try #require(try await settle(client, "2026-06-18").batches.first?.batchId)
            let sha = try #require(try await view(client, thursday).reportSha256)

            // Thursday's report carries Wednesday's capture: Wednesday's timing break is resolved, naming that report.
            rec = try await reconciliation(client, wednesday)
            let timing = try #require(rec.breaks.first)
            #expect(timing._class.rawValue == "timing" && rec.windowClosed)
            #expect(timing.resolved && rec.openBreaks == 0, "\(rec.breaks)")
            #expect(timing.resolvedBy == "reconciliation", "\(String(describing: timing.resolvedBy))")
            #expect(timing.resolutionReason?.contains(thursday) == true && timing.resolutionReason?.contains(sha) == true)
            // The resolution is an event of Wednesday's reconciliation stream naming the file.
            let events = try await services.store.readStream(Reconciliation.streamID(batchID: wednesday)).map { try SettlementEvent.decode($0) }
            let resolution = try #require(
                events.compactMap { event -> ReconciliationBreakResolved? in
                    if case .breakResolved(let e) = event { return e }
                    return nil
                }
                .first
            )
            #expect(resolution.breakID == timing.breakId && resolution.report == thursday && resolution.reportSHA256 == sha)
            // An operator cannot resolve it a second time.
            let (again, _) = try await resolve(client, timing.breakId, #"{"reason": "x"}"#)
            #expect(again == .conflict)

            // Thursday: the carried line is counted as carried, not as one of Thursday's matched items; Thursday's own
            // capture (moved on to Friday) is its timing break.
            let next = try await reconciliation(client, thursday)
            #expect(next.matched == 0 && next.carried == 1, "\(next)")
            #expect(next.breaks.map(\._class.rawValue) == ["timing"])
            // Settling again changes nothing: nothing appended.
            let head = try await services.store.head().position
            _ = try await settle(client, "2026-06-18")
            #expect(try await services.store.head().position == head)
        }
    }

    /// A payout line that arrives in a later file: an upload of the batch's report without its payout line is a
    /// `payout_mismatch` ("no payout line"); a later upload of the whole report, adding up, resolves that break, naming
    /// the later file (its key, `upload-<SHA-256>`).
    @Test func aPayoutLineInALaterFileResolvesTheMissingPayoutBreak() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await get(client, "/settlements/\(batchID)/report.csv")
            let lines = try SettlementReportCSV().parse(csv)

            var (status, text) = try await postReport(client, try Self.sdr(lines.filter { $0.type != .merchantPayout }), query: "?batch=\(batchID)")
            #expect(status == .ok, "\(text)")
            let first = try WireJSON.decode(ReconciliationReply.self, from: text)
            let missing = try #require(first.breaks.first)
            #expect(first.breaks.count == 1 && missing._class.rawValue == "payout_mismatch" && !missing.resolved, "\(first.breaks)")

            (status, text) = try await postReport(client, try Self.sdr(lines), query: "?batch=\(batchID)")
            let second = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(status == .ok && second.breaks.isEmpty && second.report.hasPrefix("upload-"), "\(text)")
            let rec = try await reconciliation(client, batchID)
            let earlier = try #require(rec.reconciliations.first { $0.report == first.report }?.breaks.first)
            #expect(earlier.breakId == missing.breakId && earlier.resolved && earlier.resolvedBy == "reconciliation", "\(earlier)")
            #expect(earlier.resolutionReason?.contains(String(second.report.dropFirst("upload-".count))) == true)
            // Uploading the later file again changes nothing.
            let head = try await services.store.head().position
            (status, _) = try await postReport(client, try Self.sdr(lines), query: "?batch=\(batchID)")
            #expect(status == .ok)
            #expect(try await services.store.head().position == head)
        }
    }
}
