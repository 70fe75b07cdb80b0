import Foundation
import Hummingbird
import LedgerCore

/// What the history and verification endpoints read, without depending on the database module.
public protocol LedgerReader: Sendable {
    func events(stream: StreamID) async throws -> [RecordedEvent]
    func events(after position: Int64, limit: Int) async throws -> [RecordedEvent]
    func verifyChain(from: Int64, to: Int64?) async throws -> ChainReport
}

/// Back-office reads of the log (operator or auditor key):
/// - `GET /streams/{stream}/events` — one stream's events in version order;
/// - `GET /events?after=&limit=` — the global feed, cursor-paged by position (`next_after`);
/// - `GET /audit/verify?from=&to=` — the hash chain recomputed over a range.
public struct AuditRoutes: Sendable {
    public typealias Context = LedgerRequestContext
    public static let maximumPageSize = 1_000

    let reader: any LedgerReader

    public init(reader: any LedgerReader) {
        self.reader = reader
    }

    public func register(on group: RouterGroup<Context>) {
        group.get("/streams/:stream/events") { _, context -> Response in
            let raw = try context.parameters.require("stream")
            guard let stream = StreamID(raw) else {
                throw APIError.badRequest("invalid_stream", "a stream id is 1…200 bytes", field: "stream")
            }
            let events = try await reader.events(stream: stream)
            guard !events.isEmpty else { throw APIError.notFound("no stream \(raw)") }
            return jsonResponse("{\"stream\":\(EventJSON.quote(stream.rawValue)),\"events\":\(EventJSON.render(events))}")
        }
        group.get("/events") { request, _ -> Response in
            let query = request.uri.queryParameters
            let after = try Self.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
            let limit = try Self.integer(query["limit"].map(String.init), name: "limit", default: 100,
                                         range: 1...Int64(Self.maximumPageSize))
            let events = try await reader.events(after: after, limit: Int(limit))
            let next = events.count == Int(limit) ? events.last.map { String($0.position) } ?? "null" : "null"
            return jsonResponse("{\"events\":\(EventJSON.render(events)),\"next_after\":\(next)}")
        }
        group.get("/audit/verify") { request, _ -> Response in
            let query = request.uri.queryParameters
            let from = try Self.integer(query["from"].map(String.init), name: "from", default: 1, range: 1...Int64.max)
            let to: Int64? = try query["to"].map { try Self.integer(String($0), name: "to", default: 0, range: 1...Int64.max) }
            let report = try await reader.verifyChain(from: from, to: to)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return jsonResponse(String(decoding: try encoder.encode(report), as: UTF8.self))
        }
    }

    static func integer(_ text: String?, name: String, default value: Int64, range: ClosedRange<Int64>) throws -> Int64 {
        guard let text else { return value }
        guard let number = Int64(text), range.contains(number) else {
            throw APIError.badRequest("invalid_parameter", "\(name) must be an integer in \(range.lowerBound)…\(range.upperBound)", field: name)
        }
        return number
    }
}

func jsonResponse(_ body: String, status: HTTPResponse.Status = .ok) -> Response {
    var headers = HTTPFields()
    headers[.contentType] = "application/json; charset=utf-8"
    return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
}
