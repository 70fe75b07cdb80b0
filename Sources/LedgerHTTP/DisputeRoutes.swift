import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// The dispute use cases the routes need (filled by `DisputeService` in the wiring).
public protocol DisputeOperator: Sendable {
    func list(status: DisputeStatus?, dueBefore: Date?) async throws -> [DisputeState]
    func dispute(id: String) async throws -> DisputeView?
    func defend(id: String, evidenceRefs: [String], actor: String) async throws -> DisputeView
    func accept(id: String, actor: String) async throws -> DisputeView
}

/// Back-office dispute routes:
/// - operator or auditor key: `GET /disputes?status=&due_before=`, `GET /disputes/{id}` (with its history);
/// - operator key: `POST /disputes/{id}/defend {"evidence_refs": [...]}`, `POST /disputes/{id}/accept`.
/// A refused answer (illegal in the dispute's stage, past its deadline) is a 4xx and appends nothing.
public struct DisputeRoutes: Sendable {
    let disputes: any DisputeOperator

    public init(disputes: any DisputeOperator) { self.disputes = disputes }

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
            let object = try await Self.body(request, allowed: ["evidence_refs"])
            guard let field = object["evidence_refs"] else {
                throw APIError(status: .unprocessableContent, code: "missing_field", message: "evidence_refs is required", field: "evidence_refs")
            }
            guard case .array(let elements) = field, elements.count <= 50 else {
                throw APIError(
                    status: .unprocessableContent,
                    code: "invalid_evidence",
                    message: "evidence_refs must be an array of up to 50 references",
                    field: "evidence_refs"
                )
            }
            var refs: [String] = []
            for element in elements {
                guard case .string(let text) = element else {
                    throw APIError(
                        status: .unprocessableContent,
                        code: "invalid_evidence",
                        message: "each evidence reference is a string",
                        field: "evidence_refs"
                    )
                }
                refs.append(text)
            }
            let view = try await disputes.defend(id: id, evidenceRefs: refs, actor: context.actor)
            return jsonResponse(try view.reply())
        }
        group.post("/disputes/:id/accept") { request, context -> Response in
            let id = try context.parameters.require("id")
            _ = try await Self.body(request, allowed: [])
            return jsonResponse(try await disputes.accept(id: id, actor: context.actor).reply())
        }
    }

    /// A JSON object body (an empty body is `{}`) with only `allowed` members.
    static func body(_ request: Request, allowed: Set<String>) async throws -> [String: JSONValue] {
        let buffer: ByteBuffer
        buffer = try await StrictJSON.body(of: request, limit: 16 * 1024)
        let bytes = Data(buffer.readableBytesView)
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: bytes) else {
            throw APIError.badRequest("invalid_json", "the body must be a JSON object")
        }
        for key in object.keys.sorted() where !allowed.contains(key) {
            throw APIError.badRequest("unknown_field", "this request does not take \(key)", field: key)
        }
        return object
    }
}
