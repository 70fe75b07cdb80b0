import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

// Settlement: the batches by business day, a batch's figures (its IC++ decomposition and payout) and reconciliation with
// each break, and an operator's resolution of a break with a note (an event), through ``SettlementService`` as the
// API's routes read and resolve.

extension ConsoleRoutes {
    struct BatchRow {
        let id: String
        let path: String
        let businessDate: String
        let currency: String
        let stage: String
        let items: String
        let gross: String
        let net: String
        let payout: String
    }

    struct BatchesPage {
        let title = "Settlement"
        let session: ConsolePages.SessionView
        let from: String
        let to: String
        let fromError: ConsolePages.ErrorView?
        let toError: ConsolePages.ErrorView?
        let rows: [BatchRow]
        /// The operator's run and upload forms (nil for an auditor).
        var run: RunForm?
        /// What a bank statement upload stored (issue 53), shown above the batches.
        var bankImport: BankImportView?
    }

    /// A bank statement file's import, as the console shows it: the API's reply, one row per statement.
    struct BankImportView {
        struct Row {
            let statementID: String
            let sequence: String
            let account: String
            let status: String
            let entries: Int
            let net: String
            let appended: Int
        }

        let format: String
        let fileSHA256: String
        let rows: [Row]

        init(_ summary: BankStatementService.ImportSummary) {
            format = summary.format
            fileSHA256 = summary.fileSHA256
            rows = summary.statements.map {
                Row(
                    statementID: $0.statementID,
                    sequence: $0.sequence,
                    account: $0.account,
                    status: $0.status.rawValue,
                    entries: $0.entries,
                    net: "\($0.net.decimalString) \($0.currency.code)",
                    appended: $0.appended
                )
            }
        }
    }

    /// An operator's forms on the settlement page: run a day's settlement, and upload an acquirer's report.
    struct RunForm {
        let csrfToken: String
        /// The day a run without a date settles, as the placeholder says.
        let lastClosed: String
        var businessDate = ""
        var closeNow = false
        var dateError: ConsolePages.ErrorView?
        var formats: [StatusOption] = SettlementReportFormat.allCases.map { StatusOption(name: $0.rawValue, selected: false) }
        var batch = ""
        var uploadError: ConsolePages.ErrorView?
        /// The bank statement upload (nil: no importer behind the console).
        var bank: BankForm?
    }

    /// The bank statement upload form: its format choice and the last refusal.
    struct BankForm {
        var formats: [StatusOption] = BankStatementService.formatNames.map { StatusOption(name: $0, selected: false) }
        var error: ConsolePages.ErrorView?
    }

    struct BreakView {
        let id: String
        /// The break's console URL: its resolve form posts to it and `/resolve`.
        let path: String
        let breakClass: String
        let reference: String
        let expected: String
        let actual: String
        let detail: String
        let resolved: Bool
        let resolution: String
        /// The operator's resolve form (nil: resolved, or an auditor).
        let form: ResolveForm?
    }

    struct ResolveForm {
        let reason: String
        let error: ConsolePages.ErrorView?
    }

    struct BatchPage {
        let title: String
        let session: ConsolePages.SessionView
        let csrfToken: String
        let id: String
        /// The batch's id where a break's `id` shadows `id` (the resolve form).
        let batchID: String
        let notice: String?
        let figures: [ConsolePages.Figure]
        let reconciled: Bool
        let reports: [ReportSection]
        /// Who closed the day before its cut-off, and the cut-off it brought forward (nil: closed at its cut-off).
        var closedEarly: String? = nil
        /// The acquirer's stored report (nil until the batch was submitted) and the batch's items, as CSV files.
        var reportCSV: String? = nil
        var itemsCSV = ""
        var breaksCSV = ""
        var items: [ItemView] = []
        /// The next page of items, and the first (nil on the first page).
        var itemsNext: String? = nil
        var itemsFirst: String? = nil
        /// Ledger ↔ acquirer ↔ bank, and the bank breaks naming the batch's payout (issue 53).
        var legs: LegsView? = nil
    }

    /// One capture or refund the batch settled.
    struct ItemView {
        let position: Int64
        let kind: String
        let orderID: String
        let orderPath: String
        let reference: String
        let pspReference: String
        let amount: String
        let recordedAt: String
    }

