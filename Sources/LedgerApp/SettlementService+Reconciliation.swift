import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import PostgresNIO

/// Reconciliation of settled batches (issue 5, point 4): run after every settlement step that
/// finishes a batch, for that batch and the one before it in the same currency (whose expected
/// window the new report closes). A result is appended only when it differs from the last one
/// recorded, so re-runs append nothing.
extension SettlementService {
    /// Reconciles a batch with a stored report; nil when there is none yet or nothing changed.
    @discardableResult
    func reconcile(batchID: String, report: [SettlementReportLine]? = nil) async throws -> ReconciliationRecorded? {
        let stream = SettlementBatch.streamID(batchID: batchID)
        guard let state = try await load(stream), state.closed != nil else { return nil }
        let lines: [SettlementReportLine]
        if let report { lines = report } else {
            guard let stored = try await storedLines(batchID) else { return nil }
            lines = stored
        }
        var laterLines: [SettlementReportLine]?
        if let next = try await nextBatch(after: state) { laterLines = try await storedLines(next.opened.batchID) }
        let items = try await items(ofBatch: batchID)
        let ours = Set(items.map(\.modificationReference))
        let elsewhere = try await settledElsewhere(
            lines.map(\.modificationMerchantReference).filter { !$0.isEmpty && !ours.contains($0) }, excluding: batchID)
        let schedule = pricing.first { $0.currency == state.opened.currency }
        let result = Reconciliation.reconcile(
            batchID: batchID, currency: state.opened.currency, items: items, lines: lines, laterLines: laterLines,
            settledElsewhere: elsewhere, expectedFees: { line, item in Self.expectedFees(line, item, schedule) })
        let recordStream = Reconciliation.streamID(batchID: batchID)
        for _ in 0..<Self.maximumAttempts {
            let events = try await store.readStream(recordStream)
            var last: ReconciliationRecorded?
            var found: Set<String> = []
            for recorded in events {
                switch try SettlementEvent.decode(recorded) {
                case .reconciled(let e): last = e
                case .breakFound(let e): found.insert(e.found.breakID)
                default: break
                }
            }
            if last == result { return nil }
            let now = clock()
            let newBreaks = result.breaks.filter { !found.contains($0.breakID) }
                .map { SettlementEvent.breakFound(ReconciliationBreakFound(batchID: batchID, found: $0)) }
            do {
                _ = try await writer.append(AppendRequest(
                    stream: recordStream, expectedVersion: PlannedAppend.expectation(forVersion: Int64(events.count)),
                    events: try ([SettlementEvent.reconciled(result)] + newBreaks).map { try $0.newEvent(eventID: UUID(), effectiveAt: now) },
                    metadata: EventMetadata(correlationID: batchID, actor: Self.actor, command: "ReconcileBatch")))
                progress(batchID, "reconciled", items: result.matched, detail: "\(result.breaks.count) breaks")
                return result
            } catch let error as AppendError where error == .versionConflict {
                continue
            }
        }
        throw APIError.unavailable("the reconciliation of \(batchID) is too busy; run it again")
    }

    /// Reconciles `batchID` and the previous batch of its merchant and currency (if any).
    func reconcileAfterSettling(_ state: SettlementBatchState) async throws {
        if let previous = try await batches(currency: state.opened.currency).last(where: { $0.opened.businessDate < state.opened.businessDate }) {
            try await reconcile(batchID: previous.opened.batchID)
        }
        try await reconcile(batchID: state.opened.batchID)
    }

    /// The merchant's batches in `currency`, by business date.
    func batches(currency: Currency) async throws -> [SettlementBatchState] {
        let rows = try await client.query(
            "SELECT stream_id FROM ledger.events WHERE type = \(SettlementBatchOpened.eventType) ORDER BY position", logger: logger)
        var states: [SettlementBatchState] = []
        for try await stream in rows.decode(String.self) {
            guard let id = StreamID(stream), let state = try await load(id), state.opened.currency == currency,
                  state.opened.merchantAccount == merchantAccount else { continue }
            states.append(state)
        }
        return states.sorted { $0.opened.businessDate < $1.opened.businessDate }
    }

    /// The next batch of the same currency with a stored report: it closes this batch's window.
    func nextBatch(after state: SettlementBatchState) async throws -> SettlementBatchState? {
        try await batches(currency: state.opened.currency).first { $0.opened.businessDate > state.opened.businessDate }
    }

    /// The contract's fees on a line, priced like the acquirer prices it (network and funding from
    /// the line's payment method variant). Nil when the currency has no schedule.
    static func expectedFees(_ line: SettlementReportLine, _ item: SettlementBatchItem, _ schedule: PricingSchedule?) -> ExpectedFees? {
        guard let schedule else { return nil }
        let networks: [(String, CardNetwork)] = [("visa", .visa), ("mc", .mastercard), ("amex", .amex), ("discover", .discover)]
        guard let network = networks.first(where: { $0.0 == line.paymentMethod })?.1 else { return nil }
        let variant = line.paymentMethodVariant
        let funding = FundingType.allCases.first { variant.hasSuffix($0.rawValue) } ?? .credit
        guard let fees = try? schedule.fees(on: item.amount, network: network, funding: funding) else { return nil }
        let zero = item.kind == .refund && !schedule.feesOnRefunds
        func units(_ money: Money?) -> Int64? { money.map { zero ? 0 : $0.minorUnits } }
        return ExpectedFees(interchange: units(fees.interchange), schemeFees: units(fees.schemeFee),
                            markup: units(fees.markup), commission: units(fees.commission))
    }

