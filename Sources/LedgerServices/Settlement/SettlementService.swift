import Crypto
import Foundation
import LedgerAcquirerAPI
import LedgerCore
import LedgerEngine
import LedgerPostgres
import Logging
import Synchronization

/// The nightly settlement job, run inside the daemon (the acquirer model lives in its memory):
/// for a business date whose cut-off has passed, one batch per currency with eligible items,
/// each walked through opened → closed → submitted → cleared → payout scheduled, one
/// version-checked append per step.
///
/// - Safe to re-run: a batch's stream says how far it got; a finished batch appends nothing and its
///   stored report (byte for byte) is what the reads serve.
/// - Safe to crash: a run resumes at the first step not recorded. The acquirer is idempotent by
///   our batch reference, so re-submitting after a crash between submit and record returns the
///   same report. Runs in one daemon take turns; across daemons, the database refuses a closed
///   event whose items another batch took meanwhile (sql/0008), so no capture is in two batches.
/// - Streams: items go to the acquirer in pages of `settings.submissionPageSize` and the report comes
///   back in pages of `settings.reportPartLines` (one stored part each);
///   reconciliation reads the stored report part by part. Memory holds pages, not batches.
public struct SettlementService: Sendable {
    package init(
        writer: LedgerWriter,
        store: EventStore,
        client: DatabaseClient,
        acquirer: any Acquirer,
        settings: SettlementSettings,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        faultCrashAt: FaultPoint? = nil,
        progressSink: (@Sendable (SettlementProgress) -> Void)? = nil
    ) {
        self.writer = writer
        self.store = store
        self.runner = AggregateStore(writer: writer, store: store, cacheLimit: 1)
        self.client = client
        self.acquirer = acquirer
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.faultCrashAt = faultCrashAt
        self.progressSink = progressSink
    }

    let writer: LedgerWriter
    let store: EventStore
    /// The one command runner, for the batch and reconciliation streams (its aggregate caches stay unused: a cache of one).
    let runner: AggregateStore
    let client: DatabaseClient
    let acquirer: any Acquirer
    let settings: SettlementSettings
    /// The merchant accounts this ledger settles under (its batches are theirs).
    var merchantAccounts: Set<String> { Set(settings.merchantAccounts) }
    /// The contract's price lists, for the fees reconciliation expects.
    var pricing: [PricingSchedule] { settings.pricing }
    let clock: @Sendable () -> Date
    let logger: Logger
    /// A crash test's fault point (`LEDGERD_FAULT_CRASH_AT`), nil in normal operation.
    var faultCrashAt: FaultPoint? = nil
    /// Where this run's progress goes (the HTTP stream of `POST /settlements/run`), if anywhere.
    var progressSink: (@Sendable (SettlementProgress) -> Void)? = nil
    let lock = KeyedLock()
    /// The settlement items: candidates, a batch's items, what no batch took yet, the batch streams.
    var itemsStore: SettlementItemsStore { SettlementItemsStore(client: client, logger: logger) }
    /// The stored reports: parts, line index, summaries.
    var reports: SettlementReportStore { SettlementReportStore(client: client, logger: logger) }
    /// Reconciliation's lookups of items by reference, repeated references and absent items.
    var lookups: ReconciliationLookups { ReconciliationLookups(client: client, logger: logger) }
    /// How many times ``allBatches()`` read every batch stream (a run: once).
    let batchReads = ReadCounter()

    static let actor = "system:settlement"

    // MARK: Running

    /// Settles `day`, reporting each step to `progress` as it happens.
    public func run(
        _ day: SettlementDay,
        progress: (@Sendable (SettlementProgress) -> Void)?
    ) async throws
        -> SettlementRunSummary
    {
        var reporting = self
        reporting.progressSink = progress
        return try await reporting.run(day)
    }

    // MARK: Progress

    /// Items between two progress reports while a batch's items stream.
    static let progressEvery = 100_000

    func progress(_ batchID: String, _ step: String, items: Int? = nil, detail: String? = nil) {
        var metadata: Logger.Metadata = ["batch": "\(batchID)", "step": "\(step)"]
        if let items { metadata["items"] = "\(items)" }
        if let detail { metadata["detail"] = "\(detail)" }
        logger.info("settlement progress", metadata: metadata)
        progressSink?(SettlementProgress(batchID: batchID, step: step, items: items, detail: detail))
    }

