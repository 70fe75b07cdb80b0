import Crypto
import Foundation
import LedgerAcquirerAPI
import LedgerCore
import LedgerEngine
import LedgerPostgres

/// Reconciliation of settled batches: run after every settlement step that
/// finishes a batch, for that batch and the one before it in the same currency (whose expected
/// window the new report closes). A result is appended only when it differs from the last one
/// recorded, so re-runs append nothing.
extension SettlementService {
    /// Reconciles a batch with a stored report — its own (`reportKey` nil) or one an operator
    /// uploaded (stored under its key) — streaming it: the report part by part, each page's ledger
    /// items looked up by reference, duplicates and absent items found through the report's line
    /// index (sql/0009). Memory holds a page and the breaks. Nil when there is no report yet or
    /// the result is the one recorded last. `batches`: a settlement run's (nil: read them).
    ///
    /// A stored report that does not read back is data, not a failure of the run: the acquirer's own report
    /// (`reportKey` nil) is recorded as a reconciliation with one open break naming the reason
    /// (``unreadableReport(batchID:ledgerItems:_:)``), so that the run goes on and later runs still settle; an
    /// upload's is a 422 (``ServiceError/invalidInput``), nothing recorded.
    @discardableResult
    func reconcile(batchID: String, reportKey: String? = nil, batches: SettlementBatches? = nil) async throws -> ReconciliationRecorded? {
        let stream = SettlementBatch.streamID(batchID: batchID)
        guard let state = try await load(stream), let closed = state.closed else { return nil }
        let key = reportKey ?? batchID
        guard let stored = try await storedReport(key) else { return nil }
        let result: ReconciliationRecorded
        var carried: [String: Set<String>] = [:]
        do {
            (result, carried) = try await tally(batchID: batchID, state: state, closed: closed, reportKey: reportKey, batches: batches)
        } catch let unreadable as StoredReportUnreadable {
            guard reportKey == nil else { throw unreadable.refusal }
            logger.error("a settlement report does not read back", metadata: ["batch": "\(batchID)", "reason": "\(unreadable.reason)"])
            result = Self.unreadableReport(batchID: batchID, ledgerItems: closed.itemCount, unreadable)
        }
        let recorded = try await record(result, batchID: batchID, reportKey: reportKey)
        try await resolveExplained(carried, result: result, reconciling: batchID, reportKey: key, digest: stored.digest)
        return recorded
    }

    /// Resolves the breaks a report explains (issue 53, point 3: the acquirer's leg of the rolling re-match), as the
    /// operator's resolution is (``ReconciliationBreakResolved``) but by the reconciliation, naming this report (its key
    /// and SHA-256): an item of another batch that this report settles (a line carried over from that batch) is what
    /// that batch's `timing` or `missing_at_acquirer` break for the item was waiting for; and a payout this report has
    /// for its own batch, adding up (no `payout_mismatch` in `result`), is what another report's "no payout line" break
    /// of the batch was missing. A break already resolved is left as it is: re-running a reconciliation appends nothing.
    func resolveExplained(
        _ carried: [String: Set<String>],
        result: ReconciliationRecorded,
        reconciling batchID: String,
        reportKey: String,
        digest: [UInt8]
    ) async throws {
        let sha = Self.hex(digest)
        let source = reportKey == batchID ? "batch \(batchID)'s report" : "the report \(reportKey), reconciled against \(batchID)"
        for (other, references) in carried.sorted(by: { $0.key < $1.key }) {
            try await resolve(in: other, reportKey: reportKey, sha: sha, reason: "settled in \(source) (SHA-256 \(sha)): carried over from \(other)")
            {
                ($0.breakClass == .timing || $0.breakClass == .missingAtAcquirer) && references.contains($0.reference)
            }
        }
        // A file uploaded later (not the acquirer's own report, re-reconciled by every run) with the batch's payout.
        guard reportKey != batchID, result.reportLines > 0, !result.breaks.contains(where: { $0.breakClass == .payoutMismatch }) else { return }
        let own = "\(batchID).\(reportKey)."  // this upload's own breaks
        try await resolve(in: batchID, reportKey: reportKey, sha: sha, reason: "its payout is in \(source) (SHA-256 \(sha)), adding up") {
            $0.breakClass == .payoutMismatch && $0.detail.contains("no payout line") && !$0.breakID.hasPrefix(own)
        }
    }

