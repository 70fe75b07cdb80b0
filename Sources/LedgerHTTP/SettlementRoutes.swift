import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// - operator key: `POST /settlements/run {"business_date": "YYYY-MM-DD"}` (no date: the last business day whose
///   cut-off has passed, by the daemon's settings; `{"close_now": true}`: the open business day, closed now by the
///   caller — see ``SettlementDay/openDayNow(requestedBy:)``),
///   `POST /reconciliation/breaks/{id}/resolve {"reason": …}`, `POST /reconciliation/reports` (a report CSV);
/// - operator or auditor key: `GET /settlements?from=&to=`, `GET /settlements/{id}`,
///   `GET /settlements/{id}/report.csv`, `GET /settlements/{id}/reconciliation`;
///   `GET /settlements/{id}?as_of=<position | RFC 3339 time>` — the batch as of then (see ``StateHistory``).
public struct SettlementRoutes: Sendable {
    let settlement: SettlementService
    /// Answers `GET /settlements/{id}?as_of=` (without it, `as_of` is refused).
    let state: (StateHistory)?
    /// The largest report upload (`LEDGERD_REPORT_MAX_BYTES`); a larger one is refused (413) as soon as
    /// its bytes pass it.
    let reportLimit: Int

    public init(settlement: SettlementService, state: (StateHistory)? = nil, reportLimit: Int = 256 * 1024 * 1024) {
        self.settlement = settlement
        self.state = state
        self.reportLimit = reportLimit
    }

    /// The run as newline-delimited JSON (`Accept: application/x-ndjson`), one ``SettlementRunLine``
    /// per line: `{"progress": …}` lines as the job goes, then `{"summary": …}`, or
    /// `{"error": {"code", "message"}}` if it fails after it started. A refusal before any progress
    /// (a bad date, the cut-off not reached) is the usual 4xx reply.
    static func streamingRun(_ settlement: SettlementService, day: SettlementDay) async throws -> Response {
        let run = try await StartedSettlementRun.start(settlement, day: day)
        return streamedResponse(contentType: "application/x-ndjson") { write in
            try await run.stream { line in
                let typed: SettlementRunLine
                switch line {
                case .progress(let step): typed = SettlementRunLine(step)
                case .summary(let summary): typed = SettlementRunLine(summary)
                case .failure(let error):
                    let api = StartedSettlementRun.apiError(error)
                    typed = SettlementRunLine(failure: .init(code: api.code, message: api.message))
                }
                try await write(try WireJSON.encode(typed) + "\n")
            }
        }
    }

    /// The day a run's body asks for: the open day closed now by `actor`, the date given, or the last business day whose
    /// cut-off has passed.
    static func day(of body: SettlementRunBody, actor: String, _ settlement: SettlementService) -> SettlementDay {
        body.closeNow ? .openDayNow(requestedBy: actor) : .businessDate(body.businessDate ?? settlement.lastClosedBusinessDay())
    }

    /// An upload's `format` (nil: the header's) and `batch` (nil: the batch the report names), as given; refused when
    /// not a known format or not a batch id.
    static func reportTarget(format text: String?, batch: String?) throws(APIError) -> (SettlementReportFormat?, String?) {
        var format: SettlementReportFormat?
        if let text {
            guard let named = SettlementReportFormat(rawValue: text) else {
                let known = SettlementReportFormat.allCases.map(\.rawValue).joined(separator: ", ")
                throw APIError.badRequest("invalid_parameter", "format must be one of \(known)", field: "format")
            }
            format = named
        }
        // Counted in characters (Unicode scalars), as the document's maxLength is.
        if let batch, batch.isEmpty || batch.unicodeScalars.count > 100 {
            throw APIError.badRequest("invalid_parameter", "batch must be a settlement batch id", field: "batch")
        }
        return (format, batch)
    }

    /// The one refusal of an uploaded file over `LEDGERD_REPORT_MAX_BYTES` (`what`: "the report", "the statement file").
    static func uploadTooLarge(_ limit: Int, what: String = "the report") -> APIError {
        APIError(status: .contentTooLarge, code: "payload_too_large", message: "\(what) is larger than \(limit) bytes (LEDGERD_REPORT_MAX_BYTES)")
    }

