import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerMacros
import LedgerServices

/// What the history and verification endpoints read, without depending on the database module.
public protocol LedgerReader: Sendable {
    /// Up to `limit` of the stream's events after `version`, in version order.
    func events(stream: StreamID, afterVersion version: Int64, limit: Int) async throws -> [RecordedEvent]
    /// Up to `limit` events after `position` that pass `filter`, in position order.
    func events(after position: Int64, matching filter: EventFilter, limit: Int) async throws -> [RecordedEvent]
    /// The order's, its hold's and every event naming the order, in position order.
    func orderHistory(_ orderID: String) async throws -> [RecordedEvent]
    func verifyChain(from: Int64, to: Int64?) async throws -> ChainReport
}

/// Back-office reads of the log (operator or auditor key):
/// - `GET /streams/{stream}/events?after_version=&limit=` — one stream's events in version order, paged: at most
///   `limit` (default 100, at most 1000) after `after_version` (default 0), and `next_after_version` (the last
///   version of a full page, else null) for the next page — a hot product's stream grows with every order;
/// - `GET /orders/{id}/history` — the order with its hold, its stock reservations, sales and
///   releases, and anything else that names it (settlement lines, a contact erasure), merged in
///   position order;
/// - `GET /events?after=&limit=&type=&stream_prefix=&from=&to=&correlation_id=` — the global feed,
///   cursor-paged by position (`next_after`): `type` one or more comma-separated types,
///   `stream_prefix` e.g. `order-`, `from`/`to` RFC 3339 bounds on the recorded (ledger) time
///   (from inclusive, to exclusive), `correlation_id` one request's events;
/// - `GET /audit/verify?from=&to=` — the hash chain recomputed over a range, at most ``maximumVerifyWindow``
///   positions per request: a longer range is verified from `from` through the window's end and the reply's
///   `next_from` says where to continue.
public struct AuditRoutes: Sendable {
    public typealias Context = LedgerRequestContext
    public static let maximumPageSize = 1_000
    /// The most positions one `GET /audit/verify` re-hashes (`ledgerd audit verify` has no such bound).
    public static let maximumVerifyWindow: Int64 = 250_000

    let reader: any LedgerReader
    let verifyWindow: Int64

    public init(reader: any LedgerReader, verifyWindow: Int64 = maximumVerifyWindow) {
        self.reader = reader
        self.verifyWindow = verifyWindow
    }

    public func register(on group: RouterGroup<Context>) {
        group.get("/streams/:stream/events") { request, context -> Response in
            let raw = try context.parameters.require("stream")
            guard let stream = StreamID(raw) else {
                throw APIError.badRequest("invalid_stream", "a stream id is 1…200 bytes", field: "stream")
            }
            let query = request.uri.queryParameters
            for (name, _) in query where !["after_version", "limit", "min_position"].contains(String(name)) {
                throw APIError.badRequest(
                    "unknown_parameter",
                    "a stream's events take after_version, limit and min_position, not \(name)",
                    field: String(name)
                )
            }
            let after = try Self.integer(query["after_version"].map(String.init), name: "after_version", default: 0, range: 0...Int64.max)
            let limit = try Self.integer(
                query["limit"].map(String.init),
                name: "limit",
                default: 100,
                range: 1...Int64(Self.maximumPageSize)
            )
            let events = try await reader.events(stream: stream, afterVersion: after, limit: Int(limit))
            guard !events.isEmpty || after > 0 else { throw APIError.notFound("no stream \(raw)") }
            let next = events.count == Int(limit) ? events.last?.streamVersion : nil
            return jsonResponse(
                .object([
                    "stream": .string(stream.rawValue), "events": RawJSON(stored: EventJSON.render(events)),
                    "next_after_version": .integer(next),
                ])
            )
        }
        group.get("/orders/:id/history") { _, context -> Response in
            let id = try context.parameters.require("id")
            let events = try await reader.orderHistory(id)
            guard !events.isEmpty else { throw APIError.notFound("no order \(id)") }
            return jsonResponse(.object(["order_id": .string(id), "events": RawJSON(stored: EventJSON.render(events))]))
        }
        group.get("/events") { request, _ -> Response in
            let query = request.uri.queryParameters
            let known: Set<String> = ["after", "limit", "type", "stream_prefix", "from", "to", "correlation_id", "min_position"]
            for (name, _) in query where !known.contains(String(name)) {
                throw APIError.badRequest("unknown_parameter", "the feed does not take \(name)", field: String(name))
            }
            let after = try Self.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
            let limit = try Self.integer(
                query["limit"].map(String.init),
                name: "limit",
                default: 100,
                range: 1...Int64(Self.maximumPageSize)
            )
            let filter = try Self.filter(query)
            let events = try await reader.events(after: after, matching: filter, limit: Int(limit))
            return jsonResponse(Self.page("events", events, limit: limit))
        }
        group.get("/audit/verify") { request, _ -> Response in
            let query = request.uri.queryParameters
            let from = try Self.integer(query["from"].map(String.init), name: "from", default: 1, range: 1...Int64.max)
            let requested: Int64? = try query["to"].map { try Self.integer(String($0), name: "to", default: 0, range: 1...Int64.max) }
            // One request re-hashes at most a window of the log; the reply says where to continue.
            let (windowEnd, overflow) = from.addingReportingOverflow(verifyWindow - 1)
            let to = min(requested ?? Int64.max, overflow ? Int64.max : windowEnd)
            var report = try await reader.verifyChain(from: from, to: to)
            if report.ok, report.checked == verifyWindow, requested.map({ $0 > to }) ?? true {
                report.nextFrom = to + 1
            }
            // Encoded as it always was (keys sorted, slashes escaped), not by WireJSON: the report's bytes stay as they were.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return jsonResponse(RawJSON(stored: String(decoding: try encoder.encode(report), as: UTF8.self)))
        }
    }

