import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import PostgresNIO
import Testing

/// `method uri` with a JSON body and a key; the status and the reply's text.
func call(
    _ client: any TestClientProtocol,
    _ method: HTTPRequest.Method,
    _ uri: String,
    _ body: String? = nil,
    key: String? = TestApp.operatorKey
) async throws -> (Int, String) {
    var headers: HTTPFields = [.contentType: "application/json"]
    if let key { headers[.authorization] = "Bearer \(key)" }
    return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) {
        (Int($0.status.code), String(buffer: $0.body))
    }
}

/// The live feed: `GET /events/stream` as Server-Sent Events.
@Suite(.machine(.shared)) struct LiveFeedTests {
    let storefront = StorefrontDriver()

    /// Every event from position 1 in order, `id:` = position; a reconnect with `Last-Event-ID` resumes
    /// after it; new commits arrive while the stream is open; the type filter keeps only its types.
    @Test(.timeLimit(.minutes(3))) func theStreamDeliversEveryPositionInOrderAndResumesAfterLastEventID() async throws {
        try await TestApp.withApp(seed: true, live: true) { client, services in
            let port = try #require(client.port)
            _ = try await storefront.placeOrder(client)
            let head = try await services.store.head().position
            let first = try await readStream(port: port, query: "after=0") { $0.count >= head }
            #expect(first.status == 200)
            #expect(first.messages.compactMap { $0.id.flatMap(Int64.init) } == Array(1...head))
            let stored = try await services.store.read(from: 1, limit: Int(head))
            #expect(first.messages.map(\.data) == stored.map { EventJSON.render($0) })
            #expect(first.messages.map(\.event) == stored.map(\.type))

            // Resume after position 3 with Last-Event-ID (it wins over after=), then follow a new order.
            async let resumed = readStream(port: port, query: "after=0", lastEventID: "3") { messages in
                messages.contains { $0.event == "AuthorizationHoldPlaced" && (Int64($0.id ?? "") ?? 0) > head }
            }
            try await Task.sleep(for: .milliseconds(200))
            _ = try await storefront.placeOrder(client)
            let (status, messages) = try await resumed
            let newHead = try await services.store.head().position
            #expect(status == 200)
            #expect(messages.compactMap { $0.id.flatMap(Int64.init) } == Array(4...newHead))

            // Filtered: only OrderOpened, in order.
            let opened = try await readStream(port: port, query: "after=0&type=OrderOpened") { $0.count >= 2 }
            #expect(opened.messages.map(\.event) == ["OrderOpened", "OrderOpened"])
            let prefixed = try await readStream(port: port, query: "after=0&stream_prefix=hold-") { $0.count >= 2 }
            #expect(prefixed.messages.allSatisfy { $0.data.contains(#""stream":"hold-"#) })
        }
    }

    /// Bad input is a 4xx before the stream starts, and nothing is appended.
    @Test func badParametersAreRefusedAndTheStreamNeedsAKey() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let before = try await services.store.head().position
            for uri in ["/events/stream?after=-1", "/events/stream?after=x", "/events/stream?limit=3", "/events/stream?type="] {
                let (status, text) = try await call(client, .get, uri, key: TestApp.auditorKey)
                #expect(status == 400, "\(uri): \(text)")
                #expect(text.contains(#""error""#))
            }
            var headers: HTTPFields = [.authorization: "Bearer \(TestApp.auditorKey)"]
            headers[HTTPField.Name("Last-Event-ID")!] = "abc"
            let status = try await client.execute(uri: "/events/stream", method: .get, headers: headers) { $0.status.code }
            #expect(status == 400)
            #expect(try await call(client, .get, "/events/stream", key: nil).0 == 401)
            #expect(try await services.store.head().position == before)
        }
    }
}