    /// The last business day whose cut-off has passed, by this daemon's cut-off, calendar and clock: what a run
    /// without a date settles.
    public func lastClosedBusinessDay() -> BusinessDate {
        settings.lastClosedBusinessDay(now: clock())
    }

    /// The business day open now — the one a capture recorded now settles in — and its scheduled cut-off.
    public func openBusinessDay() -> (businessDate: BusinessDate, cutOffAt: Date) {
        let day = settings.businessDay(settling: clock())
        return (day, settings.cutOff.instant(closing: day))
    }

    /// Settles `date`, a business day whose cut-off has passed.
    public func run(businessDate date: BusinessDate) async throws -> SettlementRunSummary {
        try await run(.businessDate(date))
    }

    /// Settles `day`. Refused (nothing appended) for a date that is not a business day or whose
    /// cut-off has not passed yet. The open day closed now (``SettlementDay/openDayNow(requestedBy:)``)
    /// is the business day a capture recorded now settles in, with the run's clock as its cut-off.
    public func run(_ day: SettlementDay) async throws -> SettlementRunSummary {
        let date: BusinessDate
        let cutOff: Date
        var earlyClose: SettlementEarlyClose?
        switch day {
        case .businessDate(let given):
            date = given
            guard settings.calendar.isBusinessDay(date) else {
                throw ServiceError(
                    .invalidInput,
                    code: "not_a_business_day",
                    message: SettlementRejection.notABusinessDay(date).description,
                    field: "business_date"
                )
            }
            cutOff = settings.cutOff.instant(closing: date)
            guard clock() >= cutOff else {
                let local = String(
                    format: "%02d:%02d",
                    settings.cutOff.secondsAfterMidnight / 3600,
                    settings.cutOff.secondsAfterMidnight % 3600 / 60
                )
                throw ServiceError.conflict(
                    "cut_off_not_reached",
                    SettlementRejection.cutOffNotReached(date).description
                        + ": its cut-off is \(RFC3339.format(cutOff.epochMicroseconds)) (\(local) \(settings.cutOff.timeZoneIdentifier)); settle it after that, or close it now (close_now)"
                )
            }
        case .openDayNow(let actor):
            cutOff = clock()
            date = settings.businessDay(settling: cutOff)
            earlyClose = SettlementEarlyClose(requestedBy: actor, scheduledCutOffAt: settings.cutOff.instant(closing: date))
        }
        return try await lock.withLock("settlement") {
            // Earlier business days with unsettled items first, in order: a missed night is caught
            // up, and a later day never takes an earlier day's captures.
            var days: [BusinessDate] = []
            if let earliest = try await earliestUnsettledItem() {
                var day = settings.businessDay(settling: earliest)
                while day < date {
                    days.append(day)
                    day = settings.calendar.businessDay(onOrAfter: day.adding(days: 1))
                }
            }
            days.append(date)
            // Every batch, read once: the steps below keep it current with what they append.
            var batches = SettlementBatches(try await allBatches())
            var outcomes: [SettlementBatchOutcome] = []
            for day in days {
                // An earlier day's batch finished before (it only shows up because an item recorded
                // after its pin is still waiting for the next batch) is not news.
                let closing = day == date ? (cutOff, earlyClose) : (settings.cutOff.instant(closing: day), nil)
                outcomes += try await settleDay(day, cutOff: closing.0, earlyClose: closing.1, batches: &batches)
                    .filter { day == date || $0.appendedEvents > 0 }
            }
            try await recordPaidPayouts(today: settings.cutOff.localDate(of: clock()), batches: batches)
            // A re-run reports when the day's batch really closed and who closed it early, as its opened event says,
            // not this run's clock (issue 55).
            let closed = outcomes.first { $0.batch.opened.businessDate == date }?.batch.opened
            return SettlementRunSummary(
                businessDate: date,
                cutOffAt: closed?.cutOffAt ?? cutOff,
                earlyClose: closed.map(\.earlyClose) ?? earlyClose,
                batches: outcomes
            )
        }
    }