    /// Appends a resolution naming `reportKey` for each open break of `batchID`'s reconciliation that `explained` picks.
    private func resolve(
        in batchID: String,
        reportKey: String,
        sha: String,
        reason: String,
        explained: @escaping @Sendable (ReconciliationBreak) -> Bool
    ) async throws {
        guard let stream = StreamID("reconciliation-" + batchID) else { return }
        let actor = Self.reconciliationActor
        let command = StreamCommand<Int>(
            stream: stream,
            now: clock(),
            metadata: EventMetadata(correlationID: batchID, actor: Self.actor, command: "ResolveBreak")
        ) { recorded in
            var waiting: [ReconciliationBreak] = []
            var resolved: Set<String> = []
            for event in recorded {
                switch try SettlementEvent.decode(event) {
                case .breakFound(let e) where explained(e.found): waiting.append(e.found)
                case .breakResolved(let e): resolved.insert(e.breakID)
                default: break
                }
            }
            let due = waiting.filter { !resolved.contains($0.breakID) }
            let events: [any LedgerEventPayload] = due.map { found in
                ReconciliationBreakResolved(
                    batchID: batchID,
                    breakID: found.breakID,
                    reason: reason,
                    resolvedBy: actor,
                    report: reportKey,
                    reportSHA256: sha
                )
            }
            return .append(events, due.count)
        }
        let resolved = try await runContended(command, batchID: batchID, hint: "run it again")
        if resolved.result != nil { progress(batchID, "resolved", items: resolved.signal, detail: "explained by \(reportKey)") }
    }

    /// Runs a command on `batchID`'s reconciliation, as busy as it was when others kept moving it (503).
    private func runContended<Signal: Sendable>(_ command: StreamCommand<Signal>, batchID: String, hint: String) async throws -> StreamOutcome<Signal>
    {
        do {
            return try await runner.run(command)
        } catch is AggregateStore.Contended {
            throw ServiceError.unavailable("the reconciliation of \(batchID) is too busy; \(hint)")
        }
    }

    /// Who resolves a break a later report explains (``resolveExplained(_:result:reconciling:reportKey:digest:)``).
    static let reconciliationActor = "reconciliation"

    /// The reconciliation of a batch whose report does not read back: no line read, nothing matched, and one open
    /// break (an unmapped record: the report's own) whose detail is the reader's reason, for an operator to see.
    static func unreadableReport(batchID: String, ledgerItems: Int, _ unreadable: StoredReportUnreadable) -> ReconciliationRecorded {
        ReconciliationRecorded(
            batchID: batchID,
            windowClosed: false,
            reportLines: 0,
            ledgerItems: ledgerItems,
            matched: 0,
            breaks: [
                ReconciliationBreak(
                    batchID: batchID,
                    breakClass: .unmappedRecord,
                    reference: "report",
                    expected: nil,
                    actual: nil,
                    detail: "the acquirer's report cannot be read: \(unreadable.reason)"
                )
            ],
            report: nil
        )
    }