    /// A batch's items on a page of its page (`items_after`: the last position of the page before).
    static let itemsPageSize = 50

    /// One report's reconciliation of the batch: its counts and breaks.
    struct ReportSection {
        let heading: String
        let recordedAt: String
        let counts: [ConsolePages.Figure]
        let breaks: [BreakView]
        let breakCount: Int
        let shownFrom: Int
        let shownTo: Int
        let morePages: Bool
        let next: String?
        let previous: String?
    }

    /// A report's breaks on a page of the batch's page (`breaks_page` pages every report's list alike).
    static let breaksPageSize = 100

    /// The batches of business days `from`…`to` (`YYYY-MM-DD`; by default from 30 days ago on, a batch of a business
    /// day after today included), by day.
    func settlementList(
        _ request: Request,
        _ signedIn: SignedIn,
        runForm: RunForm? = nil,
        bankImport: BankImportView? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let parameters = request.uri.queryParameters
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let now = clock()
        let from = parameters["from"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let to = parameters["to"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let fromError = from.flatMap { Self.utcDay($0) == nil ? Self.dayError("from") : nil }
        let toError = to.flatMap { Self.utcDay($0) == nil ? Self.dayError("to") : nil }
        guard fromError == nil, toError == nil else {
            let page = BatchesPage(session: signedIn.view, from: from ?? "", to: to ?? "", fromError: fromError, toError: toError, rows: [])
            return ConsolePages.render("settlements", page, status: .badRequest)
        }
        // Batches by business date, with no upper bound by default: a day closed early on a weekend is Monday's, a
        // date after today, and it must be listed (issue 55).
        let first = from ?? Self.day(calendar.date(byAdding: .day, value: -29, to: calendar.startOfDay(for: now))!, calendar)
        let rows = try await settlement.batches(from: first, to: to).map(Self.batchRow)
        var page = BatchesPage(session: signedIn.view, from: first, to: to ?? "", fromError: nil, toError: nil, rows: rows)
        page.run = runForm
        if signedIn.isOperator && page.run == nil {
            page.run = RunForm(csrfToken: signedIn.session.csrfToken, lastClosed: settlement.lastClosedBusinessDay().description)
            if bank != nil { page.run?.bank = BankForm() }
        }
        page.bankImport = bankImport
        return ConsolePages.render("settlements", page, status: status)
    }

    struct RunStep {
        let batchID: String
        let step: String
        /// Nil when the step counts nothing (an empty string would still open the template's section).
        let items: Int?
        let detail: String?
    }

    struct RunEnd {
        let businessDate: String
        let cutOffAt: String
        let earlyClose: String?
        let batches: [BatchRow]
        let error: ConsolePages.ErrorView?
    }

    /// `POST /console/settlements/run`: an operator settles a business day (`business_date`; empty: the last whose
    /// cut-off has passed) or closes the open day now (`close_now`), parsed by the API's own body parser. The page is
    /// streamed as the run goes: each step a list item the browser shows as it arrives (no script needed), then the
    /// day's batches. A refusal before any step (a bad date, a cut-off not reached) is the settlement page again with
    /// the API's error beside the field, nothing appended.
    func runSettlement(form: ConsoleForm, _ request: Request, _ signedIn: SignedIn) async throws -> Response {
        var typed = RunForm(csrfToken: signedIn.session.csrfToken, lastClosed: settlement.lastClosedBusinessDay().description)
        typed.businessDate = (form["business_date"] ?? "").trimmingCharacters(in: .whitespaces)
        typed.closeNow = form["close_now"] == "true"
        let run: StartedSettlementRun
        do {
            var body: [String: Any] = [:]
            if !typed.businessDate.isEmpty { body["business_date"] = typed.businessDate }
            if typed.closeNow { body["close_now"] = true }
            let json = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
            let parsed = try StrictJSON.decode(SettlementRunBody.self, from: ByteBuffer(bytes: json))
            // Closing the day early cannot be undone: checked, then confirmed on a page of its own (issue 55).
            if parsed.closeNow && !Self.isConfirmed(form) { return closeNowConfirmation(signedIn) }
            run = try await StartedSettlementRun.start(settlement, day: SettlementRoutes.day(of: parsed, actor: signedIn.principal.actor, settlement))
        } catch {
            let api = StartedSettlementRun.apiError(error)
            guard api.status.code < 500 else { throw api }
            typed.dateError = .init(code: api.code, message: api.message)
            return try await settlementList(request, signedIn, runForm: typed, status: api.status)
        }
        let session = signedIn.view
        return ConsolePages.streamed { write in
            try await write("run-start", RunStart(title: "Settlement run", session: session))
            var end: RunEnd?
            try await run.stream { line in
                switch line {
                case .progress(let step):
                    try await write(
                        "run-step",
                        RunStep(batchID: step.batchID, step: step.step, items: step.items, detail: step.detail.flatMap { $0.isEmpty ? nil : $0 })
                    )
                case .summary(let summary):
                    end = RunEnd(
                        businessDate: summary.businessDate.description,
                        cutOffAt: ConsolePages.time(summary.cutOffAt),
                        earlyClose: summary.earlyClose.map { "closed early by \($0.requestedBy)" },
                        batches: summary.batches.map { Self.batchRow($0.batch) },
                        error: nil
                    )
                case .failure(let error):
                    let api = StartedSettlementRun.apiError(error)
                    end = RunEnd(businessDate: "", cutOffAt: "", earlyClose: nil, batches: [], error: .init(code: api.code, message: api.message))
                }
            }
            try await write("run-end", end ?? RunEnd(businessDate: "", cutOffAt: "", earlyClose: nil, batches: [], error: nil))
        }
    }

    struct RunStart {
        let title: String
        let session: ConsolePages.SessionView
    }

    static func batchRow(_ batch: SettlementBatchState) -> BatchRow {
        BatchRow(
            id: batch.opened.batchID,
            path: Self.path("settlements", batch.opened.batchID),
            businessDate: batch.opened.businessDate.description,
            currency: batch.opened.currency.code,
            stage: batch.stage.rawValue,
            items: batch.closed.map { "\($0.captureCount) / \($0.refundCount)" } ?? "—",
            gross: batch.closed?.gross.decimalString ?? "—",
            net: batch.cleared?.net.decimalString ?? "—",
            payout: batch.payout.map { "\($0.amount.decimalString) on \($0.valueDate)" } ?? "—"
        )
    }

    /// A batch: its stages' figures and its reconciliation (the view `GET /settlements/{id}/reconciliation` reads),
    /// each break with its evidence on both sides and its resolution; an operator's resolve form on each open one.
    func batchPage(
        id: String,
        _ signedIn: SignedIn,
        resolving: (breakID: String, form: ResolveForm)? = nil,
        resolvingBank: (breakID: String, form: ResolveForm)? = nil,
        notice: String? = nil,
        breaksPage: String? = nil,
        itemsAfter: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        guard let batch = try await settlement.batch(id: id) else { throw APIError.notFound("no settlement batch \(id)") }
        // A page of the items, one more read to know whether another page follows.
        let after = itemsAfter.flatMap { Int64($0) }.map { max(0, $0) } ?? 0
        let read = try await settlement.batchItems(id: id, after: after, limit: Self.itemsPageSize + 1)
        let items = read.prefix(Self.itemsPageSize).map { item in
            ItemView(
                position: item.position,
                kind: item.kind.rawValue,
                orderID: item.orderID,
                orderPath: Self.path("orders", item.orderID),
                reference: item.modificationReference,
                pspReference: item.pspModificationReference,
                amount: "\(item.amount.decimalString) \(item.amount.currency.code)",
                recordedAt: ConsolePages.time(item.recordedAt)
            )
        }
        let closedEarly = batch.opened.earlyClose.map {
            "closed early by \($0.requestedBy) at \(ConsolePages.time(batch.opened.cutOffAt)), before its cut-off \(ConsolePages.time($0.scheduledCutOffAt))"
        }
        let code = batch.opened.currency.code
        var figures = [
            ConsolePages.Figure(label: "business date", value: batch.opened.businessDate.description),
            ConsolePages.Figure(label: "merchant account", value: batch.opened.merchantAccount),
            ConsolePages.Figure(label: "stage", value: batch.stage.rawValue),
            ConsolePages.Figure(label: "cut-off", value: ConsolePages.time(batch.opened.cutOffAt)),
        ]
        if let closed = batch.closed {
            figures += [
                .init(label: "captures", value: "\(closed.captureCount)"), .init(label: "refunds", value: "\(closed.refundCount)"),
                .init(label: "gross credit", value: "\(closed.grossCredit.decimalString) \(code)"),
                .init(label: "gross debit", value: "\(closed.grossDebit.decimalString) \(code)"),
                .init(label: "gross", value: "\(closed.gross.decimalString) \(code)"),
            ]
        }
        if let cleared = batch.cleared {
            figures += [
                .init(label: "interchange", value: "\(cleared.interchange.decimalString) \(code)"),
                .init(label: "scheme fees", value: "\(cleared.schemeFees.decimalString) \(code)"),
                .init(label: "markup", value: "\(cleared.markup.decimalString) \(code)"),
                .init(label: "commission", value: "\(cleared.commission.decimalString) \(code)"),
                .init(label: "net", value: "\(cleared.net.decimalString) \(code)"),
            ]
        }
        if let payout = batch.payout {
            figures += [
                .init(label: "payout", value: "\(payout.amount.decimalString) \(code)"),
                .init(label: "payout reference", value: payout.payoutReference),
                .init(label: "value date", value: payout.valueDate.description),
            ]
        }
        if batch.paid != nil { figures.append(.init(label: "paid", value: "yes")) }
        let view = try await settlement.reconciliation(id: id)
        // Every report's reconciliation: the acquirer's first, then each upload, each with its breaks (amounts in the
        // batch's currency, as the API's reply writes them).
        let currency = view?.currency ?? batch.opened.currency
        let reports = (view?.reports ?? []).map { report -> ReportSection in
            let shown = ConsolePages.page(report.breaks, page: breaksPage, size: Self.breaksPageSize)
            let breaks = shown.items.map { entry -> BreakView in
                let resolution = entry.resolution
                let open = resolution == nil
                var form: ResolveForm?
                if open && signedIn.isOperator {
                    form = resolving?.breakID == entry.found.breakID ? resolving?.form : ResolveForm(reason: "", error: nil)
                }
                return BreakView(
                    id: entry.found.breakID,
                    path: Self.path("breaks", entry.found.breakID),
                    breakClass: entry.found.breakClass.rawValue,
                    reference: entry.found.reference,
                    expected: entry.found.figure(entry.found.expected, in: currency) ?? "—",
                    actual: entry.found.figure(entry.found.actual, in: currency) ?? "—",
                    detail: entry.found.detail,
                    resolved: !open,
                    resolution: resolution.map { "\($0.reason) (\($0.resolvedBy))" } ?? "",
                    form: form
                )
            }
            return ReportSection(
                heading: report.report.map { "Uploaded report \($0)" } ?? "The acquirer's report",
                recordedAt: ConsolePages.time(report.recordedAt),
                counts: [
                    .init(label: "report lines", value: "\(report.result.reportLines)"),
                    .init(label: "ledger items", value: "\(report.result.ledgerItems)"),
                    .init(label: "matched", value: "\(report.result.matched)"),
                    .init(label: "carried from other batches", value: "\(report.result.carried ?? 0)"),
                    .init(label: "open breaks", value: "\(report.openBreaks)"),
                    .init(label: "window closed", value: report.result.windowClosed ? "yes" : "no"),
                ],
                breaks: Array(breaks),
                breakCount: report.breaks.count,
                shownFrom: shown.items.isEmpty ? 0 : shown.items.startIndex + 1,
                shownTo: shown.items.endIndex,
                morePages: report.breaks.count > Self.breaksPageSize,
                next: shown.next.map { Self.path("settlements", id) + "?breaks_page=\($0)" },
                previous: shown.page > 1 ? Self.path("settlements", id) + "?breaks_page=\(shown.page - 1)" : nil
            )
        }
        var page = BatchPage(
            title: "Batch \(id)",
            session: signedIn.view,
            csrfToken: signedIn.session.csrfToken,
            id: id,
            batchID: id,
            notice: notice,
            figures: figures,
            reconciled: view != nil,
            reports: reports,
            closedEarly: closedEarly,
            reportCSV: batch.stage >= .submitted ? Self.path("settlements", id) + "/report.csv" : nil,
            itemsCSV: Self.path("settlements", id) + "/items.csv",
            breaksCSV: Self.path("settlements", id) + "/breaks.csv",
            items: Array(items),
            itemsNext: read.count > Self.itemsPageSize ? items.last.map { Self.path("settlements", id) + "?items_after=\($0.position)#items" } : nil,
            itemsFirst: after > 0 ? Self.path("settlements", id) + "#items" : nil
        )
        page.legs = try await legs(batch, reconciliation: view, signedIn, resolving: resolvingBank)
        return ConsolePages.render("settlement", page, status: status)
    }

    /// Resolves a break with the operator's note (the API's body parser reads it: its limits and errors are the API's).
    /// Done: back to the batch (303); refused: the batch again with the error beside the break's form.
    func resolveBreak(id breakID: String, form: ConsoleForm, _ signedIn: SignedIn) async throws -> Response {
        let reason = form["reason"] ?? ""
        let batchID = form["batch_id"] ?? ""
        do {
            let body = try JSONSerialization.data(withJSONObject: reason.isEmpty ? [:] : ["reason": reason])
            let parsed = try StrictJSON.decode(ResolutionBody.self, from: ByteBuffer(bytes: body))
            let view = try await settlement.resolveBreak(id: breakID, reason: parsed.reason, actor: signedIn.principal.actor)
            let batch = view.reflected.result.batchID
            return ConsolePages.seeOther(Self.path("settlements", batch) + "?done=resolve")
        } catch let error as ServiceError {
            return try await resolveRefused(breakID, batchID: batchID, APIError(error), reason: reason, signedIn)
        } catch let error as APIError {
            return try await resolveRefused(breakID, batchID: batchID, error, reason: reason, signedIn)
        }
    }

    func resolveRefused(_ breakID: String, batchID: String, _ error: APIError, reason: String, _ signedIn: SignedIn) async throws -> Response {
        if error.status == .notFound || error.status.code >= 500 || batchID.isEmpty { throw error }
        let form = ResolveForm(reason: reason, error: .init(code: error.code, message: error.message))
        return try await batchPage(id: batchID, signedIn, resolving: (breakID, form), status: error.status)
    }
}

// MARK: Downloads

extension ConsoleRoutes {
    /// `GET /console/settlements/{id}/report.csv`: the acquirer's report of the batch as stored, byte for byte (the API's
    /// `GET /settlements/{id}/report.csv`).
    func batchReportDownload(id: String) async throws -> Response {
        guard let writeReport = try await settlement.reportCSV(id: id) else { throw APIError.notFound("no settlement report for \(id)") }
        return Self.download(name: "report-\(id).csv", type: "text/csv; charset=utf-8") { write in try await writeReport(write) }
    }

    /// The columns of a batch's items file.
    static let itemColumns = [
        "position", "kind", "order_id", "modification_reference", "psp_modification_reference", "amount", "currency", "recorded_at",
    ]

    /// `GET /console/settlements/{id}/items.csv`: every capture and refund the batch settled, streamed, with cells a
    /// spreadsheet cannot run as formulas (``CSVWriter/Cells/spreadsheetSafe``).
    func batchItemsDownload(id: String) async throws -> Response {
        guard try await settlement.batch(id: id) != nil else { throw APIError.notFound("no settlement batch \(id)") }
        let settlement = self.settlement
        return Self.download(name: "items-\(id).csv", type: "text/csv; charset=utf-8") { write in
            try await write(CSVWriter.record(Self.itemColumns, .spreadsheetSafe))
            var chunk = ""
            try await settlement.forEachBatchItem(id: id) { item in
                chunk += CSVWriter.record(
                    [
                        "\(item.position)", item.kind.rawValue, item.orderID, item.modificationReference, item.pspModificationReference,
                        item.amount.decimalString, item.amount.currency.code, ConsolePages.time(item.recordedAt),
                    ],
                    .spreadsheetSafe
                )
                if chunk.utf8.count > 64 * 1024 {
                    try await write(chunk)
                    chunk = ""
                }
            }
            if !chunk.isEmpty { try await write(chunk) }
        }
    }
}

// MARK: Report upload

extension ConsoleRoutes {
    /// The fields of an upload form, gathered while its file part streams to the spool (one task reads the body).
    final class UploadFields: @unchecked Sendable {
        var fields: [String: String] = [:]
        var files: [String] = []
    }

    /// The request body's bytes of the form's file part `fileField`, as they arrive, the other fields gathered into `box`.
    struct FilePart<Base: AsyncSequence>: AsyncSequence where Base.Element == ByteBuffer {
        typealias Element = [UInt8]
        let base: Base
        let reader: MultipartFormReader
        let box: UploadFields
        let fileField: String

        func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), reader: reader, box: box, fileField: fileField) }