    /// One business day closing at `cutOff` (early, by `earlyClose`, or at its schedule): a batch per
    /// currency with items, or with a batch already begun (which keeps the cut-off it opened with). A currency's
    /// batch is under the merchant account the settings give it (``SettlementSettings/merchantAccount(for:)``); a
    /// batch begun under another of our accounts is finished under that one.
    func settleDay(
        _ date: BusinessDate,
        cutOff: Date,
        earlyClose: SettlementEarlyClose?,
        batches: inout SettlementBatches
    ) async throws -> [SettlementBatchOutcome] {
        let pinned = try await store.head().position
        var begun: [String: String] = [:]  // currency code → the account of a batch begun this day
        for state in batches.states where state.opened.businessDate == date && merchantAccounts.contains(state.opened.merchantAccount) {
            begun[state.opened.currency.code] = state.opened.merchantAccount
        }
        let currencies = Set(try await unsettledCurrencies(through: pinned, before: cutOff)).union(begun.keys)
        var outcomes: [SettlementBatchOutcome] = []
        for code in currencies.sorted() {
            guard let currency = Currency(code: code) else { continue }
            let account = begun[code] ?? settings.merchantAccount(for: currency)
            outcomes.append(
                try await settle(
                    date: date,
                    account: account,
                    currency: currency,
                    cutOff: cutOff,
                    earlyClose: earlyClose,
                    pinned: pinned,
                    batches: &batches
                )
            )
        }
        return outcomes
    }

    /// Walks one batch to its last step from wherever its stream stands: ``SettlementSteps`` decides
    /// each step, this loop performs it (queries, the acquirer, appends, fault points, progress).
    /// The batch's final state goes into `batches` before it is reconciled.
    func settle(
        date: BusinessDate,
        account: String,
        currency: Currency,
        cutOff: Date,
        earlyClose: SettlementEarlyClose?,
        pinned: Int64,
        batches: inout SettlementBatches
    ) async throws -> SettlementBatchOutcome {
        var steps = SettlementSteps(
            merchantAccount: account,
            currency: currency,
            businessDate: date,
            cutOffAt: cutOff,
            earlyClose: earlyClose,
            pinnedPosition: pinned,
            fundingLagBusinessDays: settings.fundingLagBusinessDays,
            addingBusinessDays: settings.calendar.adding(businessDays:to:),
            maximumAttempts: AggregateStore.maximumAttempts
        )
        let batchID = steps.batchID
        let stream = SettlementBatch.streamID(batchID: batchID)
        var action = steps.read(try await load(stream))
        var mismatches: [String: Int] = [:]  // closes the database refused, by their items digest
        while true {
            switch action {
            case .reread:
                action = steps.read(try await load(stream))
            case .close(let opened):
                action = steps.closed(try await close(opened))
            case .submit(let closed):
                progress(batchID, "submitting", items: closed.itemCount)
                let submitted = try await submit(batchID: batchID, account: account, currency: currency, businessDate: date)
                FaultPoint.settlementAccepted.crashIfConfigured(faultCrashAt, logger: logger)
                action = steps.submitted(submitted.receipt, reportSHA256: submitted.digest, cleared: submitted.cleared)
            case .loadStoredClearing:
                action = steps.clearingLoaded(try await storedClearing(batchID: batchID, currency: currency))
            case .fetchPayout(let batchNumber):
                let payout: PayoutNotice
                do { payout = try await acquirer.payout(batchNumber: batchNumber) } catch {
                    throw ServiceError(
                        .dependencyFailed,
                        code: "acquirer_refused",
                        message: "the acquirer has no payout for \(batchID): \(error.description)"
                    )
                }
                action = steps.payoutFetched(payout)
            case .append(let event, let expectedVersion):
                do {
                    guard try await runner.run(Self.step(event, of: batchID, expecting: expectedVersion, now: clock())).signal else {
                        // Someone else recorded this step: read again and go on from there.
                        action = steps.versionConflict()
                        continue
                    }
                    progress(batchID, "recorded", detail: event.type)
                    Self.faultPoint(after: event)?.crashIfConfigured(faultCrashAt, logger: logger)
                    action = steps.appended()
                } catch let error as AppendError where error == .settlementItemsMismatch {
                    // The database's membership rule (sql/0010) took other items than this close counted. Another daemon's
                    // batch may have taken some meanwhile: the re-read closes again over what is left. If this close is
                    // refused again on the same state, Swift and SQL disagree: fail loudly instead of looking busy.
                    if case .closed(let refused) = event, mismatches[refused.itemsSHA256 ?? "", default: 0] >= 1 {
                        logger.error(
                            "settlement close refused twice by the database's membership rule",
                            metadata: [
                                "batch": "\(batchID)", "captures": "\(refused.captureCount)", "refunds": "\(refused.refundCount)",
                                "items_sha256": "\(refused.itemsSHA256 ?? "")",
                            ]
                        )
                        throw ServiceError(
                            .internalFailure,
                            code: "settlement_items_mismatch",
                            message: "the ledger refused the close of \(batchID): its items do not match the batch rule"
                        )
                    }
                    if case .closed(let refused) = event { mismatches[refused.itemsSHA256 ?? "", default: 0] += 1 }
                    action = steps.versionConflict()
                }
            case .reconcile(let state):
                batches.record(state)
                try await reconcileAfterSettling(state, batches: batches)
                action = steps.reconciled()
            case .done(let done):
                return outcome(done.state, appended: done.appendedEvents)
            case .fail(.tooBusy):
                throw ServiceError.unavailable("the settlement batch \(batchID) is too busy; run it again")
            }
        }
    }