    /// The batch's reconciliation with the report stored under `reportKey` (nil: its own), as the tally finds it.
    private func tally(
        batchID: String,
        state: SettlementBatchState,
        closed: SettlementBatchClosed,
        reportKey: String?,
        batches: SettlementBatches?
    ) async throws -> (ReconciliationRecorded, carried: [String: Set<String>]) {
        let key = reportKey ?? batchID
        try await ensureLineIndex(key)
        var laterKey: String?
        if let next = try await nextBatch(after: state, in: batches), try await storedReport(next.opened.batchID) != nil {
            try await ensureLineIndex(next.opened.batchID)
            laterKey = next.opened.batchID
        }
        let schedule = pricing.first { $0.currency == state.opened.currency }
        var tally = ReconciliationTally(batchID: batchID, currency: state.opened.currency, report: reportKey)
        let disputes = try await disputeMoney()
        var lineNumber = 0
        let repeated = try await repeatedReferences(in: key)
        let account = state.opened.merchantAccount
        let ours = merchantAccounts
        var carried: [String: Set<String>] = [:]
        func classify(_ lines: [SettlementReportLine], _ found: [String: (item: SettlementBatchItem, batchID: String?)]) {
            for line in lines {
                lineNumber += 1
                // A line of another of our merchant accounts is routed to that account's batch (issue 52): not this one's.
                if !line.merchantAccount.isEmpty, line.merchantAccount != account, ours.contains(line.merchantAccount) { continue }
                let match = found[line.modificationMerchantReference] ?? found["psp:" + line.modificationReference]
                let item = match.flatMap { $0.batchID == batchID ? $0.item : nil }
                // A later line naming the same item, by either reference, is a duplicate.
                let duplicate =
                    item.map { item in
                        lineNumber
                            > min(
                                repeated.ours[item.modificationReference] ?? lineNumber,
                                repeated.theirs[item.pspModificationReference] ?? lineNumber
                            )
                    } ?? false
                let elsewhere = match.map { $0.batchID != nil && $0.batchID != batchID } ?? false
                // A line carried over from another batch: that batch's break for the item is what it explains.
                if elsewhere, let match, let other = match.batchID, [.capture, .refund].contains(SettlementRecordKind(adyenType: line.type)) {
                    carried[other, default: []].insert(match.item.modificationReference)
                }
                tally.add(
                    line,
                    item: item,
                    duplicate: duplicate,
                    settledElsewhere: elsewhere,
                    expectedFees: item.flatMap { Self.expectedFees(line, $0, schedule) },
                    dispute: disputes[line.pspReference]
                )
            }
        }
        // Page k's items are looked up (the database) while page k + 1 is parsed (here).
        var pending: (lines: [SettlementReportLine], lookup: Task<[String: (item: SettlementBatchItem, batchID: String?)], any Error>)?
        defer { pending?.lookup.cancel() }
        try await forEachStoredPage(key) { lines in
            let service = self
            let lookup = Task { try await service.ledgerItems(named: lines) }
            if let previous = pending { classify(previous.lines, try await previous.lookup.value) }
            pending = (lines, lookup)
        }
        if let last = pending {
            classify(last.lines, try await last.lookup.value)
            pending = nil
        }
        try await forEachAbsentItem(batchID: batchID, reportKey: key, laterKey: laterKey) { item, inLater in
            tally.absent(item, inLaterReport: inLater)
        }
        return (tally.result(windowClosed: laterKey != nil, ledgerItems: closed.itemCount), carried)
    }

    /// Appends `result` (and its new breaks) unless it is the one recorded last for the report; nil when it is.
    private func record(_ result: ReconciliationRecorded, batchID: String, reportKey: String?) async throws -> ReconciliationRecorded? {
        let command = StreamCommand<ReconciliationRecorded?>(
            stream: Reconciliation.streamID(batchID: batchID),
            now: clock(),
            metadata: EventMetadata(correlationID: batchID, actor: Self.actor, command: "ReconcileBatch")
        ) { recorded in
            var last: ReconciliationRecorded?
            var found: Set<String> = []
            for event in recorded {
                switch try SettlementEvent.decode(event) {
                case .reconciled(let e) where e.report == reportKey: last = e
                case .breakFound(let e): found.insert(e.found.breakID)
                default: break
                }
            }
            if last == result { return .nothing(nil) }
            let newBreaks: [any LedgerEventPayload] = result.breaks.filter { !found.contains($0.breakID) }
                .map { ReconciliationBreakFound(batchID: batchID, found: $0) }
            FaultPoint.settlementReconciling.crashIfConfigured(faultCrashAt, logger: logger)  // a crash test's: before the append
            return .append([result] + newBreaks, result)
        }
        let recorded = try await runContended(command, batchID: batchID, hint: "run it again")
        if recorded.result != nil { progress(batchID, "reconciled", items: result.matched, detail: "\(result.breaks.count) breaks") }
        return recorded.signal
    }

