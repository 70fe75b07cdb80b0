import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// A hold operation's body, one ``JSONRequestBody`` per kind, read into the hold service's input.
extension HoldOperationRequest {
    /// `{amount?, final?}`
    struct CaptureBody: JSONRequestBody {
        enum Member: String, CodingKey, CaseIterable { case amount, final }
        static let subject = Kind.capture.rawValue
        let request: HoldOperationRequest
        init(from decoder: any Decoder) throws {
            let body = try decoder.container(keyedBy: Member.self)
            var request = HoldOperationRequest(kind: .capture)
            request.amount = try body.optionalText(.amount)
            request.isFinal = try body.optionalFlag(.final) ?? false
            self.request = request
        }
    }

    /// `{amount}`
    struct IncrementBody: JSONRequestBody {
        enum Member: String, CodingKey, CaseIterable { case amount }
        static let subject = Kind.increment.rawValue
        let request: HoldOperationRequest
        init(from decoder: any Decoder) throws {
            var request = HoldOperationRequest(kind: .increment)
            request.amount = try decoder.container(keyedBy: Member.self).text(.amount)
            self.request = request
        }
    }

    /// `{amount?}`
    struct VoidBody: JSONRequestBody {
        enum Member: String, CodingKey, CaseIterable { case amount }
        static let subject = Kind.void.rawValue
        let request: HoldOperationRequest
        init(from decoder: any Decoder) throws {
            var request = HoldOperationRequest(kind: .void)
            request.amount = try decoder.container(keyedBy: Member.self).optionalText(.amount)
            self.request = request
        }
    }

    /// `{amount, reason}`
    struct RefundBody: JSONRequestBody {
        enum Member: String, CodingKey, CaseIterable { case amount, reason }
        static let subject = Kind.refund.rawValue
        let request: HoldOperationRequest
        init(from decoder: any Decoder) throws {
            let body = try decoder.container(keyedBy: Member.self)
            var request = HoldOperationRequest(kind: .refund)
            request.amount = try body.text(.amount)
            request.reason = try body.text(.reason, maximumLength: 200)
            self.request = request
        }
    }

    /// `{carrier?, tracking?}`
    struct ShipBody: JSONRequestBody {
        enum Member: String, CodingKey, CaseIterable { case carrier, tracking }
        static let subject = Kind.ship.rawValue
        let request: HoldOperationRequest
        init(from decoder: any Decoder) throws {
            let body = try decoder.container(keyedBy: Member.self)
            var request = HoldOperationRequest(kind: .ship)
            request.carrier = try body.optionalText(.carrier, maximumLength: 200)
            request.tracking = try body.optionalText(.tracking, maximumLength: 200)
            self.request = request
        }
    }

    /// The operation `kind` with `body` (checked JSON bytes; no bytes is `{}`), under ``JSONRequestBody``'s rules.
    public static func parse(kind: Kind, body: ByteBuffer) throws(APIError) -> HoldOperationRequest {
        switch kind {
        case .capture: try StrictJSON.decode(CaptureBody.self, from: body).request
        case .increment: try StrictJSON.decode(IncrementBody.self, from: body).request
        case .void: try StrictJSON.decode(VoidBody.self, from: body).request
        case .refund: try StrictJSON.decode(RefundBody.self, from: body).request
        case .ship: try StrictJSON.decode(ShipBody.self, from: body).request
        }
    }
}

/// Reads the `holds` read model.
public protocol HoldReader: Sendable {
    func holds(_ query: HoldQuery) async throws -> OrderPage
}

/// Back-office hold routes:
/// - operator key: `POST /orders/{id}/capture {amount?, final?}`, `/increment {amount}`,
///   `/void {amount?}`, `/refund {amount, reason}`, `/ship {carrier?, tracking?}` — each idempotent
///   by its `Idempotency-Key` header (the same key and body replay the first outcome), which the four that move money
///   require (400 `missing_idempotency_key`: ``HoldOperationRequest/Kind/requiresIdempotencyKey``);
/// - operator or auditor key: `GET /authorizations?state=open|closed&expiring_before=&limit=&cursor=`.
public struct HoldRoutes: Sendable {
    let holdOperator: HoldService
    let reader: any HoldReader

    public init(operator holdOperator: HoldService, reader: any HoldReader) {
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
                let key = try PaymentRoutes.idempotencyKey(of: request)
                if key == nil, kind.requiresIdempotencyKey {
                    throw APIError.badRequest(
                        "missing_idempotency_key",
                        "a \(kind.rawValue) moves money: send an Idempotency-Key header (1…200 bytes, one per operation) so that a retry cannot apply it twice",
                        field: "Idempotency-Key"
                    )
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