    /// One step of a batch as a command on its stream: `event` appended when the stream is still at the version the
    /// steps expect (true), nothing when another run recorded a step meanwhile (false: the steps read again).
    static func step(_ event: SettlementEvent, of batchID: String, expecting expected: ExpectedVersion, now: Date) -> StreamCommand<Bool> {
        let metadata = EventMetadata(correlationID: batchID, actor: actor, command: "SettleBatch")
        return StreamCommand(stream: SettlementBatch.streamID(batchID: batchID), now: now, metadata: metadata) { recorded in
            PlannedAppend.expectation(forVersion: recorded.last?.streamVersion ?? 0) == expected ? .append([event.payload], true) : .nothing(false)
        }
    }

    static func faultPoint(after event: SettlementEvent) -> FaultPoint? {
        switch event {
        case .opened: return .settlementOpened
        case .closed: return .settlementClosed
        case .submitted: return .settlementSubmitted
        case .cleared: return .settlementCleared
        case .payoutScheduled: return .settlementPayoutScheduled
        default: return nil
        }
    }

    /// The closed event of an opened batch: its items streamed from the database in ledger order,
    /// tallied and hashed one at a time. The items are `ledger.settlement_batch_candidates` (sql/0010),
    /// which applies the membership rule the closed event's trigger applies when it takes them
    /// (`ledger.settlement_batch_takes`), so the trigger takes exactly the items counted here (unless
    /// another batch took some meanwhile: LDG10).
    func close(_ opened: SettlementBatchOpened) async throws -> SettlementBatchClosed {
        var tally = SettlementBatchTally(opened)
        var hasher = SHA256()
        do {
            try await itemsStore.forEachCandidate(currency: opened.currency.code, pinned: opened.pinnedPosition, cutOff: opened.cutOffAt) { row in
                let item = try Self.item(row)
                try tally.add(item)
                hasher.update(data: Array(item.canonicalLine.utf8))
                if tally.itemCount % Self.progressEvery == 0 { progress(opened.batchID, "selecting", items: tally.itemCount) }
            }
            progress(opened.batchID, "selected", items: tally.itemCount)
            return try tally.closed(itemsSHA256: Self.hex(Array(hasher.finalize())))
        } catch let error as SettlementRejection {
            throw ServiceError(.internalFailure, code: "settlement_refused", message: error.description)
        }
    }