    /// The ledger items the lines name, by our reference (key: the reference) and, for lines whose
    /// reference names none, by the acquirer's (key: `psp:` + its reference), with the batch that took each.
    func ledgerItems(named lines: [SettlementReportLine]) async throws -> [String: (item: SettlementBatchItem, batchID: String?)] {
        var found: [String: (item: SettlementBatchItem, batchID: String?)] = [:]
        let ours = lines.map(\.modificationMerchantReference).filter { !$0.isEmpty }
        try await lookups.forEachItem(withOurReferences: ours) { row in
            let item = try Self.item((row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7))
            found[item.modificationReference] = (item, row.8)
        }
        let theirs = lines.filter { found[$0.modificationMerchantReference] == nil && !$0.modificationReference.isEmpty }.map(\.modificationReference)
        guard !theirs.isEmpty else { return found }
        try await lookups.forEachItem(withAcquirerReferences: theirs) { row in
            let item = try Self.item((row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7))
            found["psp:" + item.pspModificationReference] = (item, row.8)
        }
        return found
    }

    /// The references more than one line of the report uses (ours, and the acquirer's), each with
    /// the first line (1-based) that uses it: one pass over the report's line index, whose answer is
    /// as large as the report's repetitions, not the report.
    func repeatedReferences(in reportKey: String) async throws -> (ours: [String: Int], theirs: [String: Int]) {
        try await lookups.repeatedReferences(in: reportKey)
    }

    /// The batch's items no line of the report names, in ledger order, and whether the next batch's
    /// report (when known) names them.
    func forEachAbsentItem(
        batchID: String,
        reportKey: String,
        laterKey: String?,
        _ body: (SettlementBatchItem, Bool?) throws -> Void
    ) async throws {
        try await lookups.forEachAbsentItem(batchID: batchID, reportKey: reportKey, laterKey: laterKey) { row, inLater in
            try body(try Self.item(row), laterKey == nil ? nil : inLater)
        }
    }

    /// Builds the line index of a report stored before it existed (sql/0009), from its parts.
    func ensureLineIndex(_ reportKey: String) async throws {
        guard try await reports.lineIndexMissing(reportKey) else { return }
        var next = 1
        try await forEachStoredPage(reportKey) { lines in
            let first = next
            try await reports.indexLines(lines, reportKey: reportKey, firstLine: first)
            next += lines.count
        }
    }

    /// Reconciles `batchID` and the previous batch of its merchant and currency (if any), both with
    /// the run's `batches`.
    func reconcileAfterSettling(_ state: SettlementBatchState, batches: SettlementBatches) async throws {
        let same = batches.of(merchantAccount: state.opened.merchantAccount, currency: state.opened.currency)
        if let previous = same.last(where: { $0.opened.businessDate < state.opened.businessDate }) {
            try await reconcile(batchID: previous.opened.batchID, batches: batches)
        }
        try await reconcile(batchID: state.opened.batchID, batches: batches)
    }

    /// The next batch of the same currency with a stored report: it closes this batch's window.
    /// From `batches` when given, else from the ledger.
    func nextBatch(after state: SettlementBatchState, in batches: SettlementBatches?) async throws -> SettlementBatchState? {
        let all: SettlementBatches
        if let batches { all = batches } else { all = SettlementBatches(try await allBatches()) }
        return all.of(merchantAccount: state.opened.merchantAccount, currency: state.opened.currency).first {
            $0.opened.businessDate > state.opened.businessDate
        }
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
        return ExpectedFees(
            interchange: units(fees.interchange),
            schemeFees: units(fees.schemeFee),
            markup: units(fees.markup),
            commission: units(fees.commission)
        )
    }