    /// The feed's filter from its query parameters; a malformed one is a 400 naming it.
    static func filter(_ query: Hummingbird.Parameters) throws -> EventFilter {
        // Each of these is compared with stored text: a control character can match nothing, and U+0000 failed in
        // PostgreSQL as a 500 (found by schemathesis), so they are refused with the parameter's name.
        for name in ["type", "stream_prefix", "correlation_id"] {
            guard let value = query[name[...]], value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { continue }
            throw APIError.badRequest("invalid_parameter", "\(name) must not contain control characters", field: name)
        }
        var filter = EventFilter()
        if let types = query["type"].map(String.init) {
            filter.types = types.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
            guard filter.types.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 200 }) else {
                throw APIError.badRequest("invalid_parameter", "type must be one or more comma-separated event types", field: "type")
            }
        }
        if let prefix = query["stream_prefix"].map(String.init) {
            guard !prefix.isEmpty, prefix.utf8.count <= StreamID.maximumByteLength else {
                throw APIError.badRequest("invalid_parameter", "stream_prefix must be 1…200 bytes", field: "stream_prefix")
            }
            filter.streamPrefix = prefix
        }
        for name in ["from", "to"] {
            guard let text = query[name[...]].map(String.init) else { continue }
            guard let micros = RFC3339.micros(text) else {
                throw APIError.badRequest("invalid_parameter", "\(name) must be an RFC 3339 time, e.g. 2026-11-21T00:00:00Z", field: name)
            }
            if name == "from" { filter.fromMicros = micros } else { filter.toMicros = micros }
        }
        if let correlation = query["correlation_id"].map(String.init) {
            guard !correlation.isEmpty, correlation.utf8.count <= 200 else {
                throw APIError.badRequest("invalid_parameter", "correlation_id must be 1…200 bytes", field: "correlation_id")
            }
            filter.correlationID = correlation
        }
        return filter
    }

    /// A page of the log: `{"<name>": [events], "next_after": <last position> | null}`; a next page
    /// is only offered when this one is full.
    static func page(_ name: String, _ events: [RecordedEvent], limit: Int64) -> RawJSON {
        let next = events.count == Int(limit) ? events.last?.position : nil
        return .object([name: RawJSON(stored: EventJSON.render(events)), "next_after": .integer(next)])
    }

    static func integer(_ text: String?, name: String, default value: Int64, range: ClosedRange<Int64>) throws -> Int64 {
        guard let text else { return value }
        guard let number = Int64(text), range.contains(number) else {
            throw APIError.badRequest("invalid_parameter", "\(name) must be an integer in \(range.lowerBound)…\(range.upperBound)", field: name)
        }
        return number
    }
}