    /// Records the deposit of every scheduled payout whose value date has come (the acquirer's
    /// payout notice for the batch number); one append per batch, never twice.
    func recordPaidPayouts(today: BusinessDate, batches: SettlementBatches) async throws {
        let scheduled = batches.states.filter { merchantAccounts.contains($0.opened.merchantAccount) && $0.stage == .payoutScheduled }
        for currency in Set(scheduled.map(\.opened.currency)).sorted(by: { $0.code < $1.code }) {
            for state in scheduled where state.opened.currency == currency {
                guard let scheduled = state.payout, let number = state.submitted?.batchNumber, scheduled.valueDate <= today else { continue }
                let notice: PayoutNotice
                do { notice = try await acquirer.payout(batchNumber: number) } catch {
                    logger.warning("payout notice unavailable", metadata: ["batch": "\(state.opened.batchID)", "error": "\(error)"])
                    continue
                }
                let event = SettlementEvent.paid(
                    SettlementPayoutPaid(
                        batchID: state.opened.batchID,
                        payoutReference: notice.payoutReference,
                        amount: notice.amount,
                        valueDate: notice.valueDate
                    )
                )
                // Recorded by someone else meanwhile (the stream moved past this state): nothing.
                let record = StreamCommand(
                    stream: SettlementBatch.streamID(batchID: state.opened.batchID),
                    now: clock(),
                    metadata: EventMetadata(correlationID: state.opened.batchID, actor: Self.actor, command: "RecordPayout")
                ) { recorded in
                    (recorded.last?.streamVersion ?? 0) == state.version ? .append([event.payload], true) : .nothing(false)
                }
                guard try await runner.run(record).signal else { continue }
                FaultPoint.settlementPaid.crashIfConfigured(faultCrashAt, logger: logger)
            }
        }
    }

    /// Every settlement batch in the ledger, by business date (then the order they were opened in):
    /// the batch streams read in one query and folded. A run reads them once (``SettlementBatches``).
    func allBatches() async throws -> [SettlementBatchState] {
        batchReads.add()
        let streams = try await itemsStore.batchStreams()
        guard !streams.isEmpty else { return [] }
        var events: [String: [SettlementEvent]] = [:]
        for recorded in try await store.readStreams(streams) {
            events[recorded.streamID.rawValue, default: []].append(try SettlementEvent.decode(recorded))
        }
        let states = streams.compactMap { SettlementBatchState.fold(events[$0.rawValue] ?? []) }
        return states.enumerated().sorted { ($0.element.opened.businessDate, $0.offset) < ($1.element.opened.businessDate, $1.offset) }
            .map(\.element)
    }

    /// Counts reads shared by every copy of the service.
    final class ReadCounter: Sendable {
        private let count = Atomic(0)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    func outcome(_ state: SettlementBatchState, appended: Int) -> SettlementBatchOutcome {
        SettlementBatchOutcome(batch: state, appendedEvents: appended)
    }

    // MARK: The acquirer and the stored report

    struct Submitted {
        let receipt: SettlementReceipt
        let digest: String
        let cleared: SettlementBatchCleared
    }

    /// Submits the batch's items to the acquirer page by page (idempotent there by batch reference),
    /// then reads its report page by page into `ledger.settlement_report_parts` and
    /// `settlement_report_lines` in one transaction, hashing and clearing it on the way. Memory
    /// holds one page. A report stored by an earlier run (that died before recording the
    /// submission) is not stored again but checked: another digest means the acquirer's answer
    /// changed, and the run is refused.
    func submit(batchID: String, account: String, currency: Currency, businessDate: BusinessDate) async throws -> Submitted {
        // The ledger's own account is the acquirer's configured one (``SupervisedAcquirerSettings``): named only when
        // another, so a batch of the default account is submitted as it always was (the acquirer compares headers).
        let header = SettlementBatchHeader(
            batchReference: batchID,
            currency: currency,
            businessDate: businessDate,
            merchantAccount: account == settings.merchantAccount ? nil : account
        )
        do {
            return try await submitOnce(header)
        } catch is SettlementReportStore.StoredConcurrently {
            // Another daemon settling the same batch stored the report meanwhile: this time it is
            // found stored, and checked against the acquirer's instead of stored again.
            return try await submitOnce(header)
        }
    }