    public func registerChanges(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/settlements/run") { request, context -> Response in
            let day = Self.day(of: try await StrictJSON.decode(SettlementRunBody.self, of: request), actor: context.actor, settlement)
            guard request.headers[.accept]?.contains("application/x-ndjson") == true else {
                return try jsonResponse(SettlementRunReply(try await settlement.run(day, progress: nil)))
            }
            return try await Self.streamingRun(settlement, day: day)
        }
        group.post("/reconciliation/reports") { [reportLimit] request, _ -> Response in
            let parameters = request.uri.queryParameters
            let (format, batch) = try Self.reportTarget(format: parameters["format"].map(String.init), batch: parameters["batch"].map(String.init))
            // Streamed to a 0600 spool file as it arrives (memory holds a chunk), refused once past the limit.
            let upload: ReportUpload
            do { upload = try await ReportUpload.spool(request.body.map { $0.readableBytesView }, limit: reportLimit) } catch is ReportUpload.TooLarge
            {
                throw Self.uploadTooLarge(reportLimit)
            }
            defer { upload.remove() }
            return try jsonResponse(ReconciliationReply(try await settlement.reconcileReport(upload, format: format, batchID: batch)))
        }
        group.post("/reconciliation/breaks/:id/resolve") { request, context -> Response in
            let id = try context.parameters.require("id")
            let reason = try await StrictJSON.decode(ResolutionBody.self, of: request).reason
            let actor = context.actor
            return try jsonResponse(ReconciliationReply(try await settlement.resolveBreak(id: id, reason: reason, actor: actor)))
        }
    }

    public func registerReads(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/settlements") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            let batches = try await settlement.batches(from: parameters["from"].map(String.init), to: parameters["to"].map(String.init))
            return try jsonResponse(SettlementListReply(batches))
        }
        group.get("/settlements/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            if let asOf = try StateRoutes.asOf(request) {
                guard let state else { throw APIError.badRequest("invalid_parameter", "as_of is not served here", field: "as_of") }
                return try await StateRoutes.settlementResponse(state, id: id, asOf: asOf)
            }
            guard let batch = try await settlement.batch(id: id) else { throw APIError.notFound("no settlement batch \(id)") }
            return try jsonResponse(SettlementBatchReply(batch))
        }
        group.get("/settlements/:id/reconciliation") { _, context -> Response in
            let id = try context.parameters.require("id")
            guard let view = try await settlement.reconciliation(id: id) else { throw APIError.notFound("no reconciliation for \(id)") }
            return try jsonResponse(ReconciliationReply(view))
        }
        group.get("/settlements/:id/report.csv") { _, context -> Response in
            let id = try context.parameters.require("id")
            guard let writeReport = try await settlement.reportCSV(id: id) else { throw APIError.notFound("no settlement report for \(id)") }
            return streamedResponse(contentType: "text/csv; charset=utf-8") { write in try await writeReport(write) }
        }
    }
}

/// `POST /settlements/run {business_date?, close_now?}`: without a date, the last business day whose cut-off has
/// passed (the daemon's settings); `close_now: true` (without a date) closes the open business day now.
struct SettlementRunBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable {
        case businessDate = "business_date"
        case closeNow = "close_now"
    }
    static let subject = "a settlement run"
    let businessDate: BusinessDate?
    let closeNow: Bool
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Member.self)
        closeNow = try container.optionalFlag(.closeNow) ?? false
        // Absent or null: the daemon's own choice.
        guard let text = try container.optionalText(.businessDate, maximumLength: 10) else {
            businessDate = nil
            return
        }
        guard !closeNow else {
            throw RequestFields.invalid("close_now", "close_now closes the open business day: give it without business_date, or the date alone")
        }
        guard let date = BusinessDate(text) else {
            throw APIError(
                status: .unprocessableContent,
                code: "invalid_date",
                message: "business_date must be a date YYYY-MM-DD",
                field: "business_date"
            )
        }
        businessDate = date
    }
}

/// `POST /reconciliation/breaks/{id}/resolve {reason}`.
struct ResolutionBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable { case reason }
    static let subject = "a resolution"
    let reason: String
    init(from decoder: any Decoder) throws {
        reason = try decoder.container(keyedBy: Member.self).text(.reason, maximumLength: 500)
    }
}

/// A settlement run started in a task of its own, its steps read as they happen: ``start(_:day:)`` waits for the first
/// (a refusal before any step is thrown, so it is the usual 4xx reply), ``stream(_:)`` hands that one and the rest
/// to a writer as they come. The API's NDJSON reply and the console's streamed page both read a run this way.
struct StartedSettlementRun: Sendable {
    enum Line: Sendable {
        case progress(SettlementProgress)
        case summary(SettlementRunSummary)
        case failure(any Error)
    }

    /// Hands the stream's iterator to the response body (it is used by one task at a time).
    struct UncheckedIterator: @unchecked Sendable { var iterator: AsyncStream<Line>.Iterator }

    let first: Line
    let rest: UncheckedIterator
    let job: Task<Void, Never>

    static func start(_ settlement: SettlementService, day: SettlementDay) async throws -> StartedSettlementRun {
        let (lines, continuation) = AsyncStream<Line>.makeStream()
        let job = Task {
            do {
                let summary = try await settlement.run(day) { step in continuation.yield(.progress(step)) }
                continuation.yield(.summary(summary))
            } catch {
                continuation.yield(.failure(error))
            }
            continuation.finish()
        }
        var iterator = lines.makeAsyncIterator()
        guard let first = await iterator.next() else { throw APIError.unavailable("the settlement run ended without an answer") }
        if case .failure(let error) = first { throw error }
        return StartedSettlementRun(first: first, rest: UncheckedIterator(iterator: iterator), job: job)
    }

    /// Every line in order, the first included; returns when the run has ended.
    func stream(_ body: (Line) async throws -> Void) async throws {
        try await body(first)
        var rest = self.rest.iterator
        while let line = await rest.next() { try await body(line) }
        _ = await job.value
    }

    /// A failure after the run started, as the API states it (an internal failure's message stays opaque).
    static func apiError(_ error: any Error) -> APIError {
        error as? APIError ?? (error as? ServiceError).map(APIError.init)
            ?? APIError(status: .internalServerError, code: "internal_error", message: "the settlement run failed")
    }
}
