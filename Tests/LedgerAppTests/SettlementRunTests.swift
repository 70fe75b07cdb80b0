import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import LedgerServices

/// End-of-day settlement through the real router, database and acquirer model: money conservation,
/// the cut-off boundary, the funding calendar, re-runs, resuming a batch, and refusals.
@Suite(.machine(.shared)) struct SettlementRunTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    func reconciliation(_ client: any TestClientProtocol, _ id: String) async throws -> ReconciliationReply {
        let (status, text) = try await get(client, "/settlements/\(id)/reconciliation")
        #expect(status == .ok, "\(text)")
        return try JSONDecoder().decode(ReconciliationReply.self, from: Data(text.utf8))
    }

    func resolve(_ client: any TestClientProtocol, _ id: String, _ body: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(
            uri: "/reconciliation/breaks/\(id)/resolve",
            method: .post,
            headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
            body: ByteBuffer(string: body)
        ) { ($0.status, String(buffer: $0.body)) }
    }

    static let knobs: [(String, String)] = [
        ("dropLine", "missing_at_acquirer"), ("duplicateLine", "duplicate"), ("alterAmount", "amount_mismatch"),
        ("alterFee", "fee_mismatch"), ("moveToNextBatch", "timing"), ("shortPayPayout", "payout_mismatch"),
    ]

    /// Each fault knob, firing on every line, gives exactly its break class once the next batch closed the window.
    @Test(arguments: SettlementRunTests.knobs.map(\.0))
    func eachFaultKnobProducesExactlyItsBreakClass(knob: String) async throws {
        let expected = Self.knobs.first { $0.0 == knob }!.1
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        let always = FaultKnob(probability: Rate(numerator: 1, denominator: 1))
        var faults = FaultConfiguration()
        switch knob {
        case "dropLine": faults.dropLine = always
        case "duplicateLine": faults.duplicateLine = always
        case "alterAmount": faults.alterAmount = always
        case "alterFee": faults.alterFee = always
        case "moveToNextBatch": faults.moveToNextBatch = always
        default: faults.shortPayPayout = always
        }
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(faults: faults), clock: clock.reading)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            try await capture(client, first)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let wednesday = try await settle(client, "2026-06-17")
            let second = try await storefront.placeOrder(client)
            try await capture(client, second, #"{"amount": "10.00"}"#)
            clock.set(Self.instant("2026-06-18T22:00:01Z"))
            _ = try await settle(client, "2026-06-18")
            let id = try #require(wednesday.batches.first?.batchId)
            let rec = try await reconciliation(client, id)
            #expect(rec.windowClosed)
            #expect(rec.breaks.map(\._class.rawValue) == [expected], "\(knob): \(rec.breaks.map(\._class.rawValue))")
            // The result and each break are events of the batch's reconciliation stream.
            let recorded = try await services.store.readStream(Reconciliation.streamID(batchID: id)).map { try SettlementEvent.decode($0) }
            let found = recorded.compactMap { event -> String? in
                if case .breakFound(let e) = event { return e.found.breakClass.rawValue }
                return nil
            }
            #expect(found.last == expected && recorded.contains { if case .reconciled = $0 { true } else { false } })

            // The next batch's report carries the moved line: it resolved the timing break itself, naming that report
            // (RollingRematchTests); every other break waits for an operator.
            if knob == "moveToNextBatch" {
                #expect(rec.breaks.first?.resolved == true && rec.breaks.first?.resolvedBy == "reconciliation", "\(rec.breaks)")
                return
            }
            // An operator resolves the break with a reason: an event; a second time is refused.
            let breakID = try #require(rec.breaks.first?.breakId)
            var head = try await services.store.head().position
            let (missingReason, _) = try await resolve(client, breakID, "{}")
            let (unknown, _) = try await resolve(client, "\(id).timing.nothing", #"{"reason": "x"}"#)
            #expect(missingReason == .unprocessableContent && unknown == .notFound)
            #expect(try await services.store.head().position == head)
            let (resolved, resolvedText) = try await resolve(client, breakID, #"{"reason": "acquirer ticket 42"}"#)
            #expect(resolved == .ok, "\(resolvedText)")
            head += 1
            #expect(try await services.store.head().position == head)
            let after = try await reconciliation(client, id)
            #expect(
                after.openBreaks == 0 && after.breaks.first?.resolutionReason == "acquirer ticket 42"
                    && after.breaks.first?.resolvedBy?.hasPrefix("operator") == true
            )
            let (again, againText) = try await resolve(client, breakID, #"{"reason": "twice"}"#)
            #expect(again == .conflict && againText.contains("already_resolved"))
        }
    }

    static func instant(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }
    /// 2026-06-19 is a Friday.
    static let friday = instant("2026-06-19T10:00:00Z")

    func run(_ client: any TestClientProtocol, _ body: String, key: String? = TestApp.operatorKey) async throws -> (HTTPResponse.Status, String) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let key { headers[.authorization] = "Bearer \(key)" }
        return try await client.execute(uri: "/settlements/run", method: .post, headers: headers, body: ByteBuffer(string: body)) {
            ($0.status, String(buffer: $0.body))
        }
    }

    func settle(_ client: any TestClientProtocol, _ date: String) async throws -> SettlementRunReply {
        let (status, text) = try await run(client, #"{"business_date": "\#(date)"}"#)
        #expect(status == .ok, "\(text)")
        return try JSONDecoder().decode(SettlementRunReply.self, from: Data(text.utf8))
    }

    func get(_ client: any TestClientProtocol, _ uri: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(TestApp.auditorKey)"]) {
            ($0.status, String(buffer: $0.body))
        }
    }

    func view(_ client: any TestClientProtocol, _ id: String) async throws -> SettlementBatchReply {
        let (status, text) = try await get(client, "/settlements/\(id)")
        #expect(status == .ok, "\(text)")
        return try JSONDecoder().decode(SettlementBatchReply.self, from: Data(text.utf8))
    }

    func capture(_ client: any TestClientProtocol, _ id: String, _ body: String = "{}") async throws {
        let (status, text) = try await backOffice.operate(client, id, "capture", body)
        #expect(status == .ok, "\(text)")
    }

    /// One day of 8 captures and 2 refunds settled with the given page and part sizes: the batch, its
    /// stored report's bytes and part count, and its reconciliation.
    func settleTenItems(environment: [String: String]) async throws -> (Components.Schemas.SettlementRunBatch, String, Int32, ReconciliationReply) {
        let clock = SimulatedClock(Self.friday)
        let acquirer = AcquirerModel(seed: 3, clock: clock.reading)
        let result = Outcome()
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }, environment: environment) { client, services in
            var ids: [String] = []
            for i in 0..<8 { ids.append(try await storefront.placeOrder(client, source: i % 2 == 0 ? "tok_visa" : "tok_mastercard")) }
            for (i, id) in ids.enumerated() { try await capture(client, id, #"{"amount": "\#(10 + i).00"}"#) }
            for id in ids.prefix(2) { expectReply(try await backOffice.refund(client, id, #"{"amount": "1.00", "reason": "dent"}"#)) }
            clock.set(Self.instant("2026-06-19T22:00:01Z"))
            let summary = try await settle(client, "2026-06-19")
            let batch = try #require(summary.batches.first)
            let (csvStatus, csv) = try await get(client, "/settlements/\(batch.batchId)/report.csv")
            #expect(csvStatus == .ok, "\(csv)")
            let parts = try await services.client.withConnection { connection in
                var parts: [Int32] = []
                let rows = try await connection.query(
                    "SELECT parts FROM ledger.settlement_reports WHERE batch_id = \(batch.batchId)",
                    logger: TestCluster.logger
                )
                for try await part in rows.decode(Int32.self) { parts.append(part) }
                return parts
            }
            let settled = (batch, csv, try #require(parts.first), try await reconciliation(client, batch.batchId))
            result.value.withLock { $0 = settled }
        }
        return try #require(result.value.withLock { $0 })
    }

    final class Outcome: Sendable {
        let value = Mutex<(Components.Schemas.SettlementRunBatch, String, Int32, ReconciliationReply)?>(nil)
    }

    /// Pages of 3 items to the acquirer (4 pages for 10 items) and report parts of 3 lines (4 parts for
    /// 11 lines): the batch settles and reconciles as with one page, and the stored parts joined are
    /// the acquirer's whole report.
    @Test func aBatchSpanningSeveralPagesAndReportPartsSettlesAndReconcilesLikeOnePage() async throws {
        let small = try await settleTenItems(environment: [
            "LEDGERD_SETTLEMENT_PAGE_SIZE": "3", "LEDGERD_SETTLEMENT_REPORT_PART_LINES": "3",
        ])
        let whole = try await settleTenItems(environment: [:])
        #expect(small.0.captures == 8 && small.0.refunds == 2 && small.0.stage == .payoutScheduled, "\(small.0)")
        #expect(small.0.gross == "106.00")  // 10 + 11 + … + 17 − 2 × 1.00
        #expect(small.2 == 4 && whole.2 == 1, "parts: \(small.2) and \(whole.2)")
        // The parts joined are the report the acquirer sent, whole: its digest, its lines, its money.
        let digest = SHA256.hash(data: Array(small.1.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(digest == small.0.reportSha256)
        let lines = try SettlementReportCSV().parse(small.1)
        let wholeLines = try SettlementReportCSV().parse(whole.1)
        #expect(lines.count == 11 && wholeLines.count == 11)
        #expect(lines.filter { $0.type != .merchantPayout }.reduce(Int64(0)) { $0 + $1.signedGrossMinorUnits } == 10_600)
        #expect(small.0.gross == whole.0.gross && small.0.payout == whole.0.payout)
        let rec = small.3
        #expect(rec.reportLines == 11 && rec.ledgerItems == 10 && rec.matched == 10 && rec.breaks.isEmpty, "\(rec)")
        #expect(rec.matched == whole.3.matched && rec.reportLines == whole.3.reportLines)
    }

    /// The merchant account and the fee schedule are the ledger's own settings, and the acquirer it runs is configured
    /// from them (the harness builds its in-process model as the daemon's child is built: from
    /// `supervisedAcquirerSettings`): an account "AcmeStore" with a 2 % blended commission settles under that account,
    /// with those fees, and reconciles without a break. Before, the ledger took both from the simulator's defaults.
    @Test func theMerchantAccountAndFeesAreTheLedgersOwnAndItsAcquirerFollowsThem() async throws {
        let pricingFile = FileManager.default.temporaryDirectory.appendingPathComponent("pricing-\(UUID().uuidString).json")
        let commission = FeeComponent(rate: Rate(numerator: 2, denominator: 100))
        try LedgerJSON.encode([PricingSchedule(currency: .usd, model: .blended(commission: commission))]).write(to: pricingFile)
        defer { try? FileManager.default.removeItem(at: pricingFile) }
        let clock = SimulatedClock(Self.friday)
        let environment = ["LEDGERD_SETTLEMENT_MERCHANT_ACCOUNT": "AcmeStore", "LEDGERD_SETTLEMENT_PRICING_FILE": pricingFile.path]
        try await TestApp.withApp(seed: true, clock: { clock.now }, environment: environment) { client, _ in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id, #"{"amount": "50.00"}"#)
            clock.set(Self.instant("2026-06-19T22:00:01Z"))
            let batch = try #require(try await settle(client, "2026-06-19").batches.first)
            #expect(batch.gross == "50.00" && batch.net == "49.00", "\(batch)")
            let (status, text) = try await get(client, "/settlements/\(batch.batchId)")
            #expect(status == .ok, "\(text)")
            let reply = try JSONDecoder().decode(SettlementBatchReply.self, from: Data(text.utf8))
            #expect(reply.merchantAccount == "AcmeStore" && reply.commission == "1.00" && (reply.interchange ?? "0.00") == "0.00", "\(reply)")
            let (_, csv) = try await get(client, "/settlements/\(batch.batchId)/report.csv")
            let lines = try SettlementReportCSV().parse(csv)
            #expect(!lines.isEmpty && lines.allSatisfy { $0.merchantAccount == "AcmeStore" }, "\(csv)")
            let rec = try await reconciliation(client, batch.batchId)
            #expect(rec.matched == 1 && rec.breaks.isEmpty, "\(rec)")
        }
    }

    @Test func settlingADayConservesMoneyAndARerunAppendsNothingAndServesTheSameBytes() async throws {
        let clock = SimulatedClock(Self.friday)
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let a = try await storefront.placeOrder(client)
            let b = try await storefront.placeOrder(client, source: "tok_mastercard")
            _ = try await storefront.placeOrder(client)  // authorized, never captured: not settled
            try await capture(client, a)
            try await capture(client, b, #"{"amount": "20.00"}"#)
            let (status, text) = try await backOffice.operate(client, a, "refund", #"{"amount": "5.00", "reason": "scratched"}"#)
            #expect(status == .ok, "\(text)")

            clock.set(Self.instant("2026-06-19T22:00:01Z"))
            var reads = services.settlement.batchReads.value
            let summary = try await settle(client, "2026-06-19")
            // The run read every batch stream once: to settle, to reconcile and to record payouts.
            #expect(services.settlement.batchReads.value == reads + 1)
            #expect(summary.cutOffAt == "2026-06-19T22:00:00.000000Z")
            try #require(summary.batches.count == 1)
            let batch = summary.batches[0]
            #expect(batch.batchId == "OrderLedgerStore-USD-2026-06-19" && batch.stage == .payoutScheduled)
            #expect(batch.captures == 2 && batch.refunds == 1 && batch.appendedEvents == 5)
            // Σ captures − Σ refunds = gross: 59.00 + 20.00 − 5.00.
            #expect(batch.gross == "74.00")
            // Friday, T+1: Monday.
            #expect(batch.valueDate == "2026-06-22")

            let v = try await view(client, batch.batchId)
            #expect(v.grossCredit == "79.00" && v.grossDebit == "5.00" && v.gross == "74.00" && v.expectedValueDate == "2026-06-22")
            #expect(v.payout == v.net)

            let (csvStatus, csv) = try await get(client, "/settlements/\(batch.batchId)/report.csv")
            #expect(csvStatus == .ok)
            let digest = SHA256.hash(data: Array(csv.utf8)).map { String(format: "%02x", $0) }.joined()
            #expect(digest == v.reportSha256)
            let lines = try SettlementReportCSV().parse(csv)
            let priced = lines.filter { $0.type != .merchantPayout }
            #expect(priced.count == 3)
            // Every line: net = gross − fees; Σ line gross = batch gross; Σ nets = payout.
            #expect(priced.allSatisfy { SettlementConservation.lineViolation($0) == nil })
            #expect(priced.reduce(Int64(0)) { $0 + $1.signedGrossMinorUnits } == 7400)
            let payout = try Money(decimal: try #require(v.payout), currency: .usd)
            #expect(SettlementConservation.payoutViolation(lines: lines, payout: payout) == nil)
            let fees = priced.reduce(Int64(0)) { $0 + $1.totalFeesMinorUnits }
            #expect(payout.minorUnits == 7400 - fees && fees > 0)
            #expect(Set(priced.map(\.modificationMerchantReference)).count == 3)

            // A clean day reconciles with zero breaks (the stored CSV re-ingested against the ledger).
            let (recStatus, recText) = try await get(client, "/settlements/\(batch.batchId)/reconciliation")
            #expect(recStatus == .ok, "\(recText)")
            let rec = try JSONDecoder().decode(ReconciliationReply.self, from: Data(recText.utf8))
            #expect(rec.matched == 3 && rec.breaks.isEmpty && rec.ledgerItems == 3 && rec.reportLines == 4 && !rec.windowClosed)

            // The same day again: nothing appended, the same report bytes.
            let head = try await services.store.head().position
            reads = services.settlement.batchReads.value
            let again = try await settle(client, "2026-06-19")
            #expect(services.settlement.batchReads.value == reads + 1)
            #expect(again.batches.map(\.appendedEvents) == [0] && again.batches[0].reportSha256 == v.reportSha256)
            #expect(try await services.store.head().position == head)
            let (_, csvAgain) = try await get(client, "/settlements/\(batch.batchId)/report.csv")
            #expect(Array(csvAgain.utf8) == Array(csv.utf8))

            // The next business day has nothing left to settle from this one.
            clock.set(Self.instant("2026-06-22T22:00:01Z"))
            reads = services.settlement.batchReads.value
            let monday = try await settle(client, "2026-06-22")
            #expect(monday.batches.isEmpty)
            #expect(services.settlement.batchReads.value == reads + 1)
            // Monday is the value date: the deposit is recorded, once.
            let paid = try await view(client, batch.batchId)
            #expect(paid.stage == .paid && paid.paidAmount == v.payout && paid.paidValueDate == "2026-06-22")
            let afterPaid = try await services.store.head().position
            _ = try await settle(client, "2026-06-22")
            #expect(try await services.store.head().position == afterPaid)

            var (listStatus, listText) = try await get(client, "/settlements?from=2026-06-19&to=2026-06-19")
            #expect(listStatus == .ok)
            #expect(try JSONDecoder().decode(SettlementListReply.self, from: Data(listText.utf8)).settlements.map(\.batchId) == [batch.batchId])
            (listStatus, listText) = try await get(client, "/settlements?from=2026-06-20")
            #expect(try JSONDecoder().decode(SettlementListReply.self, from: Data(listText.utf8)).settlements.isEmpty)
        }
    }

    @Test func aCaptureOneMillisecondBeforeTheCutOffAndOneAtItLandInDifferentBatches() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))  // a Wednesday
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, _ in
            let before = try await storefront.placeOrder(client)
            let at = try await storefront.placeOrder(client, amount: 5900)
            clock.set(Self.instant("2026-06-17T22:00:00Z").addingTimeInterval(-0.001))
            try await capture(client, before, #"{"amount": "11.00"}"#)
            clock.set(Self.instant("2026-06-17T22:00:00Z"))
            try await capture(client, at, #"{"amount": "22.00"}"#)
            clock.set(Self.instant("2026-06-17T22:05:00Z"))
            let wednesday = try await settle(client, "2026-06-17")
            #expect(wednesday.batches.map(\.captures) == [1] && wednesday.batches.map(\.gross) == ["11.00"])
            clock.set(Self.instant("2026-06-18T22:05:00Z"))
            let thursday = try await settle(client, "2026-06-18")
            #expect(thursday.batches.map(\.captures) == [1] && thursday.batches.map(\.gross) == ["22.00"])
            #expect(thursday.batches.map(\.valueDate) == ["2026-06-19"])
        }
    }

    /// `{"close_now": true}` (`ledgerd settle --today`): the open business day closes now, before its cut-off, as the
    /// operator's recorded action (in the batch's opened event and its view); the batch reconciles clean; a capture
    /// later that day settles with the next business day, and neither a second early close nor the scheduled run
    /// at the cut-off appends anything for the day.
    @Test func anOperatorClosesTheOpenDayEarlyAndLaterCapturesSettleWithTheNextDay() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))  // a Wednesday
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            let late = try await storefront.placeOrder(client, amount: 5900)
            try await capture(client, first, #"{"amount": "11.00"}"#)
            clock.set(Self.instant("2026-06-17T12:00:00Z"))
            let (status, text) = try await run(client, #"{"close_now": true}"#)
            #expect(status == .ok, "\(text)")
            let early = try JSONDecoder().decode(SettlementRunReply.self, from: Data(text.utf8))
            let scheduled = EventJSON.timestamp(Self.instant("2026-06-17T22:00:00Z").epochMicroseconds)
            #expect(early.businessDate == "2026-06-17" && early.cutOffAt == EventJSON.timestamp(clock.now.epochMicroseconds))
            #expect(early.closedEarlyBy?.hasPrefix("operator:") == true && early.scheduledCutOffAt == scheduled, "\(text)")
            #expect(early.batches.map(\.captures) == [1] && early.batches.map(\.gross) == ["11.00"])
            #expect(early.batches.map(\.stage) == [.payoutScheduled], "\(text)")
            let batchID = try #require(early.batches.first?.batchId)
            let batch = try await view(client, batchID)
            #expect(batch.closedEarlyBy == early.closedEarlyBy && batch.scheduledCutOffAt == scheduled)
            #expect(batch.cutOffAt == early.cutOffAt)
            let reconciled = try await reconciliation(client, batchID)
            #expect(reconciled.breaks.isEmpty && reconciled.matched == 1, "\(reconciled)")
            // The log says who closed early, in the batch's opened event.
            let opened = try await services.store.readStream(SettlementBatch.streamID(batchID: batchID)).first
            #expect(opened?.type == "SettlementBatchOpened")
            let payload = opened?.data ?? ""
            #expect(payload.contains(#""early_close":{"requested_by":"operator:"#) && payload.contains(scheduled), "\(payload)")

            // Later the same day: that capture waits for the next business day.
            clock.set(Self.instant("2026-06-17T15:00:00Z"))
            try await capture(client, late, #"{"amount": "22.00"}"#)
            let head = try await services.store.head().position
            let (againStatus, againText) = try await run(client, #"{"close_now": true}"#)
            let again = try JSONDecoder().decode(SettlementRunReply.self, from: Data(againText.utf8))
            #expect(againStatus == .ok && again.batches.map(\.appendedEvents) == [0] && again.batches.map(\.captures) == [1], "\(againText)")
            // A re-run reports when the batch really closed, and who closed it, not the re-run's time (issue 55).
            #expect(again.cutOffAt == early.cutOffAt && again.closedEarlyBy == early.closedEarlyBy, "\(againText)")
            clock.set(Self.instant("2026-06-17T22:05:00Z"))
            let wednesday = try await settle(client, "2026-06-17")
            #expect(wednesday.batches.map(\.appendedEvents) == [0])
            #expect(wednesday.cutOffAt == early.cutOffAt && wednesday.closedEarlyBy == early.closedEarlyBy, "\(wednesday)")
            #expect(try await services.store.head().position == head)
            clock.set(Self.instant("2026-06-18T22:05:00Z"))
            let thursday = try await settle(client, "2026-06-18")
            #expect(thursday.batches.map(\.captures) == [1] && thursday.batches.map(\.gross) == ["22.00"], "\(thursday)")
            let thursdayID = try #require(thursday.batches.first?.batchId)
            #expect(try await view(client, thursdayID).closedEarlyBy == nil)
            let thursdayReconciled = try await reconciliation(client, thursdayID)
            #expect(thursdayReconciled.breaks.isEmpty && thursdayReconciled.matched == 1, "\(thursdayReconciled)")
        }
    }

    /// The items a batch took, as the database assigned them (sql/0008), in ledger order.
    static func assigned(_ client: DatabaseClient) async throws -> [String: [SettlementBatchItem]] {
        let rows = try await client.query(
            """
            SELECT a.batch_id, s.position, s.kind, s.order_id, s.modification_reference, s.psp_modification_reference, s.currency,
                   s.amount_minor, ledger.epoch_us(s.recorded_at)
            FROM ledger.settlement_assignments a JOIN ledger.settlement_items s ON s.position = a.position ORDER BY s.position
            """
        )
        var batches: [String: [SettlementBatchItem]] = [:]
        for try await (batch, position, kind, order, ours, theirs, code, units, micros)
            in rows.decode((String, Int64, String, String, String, String, String, Int64, Int64).self)
        {
            batches[batch, default: []].append(
                SettlementBatchItem(
                    kind: SettlementItemKind(rawValue: kind)!,
                    orderID: order,
                    modificationReference: ours,
                    pspModificationReference: theirs,
                    amount: Money(minorUnits: units, currency: Currency(code: code)!),
                    recordedAt: Date(epochMicroseconds: micros),
                    position: position
                )
            )
        }
        return batches
    }

    static func closedEvent(_ store: EventStore, _ batchID: String) async throws -> SettlementBatchClosed? {
        for recorded in try await store.readStream(SettlementBatch.streamID(batchID: batchID)) {
            if case .closed(let e) = try SettlementEvent.decode(recorded) { return e }
        }
        return nil
    }

    /// Settling a later day first settles an earlier day left unsettled, in its own batch; each closed
    /// event's counts, gross and digest are exactly the items the database assigned; a closed event
    /// stating other items is refused by the database and changes nothing; a rebuild derives the
    /// same assignment from the log.
    @Test func aLaterDaySettlesTheEarlierDayFirstAndTheDatabaseTakesExactlyTheStatedItems() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))  // a Wednesday
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: db, clock: { clock.now }) { client, services in
            let a = try await storefront.placeOrder(client)
            let b = try await storefront.placeOrder(client)
            try await capture(client, a)
            let (status, text) = try await backOffice.operate(client, a, "refund", #"{"amount": "9.00", "reason": "dent"}"#)
            #expect(status == .ok, "\(text)")
            clock.set(Self.instant("2026-06-18T10:00:00Z"))
            try await capture(client, b, #"{"amount": "30.00"}"#)
            // Nobody settled Wednesday; Thursday's run does it first, in Wednesday's batch.
            clock.set(Self.instant("2026-06-18T22:00:01Z"))
            let reads = services.settlement.batchReads.value
            let thursday = try await settle(client, "2026-06-18")
            // Two days, two batches, each reconciled with the one before it: the batches read once.
            #expect(services.settlement.batchReads.value == reads + 1)
            #expect(thursday.batches.map(\.batchId) == ["OrderLedgerStore-USD-2026-06-17", "OrderLedgerStore-USD-2026-06-18"])
            #expect(thursday.batches.map(\.gross) == ["50.00", "30.00"] && thursday.batches.map(\.refunds) == [1, 0])

            let assigned = try await Self.assigned(services.client)
            #expect(assigned.keys.sorted() == thursday.batches.map(\.batchId))
            for (batchID, items) in assigned {
                let closed = try #require(try await Self.closedEvent(services.store, batchID))
                #expect(SettlementConservation.grossViolation(closed, items: items) == nil)
                let digest = SHA256.hash(data: Array(items.map(\.canonicalLine).joined().utf8)).map { String(format: "%02x", $0) }.joined()
                #expect(closed.itemsSHA256 == digest)
            }
            // The order's history shows the batch that took its capture and refund.
            let history = try await services.store.orderHistory(a)
            #expect(history.filter { $0.type == "SettlementBatchClosed" }.map(\.streamID.rawValue) == ["settlement-OrderLedgerStore-USD-2026-06-17"])

            // A closed event that states items the rule does not take is refused, and nothing changes. It is a
            // mismatch of its own (LDG10), not a version conflict: deciding again would not fix it.
            let c = try await storefront.placeOrder(client)
            try await capture(client, c, #"{"amount": "7.00"}"#)
            let batchID = "OrderLedgerStore-USD-2026-06-19"
            let opened = SettlementBatchOpened(
                batchID: batchID,
                merchantAccount: "OrderLedgerStore",
                currency: .usd,
                businessDate: BusinessDate("2026-06-19")!,
                cutOffAt: Self.instant("2026-06-19T22:00:00Z"),
                pinnedPosition: try await services.store.head().position
            )
            _ = try await services.writer.append(
                AppendRequest(
                    stream: SettlementBatch.streamID(batchID: batchID),
                    expectedVersion: .noStream,
                    events: [try SettlementEvent.opened(opened).newEvent(eventID: UUID(), effectiveAt: clock.now)]
                )
            )
            let head = try await services.store.head().position
            for (captures, gross) in [(2, Int64(1400)), (1, Int64(701)), (0, Int64(0))] {
                let forged = SettlementBatchClosed(
                    batchID: batchID,
                    captureCount: captures,
                    refundCount: 0,
                    grossCredit: Money(minorUnits: gross, currency: .usd),
                    grossDebit: .zero(.usd),
                    gross: Money(minorUnits: gross, currency: .usd),
                    itemsSHA256: "forged"
                )
                await #expect(throws: AppendError.settlementItemsMismatch) {
                    _ = try await services.writer.append(
                        AppendRequest(
                            stream: SettlementBatch.streamID(batchID: batchID),
                            expectedVersion: .exact(1),
                            events: [try SettlementEvent.closed(forged).newEvent(eventID: UUID(), effectiveAt: clock.now)]
                        )
                    )
                }
            }
            #expect(try await services.store.head().position == head)
            #expect(try await Self.assigned(services.client) == assigned)
            // The job closes it right (the batch the forgeries left at "opened").
            clock.set(Self.instant("2026-06-19T22:00:01Z"))
            let friday = try await settle(client, "2026-06-19")
            #expect(friday.batches.map(\.gross) == ["7.00"] && friday.batches.map(\.captures) == [1])

            // Derived again from the log alone: the same rows.
            let before = try await Self.assigned(services.client)
            try await db.withOwner { owner in
                try await owner.query("TRUNCATE ledger.settlement_items, ledger.settlement_open_items, ledger.settlement_assignments")
                try await owner.query("SELECT ledger.rebuild_settlement_items()")
            }
            #expect(try await Self.assigned(services.client) == before)

            // The auditor's check: the projection agrees with every closed event; moved items do not.
            var audit = try await SettlementService.auditItems(client: services.client, logger: TestCluster.logger)
            #expect(audit.ok && audit.batches == 3 && audit.items == 4, "\(audit.problems)")
            // Assignments are append-only even for the application; the owner has to switch that off.
            await #expect(throws: (any Error).self) {
                try await services.client.query("UPDATE ledger.settlement_assignments SET batch_id = 'elsewhere'")
            }
            try await db.withOwner { owner in
                try await owner.query("ALTER TABLE ledger.settlement_assignments DISABLE TRIGGER settlement_assignments_append_only")
                try await owner.query(
                    """
                    UPDATE ledger.settlement_assignments a SET batch_id = 'OrderLedgerStore-USD-2026-06-18'
                    FROM ledger.settlement_items s
                    WHERE s.position = a.position AND a.batch_id = 'OrderLedgerStore-USD-2026-06-17' AND s.kind = 'refund'
                    """
                )
                try await owner.query("ALTER TABLE ledger.settlement_assignments ENABLE TRIGGER settlement_assignments_append_only")
            }
            audit = try await SettlementService.auditItems(client: services.client, logger: TestCluster.logger)
            #expect(audit.problems.count == 2 && audit.problems.allSatisfy { $0.contains("the event states") }, "\(audit.problems)")
            _ = try await db.withOwner { owner in try await owner.query("SELECT ledger.rebuild_settlement_items()") }
            #expect(try await SettlementService.auditItems(client: services.client, logger: TestCluster.logger).ok)
        }
    }

    @Test func theCutOffFollowsTheMerchantsZoneAndHolidaysMoveThePayout() async throws {
        // New York, cut-off 18:00: on 2026-03-06 (Friday, standard time) that is 23:00 UTC.
        let clock = SimulatedClock(Self.instant("2026-03-06T15:00:00Z"))
        let environment = [
            "LEDGERD_SETTLEMENT_TIME_ZONE": "America/New_York", "LEDGERD_SETTLEMENT_CUT_OFF": "18:00",
            "LEDGERD_SETTLEMENT_HOLIDAYS": "2026-03-09",
        ]
        try await TestApp.withApp(seed: true, clock: { clock.now }, environment: environment) { client, _ in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            clock.set(Self.instant("2026-03-06T22:59:59Z"))
            let (status, text) = try await run(client, #"{"business_date": "2026-03-06"}"#)
            #expect(status == .conflict && text.contains("cut_off_not_reached"), "\(text)")
            clock.set(Self.instant("2026-03-06T23:00:00Z"))
            let friday = try await settle(client, "2026-03-06")
            #expect(friday.cutOffAt == "2026-03-06T23:00:00.000000Z")
            // Monday 2026-03-09 is a holiday: T+1 is Tuesday.
            #expect(friday.batches.map(\.valueDate) == ["2026-03-10"])
            let (holiday, holidayText) = try await run(client, #"{"business_date": "2026-03-09"}"#)
            #expect(holiday == .unprocessableContent && holidayText.contains("not_a_business_day"))
        }
    }

    @Test func aBatchLeftOpenByACrashIsCompletedWithExactlyItsPinnedCaptures() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            try await capture(client, first)
            // A run that recorded "opened" and died: the batch is pinned to the ledger as it was then.
            let pinned = try await services.store.head().position
            let cutOff = Self.instant("2026-06-17T22:00:00Z")
            let opened = SettlementEvent.opened(
                SettlementBatchOpened(
                    batchID: "OrderLedgerStore-USD-2026-06-17",
                    merchantAccount: "OrderLedgerStore",
                    currency: .usd,
                    businessDate: BusinessDate("2026-06-17")!,
                    cutOffAt: cutOff,
                    pinnedPosition: pinned
                )
            )
            _ = try await services.writer.append(
                AppendRequest(
                    stream: SettlementBatch.streamID(batchID: "OrderLedgerStore-USD-2026-06-17"),
                    expectedVersion: .noStream,
                    events: [try opened.newEvent(eventID: UUID(), effectiveAt: clock.now)]
                )
            )
            // Captured before the cut-off but after the pin: the next business day's batch.
            let second = try await storefront.placeOrder(client)
            try await capture(client, second, #"{"amount": "30.00"}"#)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let resumed = try await settle(client, "2026-06-17")
            #expect(resumed.batches.map(\.appendedEvents) == [4] && resumed.batches.map(\.gross) == ["59.00"])
            clock.set(Self.instant("2026-06-18T22:00:01Z"))
            let next = try await settle(client, "2026-06-18")
            #expect(next.batches.map(\.gross) == ["30.00"])
            // Every capture in exactly one batch.
            let (_, listText) = try await get(client, "/settlements")
            let list = try JSONDecoder().decode(SettlementListReply.self, from: Data(listText.utf8))
            // Every capture in exactly one batch (the first one's payout, value date 06-18, is paid by now).
            #expect(list.settlements.map(\.captures) == [1, 1] && list.settlements.map(\.stage) == [.paid, .payoutScheduled])
        }
    }

    /// A crash before the acquirer saw the batch, and one after it accepted it but before the answer was
    /// recorded: the next run completes the same batch, with the same report, and no capture twice.
    @Test(arguments: [SubmitFailure.beforeTheAcquirer, .answerLost])
    func aRunThatDiesAroundTheSubmissionIsCompletedByTheNextRun(failure: SubmitFailure) async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        let acquirer = FlakySubmitAcquirer(model: AcquirerModel(seed: 3, clock: clock.reading), failure: failure)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let (status, text) = try await run(client, #"{"business_date": "2026-06-17"}"#)
            #expect(status == .badGateway, "\(text)")
            let interrupted = try await view(client, "OrderLedgerStore-USD-2026-06-17")
            #expect(interrupted.stage == .closed && interrupted.captures == 1 && interrupted.reportSha256 == nil)
            let resumed = try await settle(client, "2026-06-17")
            #expect(resumed.batches.map(\.appendedEvents) == [3] && resumed.batches.map(\.stage) == [.payoutScheduled])
            #expect(resumed.batches.map(\.captures) == [1] && resumed.batches.map(\.gross) == ["59.00"])
            // The acquirer settled the capture once: one line, whichever run it answered.
            let (_, csv) = try await get(client, "/settlements/OrderLedgerStore-USD-2026-06-17/report.csv")
            #expect(try SettlementReportCSV().parse(csv).filter { $0.type == .settled }.count == 1)
            #expect(try await reconciliation(client, "OrderLedgerStore-USD-2026-06-17").breaks.isEmpty)
            let settlementEvents = try await services.store.readStream(SettlementBatch.streamID(batchID: "OrderLedgerStore-USD-2026-06-17"))
            #expect(
                settlementEvents.map(\.type) == [
                    "SettlementBatchOpened", "SettlementBatchClosed", "SettlementBatchSubmitted",
                    "SettlementBatchCleared", "SettlementPayoutScheduled",
                ]
            )
        }
    }

    func postReport(_ client: any TestClientProtocol, _ csv: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(
            uri: "/reconciliation/reports",
            method: .post,
            headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "text/csv"],
            body: ByteBuffer(string: csv)
        ) { ($0.status, String(buffer: $0.body)) }
    }

    @Test func aReportExportedAndReingestedReconcilesCleanAndAnEditedOneBreaks() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await get(client, "/settlements/\(batchID)/report.csv")
            var head = try await services.store.head().position
            var (status, text) = try await postReport(client, csv)
            #expect(status == .ok, "\(text)")
            #expect(try JSONDecoder().decode(ReconciliationReply.self, from: Data(text.utf8)).breaks.isEmpty)
            head += 1  // the upload's own reconciliation, beside the acquirer's
            #expect(try await services.store.head().position == head)
            (status, text) = try await postReport(client, csv)
            #expect(status == .ok, "\(text)")
            #expect(try await services.store.head().position == head)  // the same upload, the same result: nothing new

            // The same report with the capture's gross and net one cent higher and the payout to match.
            var lines = try SettlementReportCSV().parse(csv)
            let i = try #require(lines.firstIndex { $0.type == .settled })
            lines[i].grossCredit = Money(minorUnits: lines[i].grossCredit!.minorUnits + 1, currency: .usd)
            lines[i].netCredit = Money(minorUnits: lines[i].netCredit!.minorUnits + 1, currency: .usd)
            let p = lines.count - 1
            lines[p].netDebit = Money(minorUnits: lines[p].netDebit!.minorUnits + 1, currency: .usd)
            (status, text) = try await postReport(client, try SettlementReportCSV().write(lines))
            let edited = try JSONDecoder().decode(ReconciliationReply.self, from: Data(text.utf8))
            #expect(edited.breaks.map(\._class.rawValue) == ["amount_mismatch"])
            head += 2  // the result and the break found
            #expect(try await services.store.head().position == head)

            // Refused, nothing recorded: not CSV, no payout line, an unknown batch.
            (status, _) = try await postReport(client, "not,a\nreport")
            #expect(status == .unprocessableContent)
            (status, _) = try await postReport(client, try SettlementReportCSV().write(Array(lines.dropLast())))
            #expect(status == .unprocessableContent)
            // A payout line names its batch by id, else by Batch Number (storeImported): a report whose payout line
            // names neither a batch of this ledger is refused as naming none (422 invalid_report).
            lines[p].modificationMerchantReference = "OrderLedgerStore-USD-2030-01-01"
            lines[p].batchNumber = 999_999
            (status, text) = try await postReport(client, try SettlementReportCSV().write(lines))
            #expect(status == .unprocessableContent && text.contains("invalid_report"), "\(text)")
            #expect(try await services.store.head().position == head)
        }
    }

    /// Issue 17: every upload is its own reconciliation, kept beside the acquirer's; an edited upload
    /// leaves the acquirer's reconciliation as it was, re-uploading the real report leaves the edited
    /// upload's resolved break in view, and break amounts are decimal strings.
    @Test func anEditedUploadLeavesTheAcquirersReconciliationAndEveryResolutionInView() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            let acquirers = try await reconciliation(client, batchID)
            #expect(acquirers.report == "acquirer" && acquirers.breaks.isEmpty && acquirers.reconciliations.count == 1)
            let (_, csv) = try await get(client, "/settlements/\(batchID)/report.csv")

            // An edited report: the capture's gross and net one cent higher, the payout to match.
            var lines = try SettlementReportCSV().parse(csv)
            let i = try #require(lines.firstIndex { $0.type == .settled })
            let gross = try #require(lines[i].grossCredit)
            lines[i].grossCredit = Money(minorUnits: gross.minorUnits + 1, currency: .usd)
            lines[i].netCredit = Money(minorUnits: lines[i].netCredit!.minorUnits + 1, currency: .usd)
            let p = lines.count - 1
            lines[p].netDebit = Money(minorUnits: lines[p].netDebit!.minorUnits + 1, currency: .usd)
            let editedCSV = try SettlementReportCSV().write(lines)
            var (status, text) = try await postReport(client, editedCSV)
            #expect(status == .ok, "\(text)")
            let edited = try WireJSON.decode(ReconciliationReply.self, from: text)
            let uploadKey = "upload-" + SHA256.hash(data: Array(editedCSV.utf8)).map { String(format: "%02x", $0) }.joined()
            #expect(edited.report == uploadKey && edited.currency == "USD")
            let found = try #require(edited.breaks.first)
            #expect(edited.breaks.map(\._class.rawValue) == ["amount_mismatch"])
            // Amounts as decimal strings, like the rest of the API.
            #expect(found.expected == gross.decimalString && found.actual == Money(minorUnits: gross.minorUnits + 1, currency: .usd).decimalString)
            #expect(found.breakId == "\(batchID).\(uploadKey).amount_mismatch.\(found.reference)")

            // The batch's view still reflects the acquirer's reconciliation, unchanged, with the upload beside it.
            var view = try await reconciliation(client, batchID)
            #expect(view.report == "acquirer" && view.breaks.isEmpty && view.matched == acquirers.matched)
            #expect(view.reconciliations.map(\.report) == ["acquirer", uploadKey])
            #expect(view.reconciliations.first == acquirers.reconciliations.first)

            (status, text) = try await resolve(client, found.breakId, #"{"reason": "our edit, not the acquirer's"}"#)
            #expect(status == .ok, "\(text)")
            #expect(try WireJSON.decode(ReconciliationReply.self, from: text).report == uploadKey)

            // Re-uploading the real report: its own clean reconciliation; the resolution stays in view.
            (status, text) = try await postReport(client, csv)
            #expect(status == .ok, "\(text)")
            #expect(try WireJSON.decode(ReconciliationReply.self, from: text).breaks.isEmpty)
            view = try await reconciliation(client, batchID)
            #expect(view.report == "acquirer" && view.reconciliations.count == 3)
            #expect(view.reconciliations.first == acquirers.reconciliations.first)
            let editedView = try #require(view.reconciliations.first { $0.report == uploadKey })
            #expect(editedView.breaks.map(\.resolved) == [true] && editedView.openBreaks == 0)
            #expect(view.resolutions.map(\.breakId) == [found.breakId])
            #expect(view.resolutions.first?.resolutionReason == "our edit, not the acquirer's")
            let recorded = try await services.store.readStream(Reconciliation.streamID(batchID: batchID)).map { try SettlementEvent.decode($0) }
            let acquirerResults = recorded.filter { if case .reconciled(let e) = $0 { e.report == nil } else { false } }
            #expect(acquirerResults.count == 1)
        }
    }

    /// `Accept: application/x-ndjson`: the run's steps as they happen, then the summary; a refusal
    /// before the run started is the usual 4xx.
    @Test func aRunReportsItsProgressAsNewlineDelimitedJSON() async throws {
        let clock = SimulatedClock(Self.friday)
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, _ in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            let headers: HTTPFields = [
                .contentType: "application/json", .accept: "application/x-ndjson",
                .authorization: "Bearer \(TestApp.operatorKey)",
            ]
            let (early, earlyText) = try await client.execute(
                uri: "/settlements/run",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: #"{"business_date": "2026-06-19"}"#)
            ) { ($0.status, String(buffer: $0.body)) }
            #expect(early == .conflict && earlyText.contains("cut_off_not_reached"))
            clock.set(Self.instant("2026-06-19T22:00:01Z"))
            let (status, contentType, text) = try await client.execute(
                uri: "/settlements/run",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: #"{"business_date": "2026-06-19"}"#)
            ) { ($0.status, $0.headers[.contentType], String(buffer: $0.body)) }
            #expect(status == .ok && contentType == "application/x-ndjson")
            let lines = text.split(separator: "\n").map(String.init)
            let decoded = try lines.map { try JSONDecoder().decode(SettlementRunLine.self, from: Data($0.utf8)) }
            let steps = decoded.compactMap(\.progress).map { [$0.step, $0.detail ?? "", $0.items.map(String.init) ?? ""] }
            #expect(steps.first == ["recorded", "SettlementBatchOpened", ""])
            #expect(steps.contains(["selected", "", "1"]) && steps.contains(["submitting", "", "1"]))
            #expect(steps.contains(["recorded", "SettlementPayoutScheduled", ""]) && steps.contains { $0.first == "reconciled" })
            #expect(decoded.dropLast().allSatisfy { $0.summary == nil } && decoded.last?.summary?.batches.map(\.gross) == ["59.00"])
        }
    }

    @Test func badRunsAreRefusedWithTheirReasonAndAppendNothing() async throws {
        let clock = SimulatedClock(Self.friday)
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            let head = try await services.store.head().position
            let cases: [(String, String?, Int, String)] = [
                (#"{"business_date": "2026-06-19"}"#, TestApp.operatorKey, 409, "cut_off_not_reached"),
                (#"{"business_date": "2026-06-20"}"#, TestApp.operatorKey, 422, "not_a_business_day"),
                (#"{"business_date": "2026-02-30"}"#, TestApp.operatorKey, 422, "invalid_date"),
                (#"{"business_date": "19.06.2026"}"#, TestApp.operatorKey, 422, "invalid_date"),
                (#"{"business_date": 20260619}"#, TestApp.operatorKey, 422, "invalid_field"),
                (#"{"business_date": "2026-06-18", "force": true}"#, TestApp.operatorKey, 400, "unknown_field"),
                ("not json", TestApp.operatorKey, 400, "invalid_json"),
                (#"{"business_date": "2026-06-18"}"#, TestApp.auditorKey, 403, "forbidden"),
                (#"{"business_date": "2026-06-18"}"#, nil, 401, "unauthenticated"),
                (#"{"business_date": "2026-06-18", "close_now": true}"#, TestApp.operatorKey, 422, "invalid_field"),
                (#"{"close_now": "yes"}"#, TestApp.operatorKey, 422, "invalid_field"),
                (#"{"close_now": true}"#, TestApp.auditorKey, 403, "forbidden"),
            ]
            for (body, key, status, code) in cases {
                let (got, text) = try await run(client, body, key: key)
                #expect(Int(got.code) == status && text.contains("\"\(code)\""), "\(body): \(got) \(text)")
            }
            #expect(try await services.store.head().position == head)
            let (missing, _) = try await get(client, "/settlements/OrderLedgerStore-USD-2026-06-18")
            let (missingReport, _) = try await get(client, "/settlements/OrderLedgerStore-USD-2026-06-18/report.csv")
            let (badRange, badRangeText) = try await get(client, "/settlements?from=yesterday")
            // `to` before `from` is an empty range, not a malformed request (security review 4: positive data acceptance).
            let (backwards, backwardsText) = try await get(client, "/settlements?from=2026-06-19&to=2026-06-18")
            #expect(missing == .notFound && missingReport == .notFound)
            #expect(badRange == .badRequest && badRangeText.contains("\"field\":\"from\""))
            #expect(backwards == .ok && backwardsText.contains(#""settlements":[]"#), "\(backwardsText)")

            // No date: the last business day whose cut-off has passed by the daemon's clock (Friday before 22:00:
            // Thursday), as the CLI's `ledgerd settle` asks for it.
            let (status, text) = try await run(client, "{}", key: TestApp.operatorKey)
            #expect(status == .ok && text.contains(#""business_date":"2026-06-18""#), "\(text)")
        }
    }
}

enum SubmitFailure: String, Sendable, CustomTestStringConvertible {
    /// The batch never reached the acquirer.
    case beforeTheAcquirer
    /// The acquirer accepted the batch; its answer was lost on the way back.
    case answerLost
    var testDescription: String { rawValue }
}

/// The acquirer model, failing the first batch submission in the given way.
final class FlakySubmitAcquirer: AcquirerModelWrapper, Sendable {
    let model: AcquirerModel
    let failure: SubmitFailure
    private let failed = Mutex(false)

    init(model: AcquirerModel, failure: SubmitFailure) {
        self.model = model
        self.failure = failure
    }

    func submitBatch(
        _ h: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt {
        let first = failed.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return try await model.submitBatch(h, pages: pages) }
        if failure == .answerLost { _ = try await model.submitBatch(h, pages: pages) }
        throw AcquirerError(.unavailable, "simulated crash around the submission")
    }
}