    /// The money the ledger's disputes moved, by the disputed payment's acquirer reference: what
    /// chargeback and reversal lines are matched against.
    func disputeMoney() async throws -> [String: DisputeMoney] {
        let reader = DisputeReader(client: client, logger: logger)
        return DisputeMoney.of(try await reader.allDisputeEvents().map { try DisputeEvent.decode($0) })
    }

    /// `ledgerd reconcile --report FILE [--format F] [--batch ID]`: reconciles a settlement report
    /// against the batch it names and records the result if it changed. The format is the header's
    /// (``SettlementReportFormat/detect(header:ledgerColumns:)``) unless named. Every format — the model's own
    /// layout too — is read line by line from the spool file and stored normalized, in parts, under the key
    /// `upload-<SHA-256 of the bytes>` (``reconcileImported(_:format:batchID:)``): memory holds a chunk and a page,
    /// whatever the report's size. `upload` arrived spooled to a file (``ReportUpload``).
    public func reconcileReport(
        _ upload: ReportUpload,
        format: SettlementReportFormat? = nil,
        batchID named: String? = nil
    ) async throws
        -> ReconciliationView
    {
        var header: [String] = []
        var stream = CSVRecordStream()
        do {
            try stream.feed(try upload.firstLine()) { _ in }
            try stream.finish { header = $0 }
        } catch {
            throw ServiceError(.invalidInput, code: "invalid_report", message: "the report's header does not parse: \(error)")
        }
        guard let chosen = format ?? SettlementReportFormat.detect(header: header, ledgerColumns: SettlementReportCSV.columns) else {
            let refusal = SettlementReportFormat.closest(header: header).map { ReportImportError.missingColumns($0.0, $0.missing) }
            throw ServiceError(.invalidInput, code: "invalid_report", message: (refusal ?? .unknownFormat(header)).description)
        }
        // Every format, the model's own layout included, is read a chunk at a time and stored in parts (review 3, N4:
        // the model's layout was read whole into memory — a 250 MB upload took the daemon to 1.2 GB).
        do {
            return try await reconcileImported(upload, format: chosen, batchID: named)
        } catch let unreadable as StoredReportUnreadable {
            // The same upload stored earlier by a writer that did not read back: refused, never a 500.
            throw unreadable.refusal
        }
    }

    /// Imports an acquirer's report (Adyen SDR, Adyen PAR, Stripe itemized payout reconciliation, Checkout.com financial actions):
    /// read from its spool file in 64 KiB chunks, each record normalized (``SettlementReportImporter``) and stored as the
    /// model's layout in parts of ``importPageSize`` lines with their line index, in one transaction;
    /// memory holds one chunk and one page. The batch is the one the report names — the SDR's
    /// MerchantPayout line (its batch id, else its Batch Number), Stripe's `automatic_payout_id` (the
    /// batch's payout reference), the PAR's optional Batch Number — or `batchID` when given. A format
    /// without a payout line of its own gets the batch's scheduled payout as its last line, so the
    /// payout check compares the report's nets with what the acquirer announced.
    func reconcileImported(_ upload: ReportUpload, format: SettlementReportFormat, batchID named: String?) async throws -> ReconciliationView {
        let digest = upload.digest
        let key = "upload-" + Self.hex(digest)
        let batchID: String
        let routed: [String]
        if try await storedReport(key) != nil {
            let named = try await storedBatches(key: key, named: named)
            (batchID, routed) = (named.first, named.routed)
        } else {
            (batchID, routed) = try await storeImported(upload, format: format, key: key, digest: digest, named: named)
        }
        guard StreamID("settlement-" + batchID) != nil, let state = try await load(SettlementBatch.streamID(batchID: batchID)), state.closed != nil
        else {
            throw ServiceError.notFound("no closed settlement batch \(batchID)")
        }
        // The lines of another of our merchant accounts go to that account's batch, named by its payout line (issue 52).
        var others: [String] = []
        for other in routed where other != batchID {
            guard StreamID("settlement-" + other) != nil, let routedTo = try await load(SettlementBatch.streamID(batchID: other)) else { continue }
            if routedTo.closed != nil && routedTo.opened.merchantAccount != state.opened.merchantAccount { others.append(other) }
        }
        _ = try await lock.withLock("settlement") {
            try await reconcile(batchID: batchID, reportKey: key)
            for other in others { try await reconcile(batchID: other, reportKey: key) }
        }
        return try await recordedReconciliation(batchID, reflecting: key)
    }