        struct Iterator: AsyncIteratorProtocol {
            var base: Base.AsyncIterator
            var reader: MultipartFormReader
            let box: UploadFields
            let fileField: String
            var pending: [[UInt8]] = []
            var inFile = false
            var ended = false

            mutating func next() async throws -> [UInt8]? {
                while true {
                    if !pending.isEmpty { return pending.removeFirst() }
                    if ended { return nil }
                    guard let chunk = try await base.next() else {
                        try reader.finish()
                        ended = true
                        continue
                    }
                    for event in try reader.feed(chunk.readableBytesView) {
                        switch event {
                        case .field(let name, let value): box.fields[name] = value
                        case .fileStart(let name, _):
                            box.files.append(name)
                            inFile = name == fileField && box.files.filter { $0 == fileField }.count == 1
                        case .fileBytes(let bytes): if inFile { pending.append(bytes) }
                        case .fileEnd: inFile = false
                        }
                    }
                }
            }
        }
    }

    /// The signed-in operator of an upload form's request (the form itself is read by ``spoolUpload(_:_:fileField:what:)``).
    func operatorSignedIn(_ request: Request) throws -> SignedIn {
        guard let signedIn = signedIn(request) else { throw APIError.unauthenticated("sign in to the console first: no session, or it ended") }
        guard signedIn.isOperator else { throw APIError(status: .forbidden, code: "forbidden", message: "this action needs an operator key") }
        return signedIn
    }

    /// The steps every upload form shares (the report's and the statement's): the body must be `multipart/form-data`; the
    /// file part `fileField` streams to a 0600 spool file as it arrives (at most `LEDGERD_REPORT_MAX_BYTES`), the other
    /// fields gathered beside it; and the form's CSRF token is checked before anything is read from the spool (a wrong one
    /// removes the spool). The caller removes the returned spool when done.
    func spoolUpload(_ request: Request, _ signedIn: SignedIn, fileField: String, what: String) async throws -> (ReportUpload, UploadFields) {
        guard let contentType = request.headers[.contentType], let reader = MultipartFormReader(contentType: contentType) else {
            throw APIError(
                status: .unsupportedMediaType,
                code: "unsupported_media_type",
                message: "\(what) is sent as the upload form sends it: multipart/form-data with a boundary"
            )
        }
        let box = UploadFields()
        let upload: ReportUpload
        do {
            upload = try await ReportUpload.spool(FilePart(base: request.body, reader: reader, box: box, fileField: fileField), limit: reportLimit)
        } catch is ReportUpload.TooLarge {
            throw SettlementRoutes.uploadTooLarge(reportLimit, what: what)
        } catch let failure as MultipartFormReader.Failure {
            throw APIError.badRequest("invalid_form", failure.message)
        }
        guard let token = box.fields["csrf_token"], ConsoleSessions.tokensEqual(token, signedIn.session.csrfToken) else {
            upload.remove()
            throw APIError(status: .forbidden, code: "csrf_token_invalid", message: "the form's CSRF token is missing or not this session's")
        }
        return (upload, box)
    }

    /// `POST /console/reports` (`multipart/form-data`: `csrf_token`, `format`, `batch`, the `report` file): an operator
    /// uploads an acquirer's settlement report (Adyen SDR or PAR, Stripe; the API's `POST /reconciliation/reports`).
    /// The file streams to a 0600 spool file as it arrives (the API's limit, `LEDGERD_REPORT_MAX_BYTES`), the form's
    /// CSRF token is checked before anything is read from the spool, and the reconciliation's breaks are shown on the
    /// batch's page. A refusal (no file, an unknown format or batch, a report that does not parse): the settlement page
    /// again with the API's error beside the file field, nothing appended.
    func uploadReport(_ request: Request) async throws -> Response {
        let signedIn = try operatorSignedIn(request)
        let (upload, box) = try await spoolUpload(request, signedIn, fileField: "report", what: "the report")
        defer { upload.remove() }
        var typed = RunForm(csrfToken: signedIn.session.csrfToken, lastClosed: settlement.lastClosedBusinessDay().description)
        if bank != nil { typed.bank = BankForm() }
        let formatText = (box.fields["format"] ?? "").trimmingCharacters(in: .whitespaces)
        typed.formats = SettlementReportFormat.allCases.map { StatusOption(name: $0.rawValue, selected: $0.rawValue == formatText) }
        typed.batch = (box.fields["batch"] ?? "").trimmingCharacters(in: .whitespaces)
        do {
            guard box.files.contains("report"), upload.byteCount > 0 else {
                throw APIError.badRequest("missing_report", "choose the report file to upload (it is empty or missing)", field: "report")
            }
            let (format, batch) = try SettlementRoutes.reportTarget(
                format: formatText.isEmpty ? nil : formatText,
                batch: typed.batch.isEmpty ? nil : typed.batch
            )
            let view = try await settlement.reconcileReport(upload, format: format, batchID: batch)
            let result = view.reflected.result
            return ConsolePages.seeOther(Self.path("settlements", result.batchID) + "?done=reconcile")
        } catch {
            let api = StartedSettlementRun.apiError(error)
            guard api.status.code < 500 else { throw api }
            typed.uploadError = .init(code: api.code, message: api.message)
            return try await settlementList(request, signedIn, runForm: typed, status: api.status)
        }
    }
}

