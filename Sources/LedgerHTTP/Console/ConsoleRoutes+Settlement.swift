import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

// Settlement: the batches by business day, a batch's figures (its IC++ decomposition and payout) and reconciliation with
// each break, and an operator's resolution of a break with a note (an event), through ``SettlementOperator`` as the
// API's routes read and resolve.

extension ConsoleRoutes {
    struct BatchRow {
        let id: String
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
    }

    struct BreakView {
        let id: String
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
        let counts: [ConsolePages.Figure]
        let breaks: [BreakView]
    }

    /// The batches of business days `from`…`to` (`YYYY-MM-DD`; by default the last 30 days), by day.
    func settlementList(_ request: Request, _ signedIn: SignedIn) async throws -> Response {
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
        let first = from ?? Self.day(calendar.date(byAdding: .day, value: -29, to: calendar.startOfDay(for: now))!, calendar)
        let last = to ?? Self.day(now, calendar)
        let rows = try await settlement.batches(from: first, to: last).map { batch in
            BatchRow(
                id: batch.opened.batchID,
                businessDate: batch.opened.businessDate.description,
                currency: batch.opened.currency.code,
                stage: batch.stage.rawValue,
                items: batch.closed.map { "\($0.captureCount) / \($0.refundCount)" } ?? "—",
                gross: batch.closed?.gross.decimalString ?? "—",
                net: batch.cleared?.net.decimalString ?? "—",
                payout: batch.payout.map { "\($0.amount.decimalString) on \($0.valueDate)" } ?? "—"
            )
        }
        return ConsolePages.render(
            "settlements",
            BatchesPage(session: signedIn.view, from: first, to: last, fromError: nil, toError: nil, rows: rows)
        )
    }

    /// A batch: its stages' figures and its reconciliation (the view `GET /settlements/{id}/reconciliation` reads),
    /// each break with its evidence on both sides and its resolution; an operator's resolve form on each open one.
    func batchPage(
        id: String,
        _ signedIn: SignedIn,
        resolving: (breakID: String, form: ResolveForm)? = nil,
        notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        guard let batch = try await settlement.batch(id: id) else { throw APIError.notFound("no settlement batch \(id)") }
        let code = batch.opened.currency.code
        var figures = [
            ConsolePages.Figure(label: "business date", value: batch.opened.businessDate.description),
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
        let breaks = (view?.breaks ?? []).map { entry -> BreakView in
            let resolution = entry.resolution
            let open = resolution == nil
            var form: ResolveForm?
            if open && signedIn.isOperator {
                form = resolving?.breakID == entry.found.breakID ? resolving?.form : ResolveForm(reason: "", error: nil)
            }
            return BreakView(
                id: entry.found.breakID,
                breakClass: entry.found.breakClass.rawValue,
                reference: entry.found.reference,
                expected: entry.found.expected ?? "—",
                actual: entry.found.actual ?? "—",
                detail: entry.found.detail,
                resolved: !open,
                resolution: resolution.map { "\($0.reason) (\($0.resolvedBy))" } ?? "",
                form: form
            )
        }
        let counts: [ConsolePages.Figure] =
            view.map {
                [
                    .init(label: "report lines", value: "\($0.result.reportLines)"), .init(label: "ledger items", value: "\($0.result.ledgerItems)"),
                    .init(label: "matched", value: "\($0.result.matched)"), .init(label: "open breaks", value: "\($0.openBreaks)"),
                    .init(label: "window closed", value: $0.result.windowClosed ? "yes" : "no"),
                ]
            } ?? []
        let page = BatchPage(
            title: "Batch \(id)",
            session: signedIn.view,
            csrfToken: signedIn.session.csrfToken,
            id: id,
            batchID: id,
            notice: notice,
            figures: figures,
            reconciled: view != nil,
            counts: counts,
            breaks: breaks
        )
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
            return ConsolePages.seeOther("/console/settlements/\(Self.pathSegment(batch))?done=resolve")
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
