import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices
import Synchronization

/// Feeds for the systems downstream:
/// - reads (operator or auditor key): `GET /events/stream?after=&type=&stream_prefix=` (Server-Sent
///   Events, `id:` = position, resumable with `Last-Event-ID`), `GET /subscriptions`,
///   `GET /subscriptions/{name}/events?limit=&wait=`, `GET /webhooks`, `GET /webhooks/{id}`,
///   `GET /webhooks/{id}/deliveries?after=&limit=`, `GET /journal?from=&to=&after=&limit=` (cursor-paged: at most
///   `limit` journal events per reply, `next_after` for the next; an expensive request);
/// - changes (operator key): `POST /subscriptions`, `POST /subscriptions/{name}/ack`,
///   `DELETE /subscriptions/{name}`, `POST /webhooks`, `POST /webhooks/{id}/redeliver`,
///   `POST /webhooks/{id}/rotate-secret`.
public struct FeedRoutes: Sendable {
    public typealias Context = LedgerRequestContext

    let follower: EventFeed
    let subscriptions: SubscriptionService
    let webhooks: WebhookService
    let journal: JournalService
    let keepAlive: Duration
    let streams: StreamLimit

    public init(
        follower: EventFeed,
        subscriptions: SubscriptionService,
        webhooks: WebhookService,
        journal: JournalService,
        keepAlive: Duration = .seconds(15),
        streamsPerKey: Int = 8
    ) {
        self.follower = follower
        self.subscriptions = subscriptions
        self.webhooks = webhooks
        self.journal = journal
        self.keepAlive = keepAlive
        self.streams = StreamLimit(perKey: streamsPerKey)
    }

    /// How many `/events/stream` replies each API key has open (review 3, N8: any auditor could open unlimited
    /// catch-ups from position 0; 50 took payment latency from 30 ms to 2 s). One more than `perKey` is 429 `busy`.
    /// A slot is held by a ``Slot`` the reply's body keeps: it is given back when the stream ends, however it ends
    /// (finished, the client gone, the body never run).
    final class StreamLimit: Sendable {
        let perKey: Int
        private let open = Mutex<[String: Int]>([:])

        init(perKey: Int) { self.perKey = perKey }

        final class Slot: Sendable {
            let limit: StreamLimit
            let key: String
            init(limit: StreamLimit, key: String) {
                self.limit = limit
                self.key = key
            }
            deinit { limit.release(key) }
        }

        func take(_ key: String) throws -> Slot {
            let taken = open.withLock { open -> Bool in
                guard open[key, default: 0] < perKey else { return false }
                open[key, default: 0] += 1
                return true
            }
            guard taken else {
                var error = APIError(
                    status: .tooManyRequests,
                    code: "busy",
                    message: "this key has \(perKey) event streams open; close one first"
                )
                error.retryAfterSeconds = 1
                throw error
            }
            return Slot(limit: self, key: key)
        }

        func release(_ key: String) {
            let none = open.withLock { open in
                let left = open[key, default: 1] - 1
                open[key] = left > 0 ? left : nil
                return open.isEmpty
            }
            // The last stream out gives the memory back (N15): a catch-up from position 0 read the whole log.
            if none { MemoryReturn.soon() }
        }
    }