// MARK: Bank statement upload

extension ConsoleRoutes {
    /// `POST /console/bank/statements` (`multipart/form-data`: `csrf_token`, `format`, the `statement` file): an operator
    /// imports a bank statement file (camt.053, camt.054, MT940, BAI2; the API's `POST /bank/statements`, the same
    /// service). Streamed to a 0600 spool file as it arrives (`LEDGERD_REPORT_MAX_BYTES`), the CSRF token checked before
    /// the spool is read; the settlement page then shows each statement and what was stored. A refusal (no file, a
    /// statement that does not add up, a malformed file): the page again with the API's error beside the file field,
    /// nothing appended.
    func uploadStatement(_ request: Request) async throws -> Response {
        let signedIn = try operatorSignedIn(request)
        guard let bank else { throw APIError.notFound("bank statements are not imported here") }
        let (upload, box) = try await spoolUpload(request, signedIn, fileField: "statement", what: "the statement file")
        defer { upload.remove() }
        var typed = RunForm(csrfToken: signedIn.session.csrfToken, lastClosed: settlement.lastClosedBusinessDay().description)
        let formatText = (box.fields["format"] ?? "").trimmingCharacters(in: .whitespaces)
        var form = BankForm()
        form.formats = BankStatementService.formatNames.map { StatusOption(name: $0, selected: $0 == formatText) }
        do {
            guard box.files.contains("statement"), upload.byteCount > 0 else {
                throw APIError.badRequest("missing_statement", "choose the statement file to upload (it is empty or missing)", field: "statement")
            }
            let summary = try await bank.importStatements(upload, format: formatText.isEmpty ? nil : formatText, actor: signedIn.principal.actor)
            typed.bank = form
            return try await settlementList(request, signedIn, runForm: typed, bankImport: BankImportView(summary))
        } catch {
            let api = StartedSettlementRun.apiError(error)
            guard api.status.code < 500 else { throw api }
            form.error = .init(code: api.code, message: api.message)
            typed.bank = form
            return try await settlementList(request, signedIn, runForm: typed, status: api.status)
        }
    }
}
