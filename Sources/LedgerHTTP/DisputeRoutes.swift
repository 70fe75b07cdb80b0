import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// Back-office dispute routes:
/// - operator or auditor key: `GET /disputes?status=&due_before=`, `GET /disputes/{id}` (with its history);
/// - operator key: `POST /disputes/{id}/defend {"evidence_refs": [...]}`, `POST /disputes/{id}/accept`.
/// A refused answer (illegal in the dispute's stage, past its deadline) is a 4xx and appends nothing.
public struct DisputeRoutes: Sendable {
    let disputes: DisputeService

    public init(disputes: DisputeService) { self.disputes = disputes }

    public func registerReads(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/disputes") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            for key in Set(parameters.map { String($0.key) }).sorted() where key != "status" && key != "due_before" {
                throw APIError.badRequest("unknown_parameter", "disputes are listed by status and due_before only", field: key)
            }
            var status: DisputeStatus?
            if let text = parameters["status"].map(String.init) {
                guard let parsed = DisputeStatus(rawValue: text) else {
                    let known = DisputeStatus.allCases.map(\.rawValue).joined(separator: ", ")
                    throw APIError.badRequest("invalid_parameter", "status must be one of \(known)", field: "status")
                }
                status = parsed
            }
            let dueBefore = try OrderRoutes.date(parameters["due_before"].map(String.init), field: "due_before")
            return try jsonResponse(DisputeListReply(try await disputes.list(status: status, dueBefore: dueBefore)))
        }
        group.get("/disputes/:id") { _, context -> Response in
            let id = try context.parameters.require("id")
            guard let view = try await disputes.dispute(id: id) else { throw APIError.notFound("no dispute \(id)") }
            return jsonResponse(try view.reply())
        }
    }

    public func registerChanges(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/disputes/:id/defend") { request, context -> Response in
            let id = try context.parameters.require("id")
            let refs = try await StrictJSON.decode(DefenceBody.self, of: request).evidenceRefs
            let view = try await disputes.defend(id: id, evidenceRefs: refs, actor: context.actor)
            return jsonResponse(try view.reply())
        }
        group.post("/disputes/:id/accept") { request, context -> Response in
            let id = try context.parameters.require("id")
            _ = try await StrictJSON.decode(EmptyBody.self, of: request)
            return jsonResponse(try await disputes.accept(id: id, actor: context.actor).reply())
        }
    }
}

/// `POST /disputes/{id}/defend {evidence_refs}`: up to 50 references to the evidence sent to the acquirer.
struct DefenceBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable { case evidenceRefs = "evidence_refs" }
    static let subject = "a defence"
    let evidenceRefs: [String]
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: Member.self)
        guard body.holds(.evidenceRefs) else { throw RequestFields.missing("evidence_refs") }
        guard let elements = try? body.decode([JSONValue].self, forKey: .evidenceRefs), elements.count <= 50 else {
            throw Self.invalid("evidence_refs must be an array of up to 50 references")
        }
        // The references go into the dispute's events (jsonb): U+0000 cannot be stored there (it was a 500 for the
        // other string lists, schemathesis, issue 31), and no control character belongs in a reference.
        evidenceRefs = try elements.map {
            guard case .string(let text) = $0 else { throw Self.invalid("each evidence reference is a string") }
            guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw Self.invalid("an evidence reference must not contain control characters")
            }
            return text
        }
    }

    static func invalid(_ message: String) -> APIError {
        APIError(status: .unprocessableContent, code: "invalid_evidence", message: message, field: "evidence_refs")
    }
}