    public func registerReads(on group: RouterGroup<Context>) {
        group.get("/events/stream") { request, context -> Response in
            let query = request.uri.queryParameters
            try Self.onlyKnown(query, ["after", "type", "stream_prefix"], what: "the live feed")
            var after = try AuditRoutes.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
            if let header = request.headers[HTTPField.Name("Last-Event-ID")!] {
                guard let position = ServerSentEvents.position(lastEventID: header) else {
                    throw APIError.badRequest("invalid_last_event_id", "Last-Event-ID must be a position", field: "Last-Event-ID")
                }
                after = position
            }
            let filter = try AuditRoutes.filter(query)
            let slot = try streams.take(context.principal?.keyID ?? "")
            let pages = follower.follow(after: after, matching: filter, keepAlive: keepAlive)
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-cache"
            let body = ResponseBody { writer in
                var iterator = pages.makeAsyncIterator()
                // A comment first, so that the client sees the stream open before the first event.
                try await writer.write(ByteBuffer(string: ServerSentEvents.keepAlive))
                while let page = try await iterator.next() {
                    let text = page.events.isEmpty ? ServerSentEvents.keepAlive : page.events.map(ServerSentEvents.frame).joined()
                    try await writer.write(ByteBuffer(string: text))
                }
                try await writer.finish(nil)
                // The stream held its slot until here (the closure keeps it; released with the reply).
                withExtendedLifetime(slot) {}
            }
            return Response(status: .ok, headers: headers, body: body)
        }
        group.get("/subscriptions") { _, _ -> Response in
            try jsonResponse(SubscriptionListReply(try await subscriptions.all()))
        }
        group.get("/subscriptions/:name/events") { request, context -> Response in
            let name = try context.parameters.require("name")
            let query = request.uri.queryParameters
            try Self.onlyKnown(query, ["limit", "wait"], what: "a subscription's events")
            let limit = try AuditRoutes.integer(
                query["limit"].map(String.init),
                name: "limit",
                default: 100,
                range: 1...Int64(SubscriptionService.maximumLimit)
            )
            let wait = try AuditRoutes.integer(query["wait"].map(String.init), name: "wait", default: 0, range: 0...60)
            let page = try await subscriptions.events(name, limit: Int(limit), wait: .seconds(wait))
            let reply: RawJSON = .object([
                "subscription": RawJSON(stored: try WireJSON.encode(SubscriptionReply(page.subscription))),
                "events": RawJSON(stored: EventJSON.render(page.events)),
                "through": .integer(page.through),
            ])
            return jsonResponse(reply)
        }
        group.get("/webhooks") { _, _ -> Response in
            try jsonResponse(WebhookListReply(try await webhooks.all()))
        }
        group.get("/webhooks/:id") { _, context -> Response in
            try jsonResponse(WebhookReply(try await webhooks.endpoint(try Self.webhookID(context))))
        }
        group.get("/webhooks/:id/deliveries") { request, context -> Response in
            let id = try Self.webhookID(context)
            let query = request.uri.queryParameters
            try Self.onlyKnown(query, ["after", "limit"], what: "deliveries")
            let after = try AuditRoutes.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
            let limit = try AuditRoutes.integer(query["limit"].map(String.init), name: "limit", default: 100, range: 1...1_000)
            let deliveries = try await webhooks.deliveries(id, after: after, limit: Int(limit))
            return try jsonResponse(WebhookDeliveryListReply(deliveries, limit: Int(limit)))
        }
        group.get("/journal") { request, _ -> Response in
            let query = request.uri.queryParameters
            try Self.onlyKnown(query, ["from", "to", "after", "limit"], what: "the journal")
            let from = try Self.instant(query["from"].map(String.init), name: "from")
            let to = try Self.instant(query["to"].map(String.init), name: "to")
            let after = try AuditRoutes.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
            let limit = try AuditRoutes.integer(query["limit"].map(String.init), name: "limit", default: 1_000, range: 1...10_000)
            // A period that ends at or before it starts is empty: an empty page, as the document says.
            guard from < to else { return try jsonResponse(JournalReply(fromMicros: from, toMicros: to, entries: [], nextAfter: nil)) }
            let page = try await journal.page(fromMicros: from, toMicros: to, after: after, limit: Int(limit))
            return try jsonResponse(JournalReply(fromMicros: from, toMicros: to, entries: page.entries, nextAfter: page.nextAfter))
        }
    }

    public func registerChanges(on group: RouterGroup<Context>) {
        group.post("/subscriptions") { request, _ -> Response in
            let body = try await StrictJSON.decode(SubscriptionBody.self, of: request)
            let created = try await subscriptions.create(name: body.name, types: body.types, streamPrefixes: body.streamPrefixes, from: body.start)
            return try jsonResponse(SubscriptionReply(created), status: .created)
        }
        group.post("/subscriptions/:name/ack") { request, context -> Response in
            let name = try context.parameters.require("name")
            let position = try await StrictJSON.decode(AcknowledgementBody.self, of: request).position
            return try jsonResponse(SubscriptionReply(try await subscriptions.acknowledge(name, through: position)))
        }
        group.delete("/subscriptions/:name") { _, context -> Response in
            try await subscriptions.delete(try context.parameters.require("name"))
            return Response(status: .noContent)
        }
        group.post("/webhooks") { request, _ -> Response in
            let body = try await StrictJSON.decode(WebhookBody.self, of: request)
            return try jsonResponse(
                WebhookReply(try await webhooks.register(url: body.url, secret: body.secret, types: body.types)),
                status: .created
            )
        }
        group.post("/webhooks/:id/redeliver") { request, context -> Response in
            let id = try Self.webhookID(context)
            let from = try await StrictJSON.decode(RedeliveryBody.self, of: request).from
            return try jsonResponse(WebhookReply(try await webhooks.redeliver(id, from: from)))
        }
        // An operator's pause, resume and delete (security review 4, L6): bodiless (an empty JSON object is taken too).
        for (path, change) in [("pause", WebhookChange.pause), ("resume", .resume)] {
            group.post("/webhooks/:id/\(path)") { request, context -> Response in
                let id = try Self.webhookID(context)
                _ = try await StrictJSON.decode(EmptyBody.self, of: request)
                return try jsonResponse(WebhookReply(try await webhooks.apply(change, to: id)))
            }
        }
        group.delete("/webhooks/:id") { _, context -> Response in
            _ = try await webhooks.apply(.delete, to: try Self.webhookID(context))
            return Response(status: .noContent)
        }
        group.post("/webhooks/:id/rotate-secret") { request, context -> Response in
            let id = try Self.webhookID(context)
            let body = try await StrictJSON.decode(RotationBody.self, of: request)
            return try jsonResponse(WebhookReply(try await webhooks.rotateSecret(id, secret: body.secret, grace: body.grace)))
        }
    }