    /// The batches a stored imported report names: `named`, else its first payout line's, and every other payout
    /// line's (the batches of our other merchant accounts its lines are routed to).
    private func storedBatches(key: String, named: String?) async throws -> (first: String, routed: [String]) {
        var found: [String] = []
        try await forEachStoredPage(key) { lines in
            for payout in lines where payout.type == .merchantPayout && !payout.modificationMerchantReference.isEmpty {
                if !found.contains(payout.modificationMerchantReference) { found.append(payout.modificationMerchantReference) }
            }
        }
        guard let id = named ?? found.first, !id.isEmpty else {
            throw ServiceError(.invalidInput, code: "invalid_report", message: "the report names no batch; name it with batch=")
        }
        return (id, found)
    }

    static let importPageSize = 10_000

    /// Stores an imported report under `key`; returns the batch it names, and the batches of the other payout lines
    /// (another merchant account's: their lines are routed there).
    private func storeImported(
        _ upload: ReportUpload,
        format: SettlementReportFormat,
        key: String,
        digest: [UInt8],
        named: String?
    ) async throws -> (first: String, routed: [String]) {
        let batches = try await allBatches()
        func batch(number: Int) -> SettlementBatchState? { batches.first { $0.submitted?.batchNumber == number } }
        func batch(id: String) -> SettlementBatchState? { batches.first { $0.opened.batchID == id } }
        do {
            return try await reports.storeReport { tx in
                let writer = SettlementReportCSV()
                var importer: SettlementReportImporter?
                var stream = CSVRecordStream()
                var page: [SettlementReportLine] = []
                page.reserveCapacity(Self.importPageSize)
                var part = 0
                var stored = 0
                var row = 0
                var payoutBatch: SettlementBatchState?
                var payoutLines = 0
                var routed: [String] = []
                func flush() async throws {
                    guard !page.isEmpty || part == 0 else { return }
                    let text = (part == 0 ? SettlementReportCSV.header : "") + (try writer.rows(page, firstRow: stored + 2))
                    try await tx.insertPart(reportKey: key, part: part, csv: text)
                    try await tx.indexLines(page, reportKey: key, firstLine: stored + 1)
                    stored += page.count
                    part += 1
                    page.removeAll(keepingCapacity: true)
                }
                var records: [[String]] = []
                func take(_ records: [[String]]) async throws {
                    for record in records {
                        row += 1
                        guard var current = importer else {
                            if SettlementReportImporter.isBlank(record) { continue }  // blank lines before the header
                            var reading = try SettlementReportImporter(header: record, format: format, ledgerColumns: SettlementReportCSV.columns)
                            reading.strict = settings.strictRecordTypes
                            // Stripe's connected_account_id names a connected account, not a merchant account of ours
                            // (Checkout.com's lines name none).
                            if reading.format != .stripeItemizedPayout { reading.merchantAccounts = Set(settings.merchantAccounts) }
                            importer = reading
                            continue
                        }
                        let lines = try current.lines(record, row: row)
                        importer = current
                        for line in lines { try await add(line) }
                    }
                }
                func add(_ read: SettlementReportLine) async throws {
                    var line = read
                    if line.type == .merchantPayout { payoutLines += 1 }
                    if line.type == .merchantPayout, payoutBatch == nil {
                        payoutBatch = batch(id: line.modificationMerchantReference) ?? batch(number: line.batchNumber)
                        // The stored line names the batch, as the model's own payout line does.
                        if let found = payoutBatch { line.modificationMerchantReference = named ?? found.opened.batchID }
                    } else if line.type == .merchantPayout, let first = payoutBatch,
                        let found = batch(id: line.modificationMerchantReference) ?? batch(number: line.batchNumber)
                    {
                        // Another payout line: a second currency's of the same batch, or another merchant account's
                        // batch's, whose lines are routed there.
                        if found.opened.batchID == first.opened.batchID {
                            line.modificationMerchantReference = named ?? found.opened.batchID
                        } else if found.opened.merchantAccount != first.opened.merchantAccount {
                            line.modificationMerchantReference = found.opened.batchID
                            if !routed.contains(found.opened.batchID) { routed.append(found.opened.batchID) }
                        }
                    }
                    page.append(line)
                    if page.count == Self.importPageSize { try await flush() }
                }
                try await upload.forEachChunk { chunk in
                    try stream.feed(chunk) { records.append($0) }
                    try await take(records)
                    records.removeAll(keepingCapacity: true)
                }
                try stream.finish { records.append($0) }
                try await take(records)
                // Lines a format holds until its last row is read (Checkout.com's last action).
                guard var importer else { throw ReportImportError.missingHeader }
                for line in importer.finish() { try await add(line) }
                var resolved: SettlementBatchState?
                if let named {
                    resolved = batch(id: named)
                } else if let payoutBatch {
                    resolved = payoutBatch
                } else if let payoutID = importer.payoutID {
                    resolved = batches.first { $0.payout?.payoutReference == payoutID }
                } else if let number = importer.batchNumber {
                    resolved = batch(number: number)
                }
                guard let resolved else {
                    throw ServiceError(
                        .invalidInput,
                        code: "invalid_report",
                        message: "the report names no settlement batch of this ledger (payout line, payout id or batch number); name it with batch="
                    )
                }
                // A report with payout rows of its own (a Stripe export may carry its `payout` row) is checked against them.
                if !format.hasPayoutLine, payoutLines == 0, let payout = resolved.payout {
                    page.append(Self.payoutLine(payout, batchNumber: resolved.submitted?.batchNumber ?? 0))
                }
                try await flush()
                try await tx.insertSummary(reportKey: key, sha256: digest, lineCount: stored, parts: part)
                return (resolved.opened.batchID, routed)
            }
        } catch is SettlementReportStore.StoredConcurrently {
            return try await storedBatches(key: key, named: named)
        } catch {
            switch DatabaseFailure.thrownInside(error) {
            case let refused as ServiceError: throw refused
            case let unreadable as ReportImportError:
                throw ServiceError(.invalidInput, code: "invalid_report", message: unreadable.description)
            case let unwritable as SettlementReportCSVError:
                throw ServiceError(.invalidInput, code: "invalid_report", message: "the report's lines cannot be stored: \(unwritable)")
            case let malformed as CSVReaderError:
                throw ServiceError(.invalidInput, code: "invalid_report", message: malformed.description)
            default: throw error
            }
        }
    }

