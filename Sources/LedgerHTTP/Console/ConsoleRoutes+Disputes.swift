import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

// Disputes: the queue by status and deadline, a dispute's page with its stages, and an operator's answers (defend with
// evidence references, accept) through the dispute use cases the API's routes call (``DisputeService``).

extension ConsoleRoutes {
    struct DisputeQueueRow {
        let id: String
        let path: String
        let orderID: String
        let orderPath: String
        let status: String
        let reason: String
        let dueAt: String
        let amount: String
        let overdue: Bool
    }

    struct DisputeQueuePage {
        let title = "Disputes"
        let session: ConsolePages.SessionView
        let statuses: [StatusOption]
        let statusError: ConsolePages.ErrorView?
        let rows: [DisputeQueueRow]
        var next: String? = nil
        /// The queue with its filter as a CSV download.
        var exportPath: String? = nil
    }

    /// Disputes on a page of the queue.
    static let disputesPageSize = 50

    struct DisputeStage {
        let position: Int64
        let recordedAt: String
        let type: String
        let actor: String
        let data: String
    }

    struct DisputeForms {
        let evidence: String
        let defendError: ConsolePages.ErrorView?
        let acceptError: ConsolePages.ErrorView?
    }

    struct DisputePage {
        let title: String
        let session: ConsolePages.SessionView
        let csrfToken: String
        let id: String
        let path: String
        let orderID: String
        let orderPath: String
        let status: String
        let orderStatus: String
        let reason: String
        let amount: String
        let chargedBack: String
        let reversed: String
        let dueAt: String
        let overdue: Bool
        let evidence: [String]
        let notice: String?
        let stages: [DisputeStage]
        let forms: DisputeForms?
    }

    /// Every dispute, the soonest deadline first (those without one last), an open one past its deadline marked; by
    /// status when one is chosen.
    func disputeQueue(_ request: Request, _ signedIn: SignedIn) async throws -> Response {
        let chosen = request.uri.queryParameters["status"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let status = chosen.flatMap(DisputeStatus.init(rawValue:))
        let statuses = DisputeStatus.allCases.map { StatusOption(name: $0.rawValue, selected: $0.rawValue == chosen) }
        if chosen != nil, status == nil {
            let known = DisputeStatus.allCases.map(\.rawValue).joined(separator: ", ")
            let page = DisputeQueuePage(
                session: signedIn.view,
                statuses: statuses,
                statusError: .init(code: "invalid_parameter", message: "status must be one of \(known)"),
                rows: []
            )
            return ConsolePages.render("disputes", page, status: .badRequest)
        }
        let now = clock()
        let disputes = try await self.disputes.list(status: status, dueBefore: nil).sorted {
            switch ($0.dueAt, $1.dueAt) {
            case (let a?, let b?): a < b || (a == b && $0.disputeID < $1.disputeID)
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): $0.disputeID < $1.disputeID
            }
        }
        let shown = ConsolePages.page(disputes, page: request.uri.queryParameters["page"].map(String.init), size: Self.disputesPageSize)
        let rows = shown.items.map { dispute in
            DisputeQueueRow(
                id: dispute.disputeID,
                path: Self.path("disputes", dispute.disputeID),
                orderID: dispute.orderID.rawValue,
                orderPath: Self.path("orders", dispute.orderID.rawValue),
                status: dispute.status.rawValue,
                reason: Self.reason(dispute.reason),
                dueAt: dispute.dueAt.map(ConsolePages.time) ?? "—",
                amount: dispute.amount.description,
                overdue: !dispute.status.isClosed && dispute.dueAt.map { $0 < now } == true
            )
        }
        var page = DisputeQueuePage(session: signedIn.view, statuses: statuses, statusError: nil, rows: Array(rows))
        page.next = shown.next.map { "/console/disputes?page=\($0)" + (chosen.map { "&status=\($0)" } ?? "") }
        page.exportPath = "/console/disputes.csv" + (chosen.map { "?status=\($0)" } ?? "")
        return ConsolePages.render("disputes", page)
    }

    static func reason(_ reason: DisputeReason) -> String {
        "\(reason.network.rawValue) \(reason.code)\(reason.title.map { " — \($0)" } ?? "")"
    }

    func disputePage(
        id: String,
        _ signedIn: SignedIn,
        forms: DisputeForms? = nil,
        notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        guard let view = try await disputes.dispute(id: id) else { throw APIError.notFound("no dispute \(id)") }
        let state = view.state
        let page = DisputePage(
            title: "Dispute \(id)",
            session: signedIn.view,
            csrfToken: signedIn.session.csrfToken,
            id: id,
            path: Self.path("disputes", id),
            orderID: state.orderID.rawValue,
            orderPath: Self.path("orders", state.orderID.rawValue),
            status: state.status.rawValue,
            orderStatus: view.orderStatus?.rawValue ?? "—",
            reason: Self.reason(state.reason),
            amount: state.amount.description,
            chargedBack: state.chargedBack.description,
            reversed: state.reversed.description,
            dueAt: state.dueAt.map(ConsolePages.time) ?? "—",
            overdue: !state.status.isClosed && state.dueAt.map { $0 < clock() } == true,
            evidence: state.evidenceRefs,
            notice: notice,
            stages: view.history.map {
                DisputeStage(
                    position: $0.position,
                    recordedAt: ConsolePages.time($0.recordedAt),
                    type: $0.type,
                    actor: $0.actor ?? "",
                    data: $0.data
                )
            },
            forms: signedIn.isOperator ? (forms ?? DisputeForms(evidence: "", defendError: nil, acceptError: nil)) : nil
        )
        return ConsolePages.render("dispute", page, status: status)
    }

    /// Defends the dispute with the evidence references typed one per line (read by the API's own parser of
    /// `{"evidence_refs": [...]}`, so its limits and errors are the API's), or accepts it. Done: back to the dispute
    /// (303); refused: the page again with the API's code and message beside the form.
    func answerDispute(_ answer: String, id: String, form: ConsoleForm, _ signedIn: SignedIn) async throws -> Response {
        let evidence = form["evidence_refs"] ?? ""
        do {
            if answer == "defend" {
                let references = evidence.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }
                let body = try JSONSerialization.data(withJSONObject: ["evidence_refs": references])
                let parsed = try StrictJSON.decode(DefenceBody.self, from: ByteBuffer(bytes: body))
                _ = try await disputes.defend(id: id, evidenceRefs: parsed.evidenceRefs, actor: signedIn.principal.actor)
            } else {
                // Accepting closes the dispute lost: confirmed on a page of its own first (issue 55).
                guard Self.isConfirmed(form) else { return try await acceptConfirmation(id: id, signedIn) }
                _ = try await disputes.accept(id: id, actor: signedIn.principal.actor)
            }
        } catch let error as ServiceError {
            return try await disputeRefused(answer, id: id, APIError(error), evidence: evidence, signedIn)
        } catch let error as APIError {
            return try await disputeRefused(answer, id: id, error, evidence: evidence, signedIn)
        }
        return ConsolePages.seeOther(Self.path("disputes", id) + "?done=\(answer)")
    }

    func disputeRefused(_ answer: String, id: String, _ error: APIError, evidence: String, _ signedIn: SignedIn) async throws -> Response {
        if error.status == .notFound || error.status.code >= 500 { throw error }
        let shown = ConsolePages.ErrorView(code: error.code, message: error.message)
        let forms = DisputeForms(
            evidence: evidence,
            defendError: answer == "defend" ? shown : nil,
            acceptError: answer == "accept" ? shown : nil
        )
        return try await disputePage(id: id, signedIn, forms: forms, status: error.status)
    }
}