    func submitOnce(_ header: SettlementBatchHeader) async throws -> Submitted {
        let batchID = header.batchReference
        let currency = header.currency
        let receipt: SettlementReceipt
        let items = itemPages(ofBatch: batchID)
        defer { items.cancel() }
        do {
            receipt = try await acquirer.submitBatch(header, pages: { _ in try await items.next() })
        } catch {
            logger.error("the acquirer refused a settlement batch", metadata: ["batch": "\(batchID)", "error": "\(error)"])
            throw ServiceError(.dependencyFailed, code: "acquirer_refused", message: "the acquirer refused the batch: \(error.description)")
        }
        progress(batchID, "accepted", items: receipt.lineCount, detail: "batch number \(receipt.batchNumber)")
        let stored = try await storedReport(batchID)
        let csv = SettlementReportCSV()
        var hasher = SHA256()
        var clearing = SettlementClearing()
        var lineCount = 0
        // Page k + 1 is fetched and written as CSV while page k is stored: both cores busy.
        let acquirer = self.acquirer
        let number = receipt.batchNumber
        let size = settings.reportPartLines
        let total = receipt.lineCount
        @Sendable func formatted(_ part: Int) async throws -> (lines: [SettlementReportLine], text: String) {
            let from = part * size
            let lines: [SettlementReportLine]
            do { lines = try await acquirer.reportLines(batchNumber: number, from: from, count: size) } catch {
                throw ServiceError(.dependencyFailed, code: "acquirer_refused", message: "the acquirer's report is unavailable: \(error)")
            }
            return (lines, (part == 0 ? SettlementReportCSV.header : "") + (try csv.rows(lines, firstRow: from + 2)))
        }
        let partCount = try await reports.storeReport { transaction -> Int in
            var part = 0
            var next: Task<(lines: [SettlementReportLine], text: String), any Error>? = total > 0 ? Task { try await formatted(0) } : nil
            defer { next?.cancel() }
            while let pending = next {
                let (lines, text) = try await pending.value
                next = nil
                guard !lines.isEmpty else { break }
                if lineCount + lines.count < total {
                    let following = part + 1
                    next = Task { try await formatted(following) }
                }
                hasher.update(data: Array(text.utf8))
                for line in lines { clearing.add(line) }
                if stored == nil {
                    try await transaction.insertPart(reportKey: batchID, part: part, csv: text)
                    try await transaction.indexLines(lines, reportKey: batchID, firstLine: lineCount + 1)
                    FaultPoint.settlementStoringReport.crashIfConfigured(faultCrashAt, logger: logger)
                }
                lineCount += lines.count
                part += 1
                if part % 10 == 0 { progress(batchID, "storing report", items: lineCount) }
            }
            guard lineCount == receipt.lineCount else {
                throw ServiceError(
                    .dependencyFailed,
                    code: "report_incomplete",
                    message: "the acquirer's report for \(batchID) has \(lineCount) lines, its receipt says \(receipt.lineCount)"
                )
            }
            let digest = Array(hasher.finalize())
            if let stored {
                guard stored.digest == digest else {
                    throw ServiceError(
                        .dependencyFailed,
                        code: "report_changed",
                        message: "the acquirer's report for \(batchID) differs from the stored one"
                    )
                }
            } else {
                try await transaction.insertSummary(reportKey: batchID, sha256: digest, lineCount: lineCount, parts: part)
            }
            return part
        }
        progress(batchID, "stored report", items: lineCount, detail: "\(partCount) parts")
        let digest = stored?.digest ?? Array(hasher.finalize())
        return Submitted(receipt: receipt, digest: Self.hex(digest), cleared: clearing.cleared(batchID: batchID, currency: currency))
    }

    /// The batch's items for the acquirer in pages, in ledger order: one query, streamed.
    func itemPages(ofBatch batchID: String) -> PagedQuery<[SettlementItem]> {
        let items = itemsStore
        let size = settings.submissionPageSize
        return PagedQuery { emit in
            var page: [SettlementItem] = []
            page.reserveCapacity(size)
            try await items.forEachItem(ofBatch: batchID) { row in
                page.append(try Self.item(row).request)
                if page.count == size {
                    try await emit(page)
                    page.removeAll(keepingCapacity: true)
                }
            }
            if !page.isEmpty { try await emit(page) }
        }
    }

    /// The totals of a stored report, read part by part.
    func storedClearing(batchID: String, currency: Currency) async throws -> SettlementBatchCleared {
        var clearing = SettlementClearing()
        try await forEachStoredPage(batchID) { lines in for line in lines { clearing.add(line) } }
        return clearing.cleared(batchID: batchID, currency: currency)
    }

    /// Calls `body` with the lines of each stored part of the batch's report, in order. A part that does not read back
    /// (a report stored by a writer that quoted by `Character`, security review 4, M1) is ``StoredReportUnreadable``.
    func forEachStoredPage(_ batchID: String, _ body: ([SettlementReportLine]) async throws -> Void) async throws {
        var row = 2
        try await reports.forEachPart(batchID) { part, text in
            let lines: [SettlementReportLine]
            do {
                lines = try part == 0 ? SettlementReportCSV().parse(text) : SettlementReportCSV().parseRows(text, firstRow: row)
            } catch let error as SettlementReportCSVError {
                throw StoredReportUnreadable(reportKey: batchID, reason: error)
            }
            row += lines.count
            try await body(lines)
        }
    }