/// Durable subscriptions: create, read after the checkpoint, acknowledge, lag, long poll.
@Suite(.machine(.shared)) struct SubscriptionTests {
    let storefront = StorefrontDriver()

    struct Page: Decodable {
        struct Event: Decodable {
            let position: Int64
            let type: String
        }
        let subscription: SubscriptionReply
        let events: [Event]
        let through: Int64
    }

    @Test func aSubscriptionReadsAfterItsCheckpointAndMovesOnlyWhenAcknowledged() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let (created, text) = try await call(client, .post, "/subscriptions", #"{"name": "erp", "types": ["OrderOpened", "HoldCaptured"]}"#)
            #expect(created == 201, "\(text)")
            _ = try await storefront.placeOrder(client)
            _ = try await storefront.placeOrder(client)
            let head = try await services.store.head().position

            let (status, pageText) = try await call(client, .get, "/subscriptions/erp/events?limit=1", key: TestApp.auditorKey)
            #expect(status == 200, "\(pageText)")
            let page = try JSONDecoder().decode(Page.self, from: Data(pageText.utf8))
            #expect(page.events.map(\.type) == ["OrderOpened"])
            #expect(page.through == page.events[0].position)
            // Not acknowledged: the same page again (at least once).
            let again = try JSONDecoder().decode(Page.self, from: Data(try await call(client, .get, "/subscriptions/erp/events?limit=1").1.utf8))
            #expect(again.events.map(\.position) == page.events.map(\.position))
            #expect(try await call(client, .post, "/subscriptions/erp/ack", #"{"position": \#(page.through)}"#).0 == 200)
            let rest = try JSONDecoder().decode(Page.self, from: Data(try await call(client, .get, "/subscriptions/erp/events").1.utf8))
            #expect(rest.events.map(\.type) == ["OrderOpened"])
            #expect(rest.through == head, "a filtered page is complete up to the head")
            let (acked, ackText) = try await call(client, .post, "/subscriptions/erp/ack", #"{"position": \#(rest.through)}"#)
            #expect(acked == 200)
            let reply = try WireJSON.decode(SubscriptionReply.self, from: ackText)
            #expect(reply.checkpoint == head && reply.lag == 0)
            // An older ack does not move it back.
            #expect(
                try WireJSON.decode(SubscriptionReply.self, from: try await call(client, .post, "/subscriptions/erp/ack", #"{"position": 1}"#).1)
                    .checkpoint == head
            )
            let list = try WireJSON.decode(SubscriptionListReply.self, from: try await call(client, .get, "/subscriptions").1)
            #expect(list.subscriptions.map(\.name) == ["erp"])

            // A long poll returns as soon as a matching event commits.
            async let waited = call(client, .get, "/subscriptions/erp/events?wait=30")
            try await Task.sleep(for: .milliseconds(300))
            _ = try await storefront.placeOrder(client)
            let woke = try JSONDecoder().decode(Page.self, from: Data(try await waited.1.utf8))
            #expect(woke.events.map(\.type) == ["OrderOpened"])

            // Starting "now" skips the past; the same name with the same filter is the same subscription.
            let now = try WireJSON.decode(
                SubscriptionReply.self,
                from: try await call(client, .post, "/subscriptions", #"{"name": "wh", "from": "now"}"#).1
            )
            #expect(now.checkpoint == (try await services.store.head().position))
            #expect(try await call(client, .post, "/subscriptions", #"{"name": "wh", "from": "now"}"#).0 == 201)
            #expect(try await call(client, .delete, "/subscriptions/wh").0 == 204)
            #expect(try await call(client, .get, "/subscriptions/wh/events").0 == 404)
        }
    }

    @Test func badSubscriptionRequestsAreRefusedWithNothingAppended() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            _ = try await call(client, .post, "/subscriptions", #"{"name": "s"}"#)
            let head = try await services.store.head().position
            let table = try await Self.subscriptionRows(services)
            let cases: [(HTTPRequest.Method, String, String?, Int)] = [
                (.post, "/subscriptions", "{", 400),
                (.post, "/subscriptions", #"{"name": "bad name"}"#, 422),
                (.post, "/subscriptions", #"{"name": "x", "types": ["NoSuchType"]}"#, 422),
                (.post, "/subscriptions", #"{"name": "x", "from": -1}"#, 422),
                (.post, "/subscriptions", #"{"name": "x", "extra": 1}"#, 400),
                (.post, "/subscriptions", #"{"name": "s", "types": ["OrderOpened"]}"#, 409),
                (.post, "/subscriptions/s/ack", #"{"position": 99999999}"#, 422),
                (.post, "/subscriptions/s/ack", #"{"position": "1"}"#, 422),
                (.post, "/subscriptions/none/ack", #"{"position": 1}"#, 404),
                (.get, "/subscriptions/s/events?limit=0", nil, 400),
                (.get, "/subscriptions/s/events?wait=61", nil, 400),
                (.get, "/subscriptions/none/events", nil, 404),
            ]
            for (method, uri, body, expected) in cases {
                let (status, text) = try await call(client, method, uri, body)
                #expect(status == expected, "\(method) \(uri) \(body ?? ""): \(text)")
                #expect(text.contains(#""error""#), "\(text)")
            }
            // Changes need the operator key.
            #expect(try await call(client, .post, "/subscriptions", #"{"name": "y"}"#, key: TestApp.auditorKey).0 == 403)
            #expect(try await services.store.head().position == head)
            // The routes write a table, not the log: it holds the one subscription, its checkpoint and filters as made.
            #expect(try await Self.subscriptionRows(services) == table)
            #expect(table.count == 1, "\(table)")
        }
    }

    /// Every subscription row as text (name, types, prefixes, checkpoint, acknowledged or not).
    static func subscriptionRows(_ services: ServiceContainer) async throws -> [String] {
        var rows: [String] = []
        let query: PostgresQuery = """
            SELECT concat_ws('|', name, types::text, stream_prefixes::text, checkpoint, acked_at IS NOT NULL)
            FROM ledger.subscriptions ORDER BY name
            """
        for try await row in try await services.client.query(query).decode(String.self) { rows.append(row) }
        return rows
    }
}