    /// `ledgerd reconcile --report FILE`: reconciles a settlement report CSV (e.g. one the acquirer
    /// delivered) against the batch its MerchantPayout line names; records the result if it changed.
    public func reconcileReport(csv: String) async throws -> String {
        let lines: [SettlementReportLine]
        do { lines = try SettlementReportCSV().parse(csv) } catch {
            throw APIError(status: .unprocessableContent, code: "invalid_report", message: "the report does not parse: \(error)")
        }
        guard let batchID = lines.first(where: { $0.type == .merchantPayout })?.modificationMerchantReference, !batchID.isEmpty else {
            throw APIError(status: .unprocessableContent, code: "invalid_report", message: "the report has no MerchantPayout line naming its batch")
        }
        guard StreamID("settlement-" + batchID) != nil, let state = try await load(SettlementBatch.streamID(batchID: batchID)), state.closed != nil else {
            throw APIError.notFound("no closed settlement batch \(batchID)")
        }
        try await lock.withLock("settlement") { try await reconcile(batchID: batchID, report: lines) }
        return try await reconciliationJSON(id: batchID) ?? "{}"
    }

    // MARK: Reads and resolutions

    struct ReconciliationView: Encodable {
        struct Break: Encodable {
            let break_id, `class`, reference, detail: String
            let expected, actual: String?
            let resolved: Bool
            let resolution_reason, resolved_by: String?
        }
        let batch_id: String
        let window_closed: Bool
        let report_lines, ledger_items, matched: Int
        let breaks: [Break]
        let open_breaks: Int
    }

    public func reconciliationJSON(id: String) async throws -> String? {
        guard let stream = StreamID("reconciliation-" + id) else { return nil }
        let events = try await store.readStream(stream).map { try SettlementEvent.decode($0) }
        var latest: ReconciliationRecorded?
        var resolutions: [String: ReconciliationBreakResolved] = [:]
        for event in events {
            if case .reconciled(let e) = event { latest = e }
            if case .breakResolved(let e) = event { resolutions[e.breakID] = e }
        }
        guard let latest else { return nil }
        let breaks = latest.breaks.map { b in
            ReconciliationView.Break(
                break_id: b.breakID, class: b.breakClass.rawValue, reference: b.reference, detail: b.detail, expected: b.expected,
                actual: b.actual, resolved: resolutions[b.breakID] != nil, resolution_reason: resolutions[b.breakID]?.reason,
                resolved_by: resolutions[b.breakID]?.resolvedBy)
        }
        return try CatalogReadModel.json(ReconciliationView(
            batch_id: latest.batchID, window_closed: latest.windowClosed, report_lines: latest.reportLines,
            ledger_items: latest.ledgerItems, matched: latest.matched, breaks: breaks, open_breaks: breaks.filter { !$0.resolved }.count))
    }

    public func resolveBreak(id: String, reason: String, actor: String) async throws -> String {
        let batchID = String(id.prefix { $0 != "." })
        guard !batchID.isEmpty, let stream = StreamID("reconciliation-" + batchID) else { throw APIError.notFound("no break \(id)") }
        for _ in 0..<Self.maximumAttempts {
            let recorded = try await store.readStream(stream)
            let events = try recorded.map { try SettlementEvent.decode($0) }
            var latest: ReconciliationRecorded?
            var resolved = false
            for event in events {
                if case .reconciled(let e) = event { latest = e }
                if case .breakResolved(let e) = event, e.breakID == id { resolved = true }
            }
            guard let latest, latest.breaks.contains(where: { $0.breakID == id }) else { throw APIError.notFound("no open break \(id)") }
            if resolved { throw APIError.conflict("already_resolved", "break \(id) is already resolved") }
            let event = SettlementEvent.breakResolved(ReconciliationBreakResolved(batchID: batchID, breakID: id, reason: reason, resolvedBy: actor))
            do {
                _ = try await writer.append(AppendRequest(
                    stream: stream, expectedVersion: .exact(Int64(recorded.count)),
                    events: [try event.newEvent(eventID: UUID(), effectiveAt: clock())],
                    metadata: EventMetadata(correlationID: batchID, actor: actor, command: "ResolveBreak")))
                return try await reconciliationJSON(id: batchID) ?? "{}"
            } catch let error as AppendError where error == .versionConflict {
                continue
            }
        }
        throw APIError.unavailable("the reconciliation of \(batchID) is too busy; retry")
    }
}