    /// The stored report's digest and line count, if it is stored.
    func storedReport(_ batchID: String) async throws -> (digest: [UInt8], lineCount: Int)? {
        try await reports.storedReport(batchID)
    }

    static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }

    // MARK: Ledger reads

    func load(_ stream: StreamID) async throws -> SettlementBatchState? {
        SettlementBatchState.fold(try await store.readStream(stream).map { try SettlementEvent.decode($0) })
    }

    typealias ItemRow = SettlementItemsStore.ItemRow

    static func item(_ row: ItemRow) throws -> SettlementBatchItem {
        let (position, kind, order, ours, theirs, code, units, micros) = row
        guard let kind = SettlementItemKind(rawValue: kind), let currency = Currency(code: code) else {
            throw ServiceError(.internalFailure, code: "settlement_item_invalid", message: "settlement item at \(position) is unreadable")
        }
        return SettlementBatchItem(
            kind: kind,
            orderID: order,
            modificationReference: ours,
            pspModificationReference: theirs,
            amount: Money(minorUnits: units, currency: currency),
            recordedAt: Date(epochMicroseconds: micros),
            position: position
        )
    }

    /// The currencies whose batch pinned at `pinned` with this `cutOff` would take items
    /// (`ledger.settlement_batch_candidates`, sql/0010, asked for each currency with items no batch took yet).
    func unsettledCurrencies(through pinned: Int64, before cutOff: Date) async throws -> [String] {
        try await itemsStore.unsettledCurrencies(through: pinned, before: cutOff)
    }

    /// When the earliest item no batch took yet was recorded.
    func earliestUnsettledItem() async throws -> Date? {
        try await itemsStore.earliestUnsettledItem()
    }

    // MARK: Back-office reads

    /// The batch with that id, or nil when there is none.
    public func batch(id: String) async throws -> SettlementBatchState? {
        guard let stream = Self.stream(ofBatch: id) else { return nil }
        return try Self.batch(try await store.readStream(stream))
    }

    /// A batch's stream, `settlement-<batch id>`.
    static func stream(ofBatch id: String) -> StreamID? { StreamID("settlement-" + id) }

    /// The batch as the back office reads it, folded from its stream's events: the live read folds
    /// them all, an as-of read (``StateHistory``) those up to its point.
    static func batch(_ events: [RecordedEvent]) throws -> SettlementBatchState? {
        SettlementBatchState.fold(try events.map { try SettlementEvent.decode($0) })
    }

    /// The batches whose business dates fall within `from…to` (`YYYY-MM-DD`, inclusive; either may be
    /// nil), by business date, then batch id.
    public func batches(from: String?, to: String?) async throws -> [SettlementBatchState] {
        func date(_ text: String?, _ field: String) throws -> BusinessDate? {
            guard let text else { return nil }
            guard let date = BusinessDate(text) else {
                throw ServiceError.malformed("invalid_parameter", "\(field) must be a date YYYY-MM-DD", field: field)
            }
            return date
        }
        let from = try date(from, "from")
        let to = try date(to, "to")
        // `to` before `from` is an empty range, answered as such (no batch is in it), not a malformed request.
        var batches: [SettlementBatchState] = []
        for state in try await allBatches() {
            let day = state.opened.businessDate
            if let from, day < from { continue }
            if let to, day > to { continue }
            batches.append(state)
        }
        batches.sort { ($0.opened.businessDate, $0.opened.batchID) < ($1.opened.businessDate, $1.opened.batchID) }
        return batches
    }

    /// The stored settlement report CSV of a submitted batch, byte for byte, as a writer that hands its stored parts to
    /// `write` in order (a report of a million lines is never one string); nil when there is none.
    public func reportCSV(id: String) async throws -> (@Sendable (_ write: (String) async throws -> Void) async throws -> Void)? {
        guard try await storedReport(id) != nil else { return nil }
        let reports = self.reports
        return { write in
            try await reports.forEachPartCSV(id, write)
        }
    }
}
