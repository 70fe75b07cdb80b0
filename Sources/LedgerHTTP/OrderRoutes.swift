import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// What the order endpoints read.
public protocol OrderReader: Sendable {
    /// The order's read-model row as JSON, or nil.
    func orderJSON(id: String) async throws -> String?
    func orders(_ query: OrderQuery) async throws -> OrderPage
    /// The orders whose payment has the acquirer's reference `pspReference` (the authorization's, or a declined
    /// attempt's), oldest first, at most `limit`.
    func orderIDs(pspReference: String, limit: Int) async throws -> [String]
}

/// Back-office order reads (operator or auditor key):
/// - `GET /orders/{id}` — status, lines, amounts, shipping, hold, and links to its history;
/// - `GET /orders?status=&from=&to=&limit=&cursor=` — oldest first, cursor-paged.
public struct OrderRoutes: Sendable {
    public static let maximumPageSize = 500
    let reader: any OrderReader
    let statuses: Set<String>
    let state: (StateHistory)?

    /// `statuses`: the order status names a `status` filter may use; `state`: what answers
    /// `GET /orders/{id}?as_of=` (without it, `as_of` is refused).
    public init(reader: any OrderReader, statuses: Set<String>, state: (StateHistory)? = nil) {
        self.reader = reader
        self.statuses = statuses
        self.state = state
    }

    public func register(on group: RouterGroup<LedgerRequestContext>) {
        group.get("/orders/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            let links = Self.links(id)
            if let asOf = try StateRoutes.asOf(request) {
                guard let state else { throw APIError.badRequest("invalid_parameter", "as_of is not served here", field: "as_of") }
                return try await StateRoutes.orderResponse(state, id: id, asOf: asOf, links: links)
            }
            guard let row = try await reader.orderJSON(id: id) else { throw APIError.notFound("no order \(id)") }
            return jsonResponse(.object(["order": RawJSON(stored: row), "links": links]))
        }
        group.get("/orders") { request, _ -> Response in
            let parameters = request.uri.queryParameters
            var query = OrderQuery(status: nil, from: nil, to: nil, limit: 50, cursor: 0)
            if let status = parameters["status"].map(String.init) {
                guard statuses.contains(status) else {
                    throw APIError.badRequest(
                        "invalid_parameter",
                        "status must be one of \(statuses.sorted().joined(separator: ", "))",
                        field: "status"
                    )
                }
                query.status = status
            }
            query.from = try Self.date(parameters["from"].map(String.init), field: "from")
            query.to = try Self.date(parameters["to"].map(String.init), field: "to")
            query.limit = Int(
                try AuditRoutes.integer(
                    parameters["limit"].map(String.init),
                    name: "limit",
                    default: 50,
                    range: 1...Int64(Self.maximumPageSize)
                )
            )
            query.cursor = try AuditRoutes.integer(parameters["cursor"].map(String.init), name: "cursor", default: 0, range: 0...Int64.max)
            let page = try await reader.orders(query)
            return jsonResponse(Self.page("orders", page))
        }
    }

    /// Where an order's history is read: `{"history", "hold_history", "full_history"}`, in that order.
    static func links(_ id: String) -> RawJSON {
        .object([
            "history": .string("/streams/order-\(id)/events"), "hold_history": .string("/streams/hold-\(id)/events"),
            "full_history": .string("/orders/\(id)/history"),
        ])
    }

    /// A page of stored rows: `{"<name>": [rows], "next_cursor": "<cursor>" | null}`.
    static func page(_ name: String, _ page: OrderPage) -> RawJSON {
        .object([
            name: .array(page.ordersJSON.map(RawJSON.init(stored:))),
            "next_cursor": .optionalString(page.nextCursor.map { String($0) }),
        ])
    }

    /// A query parameter's time (`from`, `to`, `expiring_before`, `due_before`), read by the ledger's one RFC 3339
    /// reader (``RFC3339/micros(_:)``, as `GET /events`' and the audit routes' times are) to the microsecond; absent is
    /// nil, anything else a 400 naming the parameter.
    static func date(_ text: String?, field: String) throws -> Date? {
        guard let text else { return nil }
        guard let micros = RFC3339.micros(text) else {
            throw APIError.badRequest("invalid_parameter", "\(field) must be an RFC 3339 time, e.g. 2026-11-21T00:00:00Z", field: field)
        }
        return Date(epochMicroseconds: micros)
    }
}