    static func onlyKnown(_ query: Hummingbird.Parameters, _ known: Set<String>, what: String) throws {
        for (name, _) in query where !known.contains(String(name)) {
            throw APIError.badRequest("unknown_parameter", "\(what) does not take \(name)", field: String(name))
        }
    }

    static func webhookID(_ context: Context) throws -> UUID {
        let raw = try context.parameters.require("id")
        guard let id = UUID(uuidString: raw) else { throw APIError.notFound("no webhook \(raw)") }
        return id
    }

    /// An RFC 3339 instant, or a date `YYYY-MM-DD` (its midnight UTC), in microseconds.
    static func instant(_ text: String?, name: String) throws -> Int64 {
        guard let text else { throw APIError.badRequest("missing_parameter", "\(name) is required", field: name) }
        if let date = BusinessDate(text), let micros = RFC3339.micros("\(date)T00:00:00Z") { return micros }
        guard let micros = RFC3339.micros(text) else {
            throw APIError.badRequest("invalid_parameter", "\(name) must be a date YYYY-MM-DD or an RFC 3339 time", field: name)
        }
        return micros
    }
}

/// `POST /subscriptions {name, types?, stream_prefixes?, from?}`; `from` is a position ≥ 0 or `"now"` (absent: 0).
struct SubscriptionBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable {
        case name, types, from
        case streamPrefixes = "stream_prefixes"
    }
    static let subject = "a subscription"
    let name: String
    let types: [String]
    let streamPrefixes: [String]
    let start: SubscriptionService.Start
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: Member.self)
        name = try body.string(.name)
        types = try body.strings(.types)
        streamPrefixes = try body.strings(.streamPrefixes)
        switch try body.value(.from) {
        case nil: start = .after(0)
        case .string("now")?: start = .now
        case .integer(let position)? where position >= 0: start = .after(position)
        default: throw RequestFields.invalid("from", "from must be a position ≥ 0 or \"now\"")
        }
    }
}

/// `POST /subscriptions/{name}/ack {position}`.
struct AcknowledgementBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable { case position }
    static let subject = "an acknowledgement"
    let position: Int64
    init(from decoder: any Decoder) throws { position = try decoder.container(keyedBy: Member.self).integer(.position) }
}

/// `POST /webhooks {url, secret, types?}` (the service checks the URL, the secret and the types).
struct WebhookBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable { case url, secret, types }
    static let subject = "a webhook"
    let url: String
    let secret: String
    let types: [String]
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: Member.self)
        url = try body.string(.url)
        secret = try body.string(.secret)
        types = try body.strings(.types)
    }
}

/// `POST /webhooks/{id}/redeliver {from}`.
struct RedeliveryBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable { case from }
    static let subject = "a redelivery"
    let from: Int64
    init(from decoder: any Decoder) throws { from = try decoder.container(keyedBy: Member.self).integer(.from) }
}

/// `POST /webhooks/{id}/rotate-secret {secret, grace_seconds?}`: the old secret still signs for `grace_seconds`
/// (0…30 days; absent: ``WebhookService/defaultGrace``).
struct RotationBody: JSONRequestBody {
    enum Member: String, CodingKey, CaseIterable {
        case secret
        case graceSeconds = "grace_seconds"
    }
    static let subject = "a secret rotation"
    let secret: String
    let grace: Duration
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: Member.self)
        secret = try body.string(.secret)
        let invalid = RequestFields.invalid("grace_seconds", "grace_seconds must be 0…2592000")
        guard body.holds(.graceSeconds) else {
            grace = WebhookService.defaultGrace
            return
        }
        guard let seconds = try? body.integer(.graceSeconds), (0...2_592_000).contains(seconds) else { throw invalid }
        grace = .seconds(seconds)
    }
}
