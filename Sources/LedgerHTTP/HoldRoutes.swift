import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// Parsing a hold operation's body strictly into the hold service's input.
extension HoldOperationRequest {
    /// The fields each operation accepts; anything else in the body is refused.
    static func allowedFields(_ kind: Kind) -> Set<String> {
        switch kind {
        case .capture: return ["amount", "final"]
        case .increment: return ["amount"]
        case .void: return ["amount"]
        case .refund: return ["amount", "reason"]
        case .ship: return ["carrier", "tracking"]
        }
    }

    /// Parses a JSON object body (an empty body is `{}`) strictly: known fields of the right type only.
    public static func parse(kind: Kind, body: ByteBuffer) throws -> HoldOperationRequest {
        let bytes = Data(body.readableBytesView)
        var object: [String: PaymentRequest.JSONField] = [:]
        if !bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            guard let parsed = try? JSONDecoder().decode([String: PaymentRequest.JSONField].self, from: bytes) else {
                throw APIError.badRequest("invalid_json", "the body must be a JSON object")
            }
            object = parsed
        }
        for key in object.keys.sorted() where !allowedFields(kind).contains(key) {
            throw APIError.badRequest("unknown_field", "\(kind.rawValue) does not take \(key)", field: key)
        }
        let fields = PaymentRequest.Fields(object)
        var request = HoldOperationRequest(kind: kind)
        request.amount = try fields.optionalString("amount")
        request.isFinal = try fields.optionalBool("final") ?? false
        request.carrier = try fields.optionalString("carrier")
        request.tracking = try fields.optionalString("tracking")
        switch kind {
        case .increment:
            request.amount = try fields.string("amount")
        case .refund:
            request.amount = try fields.string("amount")
            request.reason = try fields.string("reason", maximumLength: 200)
        case .capture, .void, .ship: break
        }
        for (name, value) in [("carrier", request.carrier), ("tracking", request.tracking)] {
            if let value, value.count > 200 { throw fields.invalid(name, "\(name) is longer than 200 characters") }
        }
        return request
    }
}

/// Performs hold operations (capture, increment, void, refund, ship) for the back office.
public protocol HoldOperator: Sendable {
    /// What the operation came to; refusals throw ``ServiceError``.
    func perform(orderID: String, _ request: HoldOperationRequest, idempotencyKey: String?, actor: String) async throws -> HoldOperationOutcome
}

/// Reads the `holds` read model.
public protocol HoldReader: Sendable {
    func holds(_ query: HoldQuery) async throws -> OrderPage
}

/// Back-office hold routes:
/// - operator key: `POST /orders/{id}/capture {amount?, final?}`, `/increment {amount}`,
///   `/void {amount?}`, `/refund {amount, reason}`, `/ship {carrier?, tracking?}` — each idempotent
///   by its `Idempotency-Key` header (the same key and body replay the first outcome);
/// - operator or auditor key: `GET /authorizations?state=open|closed&expiring_before=&limit=&cursor=`.
public struct HoldRoutes: Sendable {
    let holdOperator: any HoldOperator
    let reader: any HoldReader

    public init(operator holdOperator: any HoldOperator, reader: any HoldReader) {
        self.holdOperator = holdOperator
        self.reader = reader
    }

    public func registerChanges(on group: RouterGroup<LedgerRequestContext>) {
        for kind in HoldOperationRequest.Kind.allCases {
            group.post("/orders/:id/\(kind.rawValue)") { request, context -> Response in
                let id = try context.parameters.require("id")
                let body: ByteBuffer
                body = try await StrictJSON.body(of: request, limit: 16 * 1024)
                let operation = try HoldOperationRequest.parse(kind: kind, body: body)
                let key = request.headers[PaymentRoutes.idempotencyKeyHeader]
                if let key, !(1...200).contains(key.utf8.count) {
                    throw APIError.badRequest("invalid_idempotency_key", "Idempotency-Key must be 1…200 bytes", field: "Idempotency-Key")
                }
                let actor = context.actor
                let outcome = try await holdOperator.perform(orderID: id, operation, idempotencyKey: key, actor: actor)
                return try jsonResponse(HoldOperationReply(outcome), status: outcome.result.status)
            }
        }
    }

    public func registerReads(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/authorizations") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            var query = HoldQuery(state: nil, expiringBefore: nil, limit: 50, cursor: 0)
            if let state = parameters["state"].map(String.init) {
                guard state == "open" || state == "closed" else {
                    throw APIError.badRequest("invalid_parameter", "state must be open or closed", field: "state")
                }
                query.state = state
            }
            query.expiringBefore = try OrderRoutes.date(parameters["expiring_before"].map(String.init), field: "expiring_before")
            query.limit = Int(
                try AuditRoutes.integer(
                    parameters["limit"].map(String.init),
                    name: "limit",
                    default: 50,
                    range: 1...Int64(OrderRoutes.maximumPageSize)
                )
            )
            query.cursor = try AuditRoutes.integer(parameters["cursor"].map(String.init), name: "cursor", default: 0, range: 0...Int64.max)
            let page = try await reader.holds(query)
            return jsonResponse(OrderRoutes.page("authorizations", page))
        }
    }
}
