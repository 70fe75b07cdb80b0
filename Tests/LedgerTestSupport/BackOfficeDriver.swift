import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerCore
import LedgerHTTP
import LedgerServices
import Testing

/// The back office's side of the API: operators changing orders (capture, increment, void, refund,
/// ship) and settling days, auditors reading orders, histories and reconciliations. Changes go with
/// ``TestApp/operatorKey`` and reads with ``TestApp/auditorKey`` unless a call says otherwise.
public struct BackOfficeDriver: Sendable {
    /// A driver; it keeps no state, the client passed to each call is the app.
    public init() {}

    /// The part of `GET /orders/{id}` the tests read.
    public struct Order: Decodable, Sendable {
        /// The order's authorization hold.
        public struct Hold: Decodable, Sendable {
            public let state, expires_at: String
        }
        public let id, status: String
        public let hold: Hold?
        public let payment: HoldFigures?
    }

    /// `POST /orders/{order}/{operation}` with `body`, an `Idempotency-Key` and the operator key (nil: no key); the
    /// status and the reply's text. Without `key`, an operation that requires one gets a fresh key (a first request,
    /// as a client sends it); `.none` sends none.
    public func operate(
        _ client: any TestClientProtocol,
        _ order: String,
        _ operation: String,
        _ body: String = "{}",
        key: IdempotencyKeyChoice = .fresh,
        apiKey: String? = TestApp.operatorKey
    ) async throws -> (HTTPResponse.Status, String) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let apiKey { headers[.authorization] = "Bearer \(apiKey)" }
        if let key = key.header(for: operation) { headers[HTTPField.Name("Idempotency-Key")!] = key }
        return try await client.execute(
            uri: "/orders/\(order)/\(operation)",
            method: .post,
            headers: headers,
            body: ByteBuffer(string: body)
        ) { ($0.status, String(buffer: $0.body)) }
    }

    /// Captures `{amount?, final?}` of the order's hold (all that is open by default).
    public func capture(
        _ client: any TestClientProtocol,
        _ order: String,
        _ body: String = "{}",
        key: IdempotencyKeyChoice = .fresh
    ) async throws -> (HTTPResponse.Status, String) {
        try await operate(client, order, "capture", body, key: key)
    }

    /// Raises the order's hold by `{amount}`.
    public func increment(
        _ client: any TestClientProtocol,
        _ order: String,
        _ body: String,
        key: IdempotencyKeyChoice = .fresh
    ) async throws -> (HTTPResponse.Status, String) {
        try await operate(client, order, "increment", body, key: key)
    }

    /// Releases `{amount?}` of the order's hold (all that is open by default).
    public func void(
        _ client: any TestClientProtocol,
        _ order: String,
        _ body: String = "{}",
        key: IdempotencyKeyChoice = .fresh
    ) async throws -> (HTTPResponse.Status, String) {
        try await operate(client, order, "void", body, key: key)
    }

    /// Refunds `{amount, reason}` of what was captured.
    public func refund(
        _ client: any TestClientProtocol,
        _ order: String,
        _ body: String,
        key: IdempotencyKeyChoice = .fresh
    ) async throws -> (HTTPResponse.Status, String) {
        try await operate(client, order, "refund", body, key: key)
    }

    /// Ships the order `{carrier?, tracking?}`.
    public func ship(
        _ client: any TestClientProtocol,
        _ order: String,
        _ body: String = "{}",
        key: IdempotencyKeyChoice = .fresh
    ) async throws -> (HTTPResponse.Status, String) {
        try await operate(client, order, "ship", body, key: key)
    }

    /// `GET uri` with `key` (the auditor's by default; nil: none); the status and the reply's text.
    public func get(
        _ client: any TestClientProtocol,
        _ uri: String,
        key: String? = TestApp.auditorKey
    ) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(uri: uri, method: .get, headers: key.map(TestApp.bearer) ?? [:]) {
            ($0.status, String(buffer: $0.body))
        }
    }

    /// `GET /orders/{id}`; expects 200.
    public func order(_ client: any TestClientProtocol, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Order {
        struct Body: Decodable { let order: Order }
        let (status, text) = try await get(client, "/orders/\(id)")
        #expect(status == .ok, "\(text)", sourceLocation: sourceLocation)
        return try WireJSON.decode(Body.self, from: text).order
    }

    /// `GET /orders/{id}/history`: the order's, its hold's and its stock's events in log order.
    public func history(
        _ client: any TestClientProtocol,
        _ id: String,
        key: String? = TestApp.auditorKey
    ) async throws -> (HTTPResponse.Status, String) {
        try await get(client, "/orders/\(id)/history", key: key)
    }

    /// `POST /settlements/run` with `body` and `key` (the operator's by default; nil: none).
    public func runSettlement(
        _ client: any TestClientProtocol,
        _ body: String,
        key: String? = TestApp.operatorKey
    ) async throws -> (HTTPResponse.Status, String) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let key { headers[.authorization] = "Bearer \(key)" }
        return try await client.execute(uri: "/settlements/run", method: .post, headers: headers, body: ByteBuffer(string: body)) {
            ($0.status, String(buffer: $0.body))
        }
    }

    /// Settles `businessDate` (`yyyy-MM-dd`); expects 200.
    public func settle(
        _ client: any TestClientProtocol,
        _ businessDate: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> SettlementRunReply {
        let (status, text) = try await runSettlement(client, #"{"business_date": "\#(businessDate)"}"#)
        #expect(status == .ok, "\(text)", sourceLocation: sourceLocation)
        return try WireJSON.decode(SettlementRunReply.self, from: text)
    }

    /// `GET /settlements/{batch}/reconciliation`; expects 200.
    public func reconciliation(
        _ client: any TestClientProtocol,
        _ batchID: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ReconciliationReply {
        let (status, text) = try await get(client, "/settlements/\(batchID)/reconciliation")
        #expect(status == .ok, "\(text)", sourceLocation: sourceLocation)
        return try WireJSON.decode(ReconciliationReply.self, from: text)
    }
}

/// The `Idempotency-Key` a test sends with a hold operation: a given one (`"k"` by literal), a fresh one for the
/// operations that require a key (``fresh``), or none (``none``: to see the refusal).
public enum IdempotencyKeyChoice: Sendable, ExpressibleByStringInterpolation {
    case given(String)
    case fresh
    case none

    public init(stringLiteral value: String) { self = .given(value) }

    /// The header's value for `operation` (`capture`, `ship`…), or nil for none.
    public func header(for operation: String) -> String? {
        switch self {
        case .given(let key): key
        case .none: nil
        case .fresh: IdempotencyKeyChoice.requiresKey(operation) ? "test-\(UUID().uuidString.lowercased())" : nil
        }
    }

    /// Whether the daemon requires a key for `operation` (the route's own rule).
    static func requiresKey(_ operation: String) -> Bool {
        HoldOperationRequest.Kind(rawValue: operation)?.requiresIdempotencyKey ?? false
    }
}