    /// The MerchantPayout line of a format without one: the batch's scheduled payout.
    static func payoutLine(_ payout: SettlementPayoutScheduled, batchNumber: Int) -> SettlementReportLine {
        let amount = payout.amount
        let magnitude = Money(minorUnits: abs(amount.minorUnits), currency: amount.currency)
        return SettlementReportLine(
            companyAccount: "",
            merchantAccount: "",
            pspReference: "",
            merchantReference: "",
            paymentMethod: "",
            creationDate: nil,
            timeZone: "",
            type: .merchantPayout,
            modificationReference: payout.payoutReference,
            grossCurrency: nil,
            grossDebit: nil,
            grossCredit: nil,
            exchangeRate: nil,
            netCurrency: amount.currency,
            netDebit: amount.isNegative ? nil : magnitude,
            netCredit: amount.isNegative ? magnitude : nil,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: "",
            modificationMerchantReference: payout.batchID,
            batchNumber: batchNumber
        )
    }

    // MARK: Reads and resolutions

    /// The batch's reconciliations — the acquirer's report's and each upload's, each its latest result
    /// with its breaks and their resolutions — and every resolution ever recorded; nil when none is
    /// recorded. The view reflects the acquirer's reconciliation when there is one, else the latest upload's.
    public func reconciliation(id: String) async throws -> ReconciliationView? {
        try await reconciliationView(id, reflecting: nil)
    }

