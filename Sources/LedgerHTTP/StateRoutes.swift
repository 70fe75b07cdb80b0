import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerMacros
import LedgerServices

extension StateAnswer {
    /// The stored row.
    var row: RawJSON { RawJSON(stored: json) }

    /// `{"position":…,"time":"…"}` of an as-of answer, nil for a live one.
    var asOfMember: RawJSON? { asOf.map(\.asOfJSON) }
}

extension StateAnswer.Point {
    /// `{"position":…,"time":"…"}`: the last position folded and the instant lapses were judged at.
    public var asOfJSON: RawJSON { .object(["position": .integer(position), "time": .string(RFC3339.format(micros))]) }
}

/// Back-office state reads (operator or auditor key), live or `?as_of=<position | RFC 3339 time>`:
/// - `GET /authorizations/{order id}` — one hold with its money figures;
/// - `GET /products/{id}` — one product as `GET /inventory` shows it.
/// `GET /orders/{id}?as_of=`, `GET /inventory?as_of=` and `GET /settlements/{id}?as_of=` are served
/// by ``OrderRoutes``, ``StorefrontRoutes`` and ``SettlementRoutes`` through the same reader (the
/// last two carry the point in `Ledger-As-Of-Position` / `Ledger-As-Of-Time` headers, their bodies
/// being the live shape).
@MemberwiseInit
public struct StateRoutes: Sendable {
    let reader: StateHistory

    public func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/authorizations/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            let asOf = try Self.asOf(request)
            guard let answer = try await reader.authorization(id, asOf: asOf) else {
                throw APIError.notFound("no authorization for order \(id)\(Self.suffix(asOf))")
            }
            return jsonResponse(.object(["authorization": answer.row, "as_of": answer.asOfMember]))
        }
        group.get("/products/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            let asOf = try Self.asOf(request)
            guard let answer = try await reader.product(id, asOf: asOf) else {
                throw APIError.notFound("no product \(id)\(Self.suffix(asOf))")
            }
            return jsonResponse(.object(["product": answer.row, "as_of": answer.asOfMember]))
        }
    }

    /// `GET /orders/{id}?as_of=…`: the order row as of then, in the live answer's shape.
    static func orderResponse(_ reader: StateHistory, id: String, asOf: AsOf, links: RawJSON) async throws -> Response {
        guard let answer = try await reader.order(id, asOf: asOf) else {
            throw APIError.notFound("no order \(id)\(suffix(asOf))")
        }
        return jsonResponse(.object(["order": answer.row, "as_of": answer.asOfMember, "links": links]))
    }

    /// `GET /settlements/{id}?as_of=…`: the batch as the live endpoint serves it; the point in headers.
    static func settlementResponse(_ reader: StateHistory, id: String, asOf: AsOf) async throws -> Response {
        guard let found = try await reader.settlement(id, asOf: asOf) else {
            throw APIError.notFound("no settlement batch \(id)\(suffix(asOf))")
        }
        return withPointHeaders(try RawJSON(encoding: SettlementBatchReply(found.batch)), found.point)
    }

    /// `GET /inventory?as_of=…`: the array as the live endpoint serves it; the point in headers.
    static func inventoryResponse(_ reader: StateHistory, asOf: AsOf) async throws -> Response {
        let answer = try await reader.inventory(asOf: asOf)
        return withPointHeaders(answer.row, answer.asOf)
    }

    /// The body in the live answer's shape, the point in the `Ledger-As-Of-*` headers.
    static func withPointHeaders(_ body: RawJSON, _ point: StateAnswer.Point?) -> Response {
        var response = jsonResponse(body)
        if let point {
            response.headers[Self.asOfPositionHeader] = String(point.position)
            response.headers[Self.asOfTimeHeader] = RFC3339.format(point.micros)
        }
        return response
    }

    public static let asOfPositionHeader = HTTPField.Name("Ledger-As-Of-Position")!
    public static let asOfTimeHeader = HTTPField.Name("Ledger-As-Of-Time")!

    /// The request's `as_of`, or nil when it has none; malformed is a 400 naming it.
    static func asOf(_ request: Request) throws -> AsOf? {
        guard let text = request.uri.queryParameters["as_of"].map(String.init) else { return nil }
        guard let asOf = AsOf(text) else {
            throw APIError.badRequest(
                "invalid_parameter",
                "as_of must be a position (e.g. 1234) or an RFC 3339 time (e.g. 2026-11-21T09:30:00Z)",
                field: "as_of"
            )
        }
        return asOf
    }

    static func suffix(_ asOf: AsOf?) -> String { asOf.map { " as of \($0)" } ?? "" }
}