    /// The view reflecting the reconciliation of report `reflecting` (nil: the acquirer's, else the latest upload's).
    func reconciliationView(_ id: String, reflecting: String?) async throws -> ReconciliationView? {
        guard let stream = StreamID("reconciliation-" + id) else { return nil }
        let events = try await store.readStream(stream)
        guard !events.isEmpty, let batch = try await load(SettlementBatch.streamID(batchID: id)) else { return nil }
        return ReconciliationView(
            currency: batch.opened.currency,
            merchantAccount: batch.opened.merchantAccount,
            events: try events.map { (try SettlementEvent.decode($0), $0.recordedAt) },
            reflecting: reflecting
        )
    }

    /// The reconciliation just recorded for `batchID` (one always is once a report was reconciled).
    func recordedReconciliation(_ batchID: String, reflecting: String? = nil) async throws -> ReconciliationView {
        guard let view = try await reconciliationView(batchID, reflecting: reflecting) else {
            throw ServiceError(.internalFailure, code: "reconciliation_missing", message: "no reconciliation of \(batchID) is recorded")
        }
        return view
    }

    /// Records an operator's resolution of a break any reconciliation of the batch ever found;
    /// returns the reconciliation of the report that found it.
    public func resolveBreak(id: String, reason: String, actor: String) async throws -> ReconciliationView {
        let batchID = String(id.prefix { $0 != "." })
        guard !batchID.isEmpty, let stream = StreamID("reconciliation-" + batchID) else { throw ServiceError.notFound("no break \(id)") }
        let command = StreamCommand<String?>(
            stream: stream,
            now: clock(),
            metadata: EventMetadata(correlationID: batchID, actor: actor, command: "ResolveBreak")
        ) { recorded in
            var found: ReconciliationBreakFound?
            var resolved = false
            var report: String?
            for event in try recorded.map({ try SettlementEvent.decode($0) }) {
                if case .reconciled(let e) = event, e.breaks.contains(where: { $0.breakID == id }) { report = e.report }
                if case .breakFound(let e) = event, e.found.breakID == id { found = e }
                if case .breakResolved(let e) = event, e.breakID == id { resolved = true }
            }
            guard found != nil else { throw ServiceError.notFound("no break \(id)") }
            if resolved { throw ServiceError.conflict("already_resolved", "break \(id) is already resolved") }
            return .append([ReconciliationBreakResolved(batchID: batchID, breakID: id, reason: reason, resolvedBy: actor)], report)
        }
        let report = try await runContended(command, batchID: batchID, hint: "retry").signal
        return try await recordedReconciliation(batchID, reflecting: report)
    }
}

/// A stored report part that does not read back as the report layout (``SettlementReportCSV``): its key and why.
struct StoredReportUnreadable: Error, CustomStringConvertible {
    let reportKey: String
    let reason: SettlementReportCSVError

    var description: String { "the stored report \(reportKey) cannot be read: \(reason)" }

    /// The refusal of an upload that does not read back (422, `invalid_report`; nothing appended).
    var refusal: ServiceError { ServiceError(.invalidInput, code: "invalid_report", message: description) }
}
