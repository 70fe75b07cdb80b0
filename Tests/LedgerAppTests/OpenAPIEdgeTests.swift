import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerService
import LedgerApp
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// Regression tests for what schemathesis found at the HTTP edge against the published document (issue 31,
/// `deploy/openapi/fuzz.sh`), each checked here on the real router without the fuzzer: the refusal's status and error
/// shape, and that nothing was written (the log's head and the tables the routes write).
@Suite(.machine(.shared)) struct OpenAPIEdgeTests {
    /// `POST /subscriptions` with U+0000 in `stream_prefixes` was a 500 (PostgreSQL cannot store the character); so
    /// would a webhook's URL or types have been. Now 422 `invalid_field` naming the member, and no row is written.
    @Test func aNulCharacterInABodyIsRefusedAndWritesNothing() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let head = try await services.store.head().position
            let before = try await Self.rows(services)
            let secret = String(repeating: "s", count: 32)
            for (uri, body, field) in [
                ("/subscriptions", #"{"name": "erp", "stream_prefixes": ["order-\u0000"]}"#, "stream_prefixes"),
                ("/subscriptions", #"{"name": "erp", "stream_prefixes": ["order-\u0001"]}"#, "stream_prefixes"),
                ("/subscriptions", #"{"name": "erp", "types": ["OrderOpened\u0000"]}"#, "types"),
                ("/webhooks", #"{"url": "https://example.com/\u0000", "secret": "\#(secret)"}"#, "url"),
                ("/webhooks", #"{"url": "https://example.com/hook", "secret": "\#(secret)\u0000"}"#, "secret"),
                ("/webhooks", #"{"url": "https://example.com/hook", "secret": "\#(secret)", "types": ["Order\u0000Opened"]}"#, "types"),
                ("/webhooks/00000000-0000-0000-0000-000000000000/rotate-secret", #"{"secret": "\#(secret)\u0000"}"#, "secret"),
            ] {
                let (status, text) = try await call(client, .post, uri, body)
                #expect(status == 422, "\(uri) \(body): \(text)")
                #expect(text.contains(#""code":"invalid_field""#) && text.contains(#""field":"\#(field)""#), "\(uri) \(body): \(text)")
            }
            #expect(try await services.store.head().position == head)
            #expect(try await Self.rows(services) == before)
            // The same bodies without the character are taken: the refusal is the character's.
            #expect(try await call(client, .post, "/subscriptions", #"{"name": "erp", "stream_prefixes": ["order-"]}"#).0 == 201)
            #expect(try await Self.rows(services).subscriptions == before.subscriptions + 1)
        }
    }

    /// `GET /events?stream_prefix=%00` (and `type`, `correlation_id`) was a 500; the live feed reads the same filter.
    /// Now 400 `invalid_parameter` naming the parameter; other control characters likewise (they match no stored text).
    @Test func aControlCharacterInTheFeedsFilterIsRefused() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            for (query, field) in [
                ("stream_prefix=%00", "stream_prefix"), ("type=ProductListed%00", "type"), ("correlation_id=%00", "correlation_id"),
                ("stream_prefix=order-%01", "stream_prefix"), ("type=ProductListed,%7F", "type"),
            ] {
                // The live feed takes the filter but not correlation_id (an unknown parameter there).
                for path in field == "correlation_id" ? ["/events"] : ["/events", "/events/stream"] {
                    let (status, text) = try await call(client, .get, "\(path)?\(query)")
                    #expect(status == 400, "\(path)?\(query): \(text)")
                    #expect(text.contains(#""code":"invalid_parameter""#) && text.contains(#""field":"\#(field)""#), "\(path)?\(query): \(text)")
                }
            }
            let (status, text) = try await call(client, .get, "/events?type=ProductListed&stream_prefix=product-")
            #expect(status == 200 && text.contains(#""type":"ProductListed""#), "\(text)")
        }
    }

    /// Test audit 3, §3: the refusals of break resolution, webhook redelivery and rotation, subscription
    /// acknowledgement and deletion, each checked against what those routes write — the log (a resolution is an event)
    /// and the rows of `ledger.subscriptions` and `ledger.webhook_endpoints` as a whole (a checkpoint, a cursor, a
    /// sealed secret), not only their counts. Malformed JSON, a wrong type, a missing or unknown member, a value out of
    /// range, an unknown target: each a 4xx with the error shape, and every row as it was.
    @Test func refusedFeedAndResolutionChangesLeaveTheirRowsAndTheLogAsTheyWere() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let created = try await call(client, .post, "/subscriptions", #"{"name": "erp", "from": 0}"#)
            #expect(created.0 == 201, "\(created.1)")
            let secret = "whsec_test_0123456789abcdef"
            let hook = try await call(client, .post, "/webhooks", #"{"url": "http://127.0.0.1:9/hook", "secret": "\#(secret)"}"#)
            #expect(hook.0 == 201, "\(hook.1)")
            let id = try WireJSON.decode(WebhookReply.self, from: hook.1).id
            let unknown = "00000000-0000-0000-0000-000000000000"
            let head = try await services.store.head().position
            let before = try await Self.tableRows(services)
            let refused: [(String, String, String?)] = [
                ("POST", "/subscriptions/erp/ack", #"{"position": "#),
                ("POST", "/subscriptions/erp/ack", "{}"),
                ("POST", "/subscriptions/erp/ack", #"{"position": "3"}"#),
                ("POST", "/subscriptions/erp/ack", #"{"position": -1}"#),
                ("POST", "/subscriptions/erp/ack", #"{"position": \#(head + 1_000)}"#),
                ("POST", "/subscriptions/erp/ack", #"{"position": 1, "extra": true}"#),
                ("POST", "/subscriptions/nope/ack", #"{"position": 1}"#),
                ("DELETE", "/subscriptions/nope", nil),
                ("POST", "/webhooks/\(id)/redeliver", #"{"from": "#),
                ("POST", "/webhooks/\(id)/redeliver", "{}"),
                ("POST", "/webhooks/\(id)/redeliver", #"{"from": "1"}"#),
                ("POST", "/webhooks/\(id)/redeliver", #"{"from": 0}"#),
                ("POST", "/webhooks/\(id)/redeliver", #"{"from": 1, "extra": true}"#),
                ("POST", "/webhooks/\(unknown)/redeliver", #"{"from": 1}"#),
                ("POST", "/webhooks/not-a-uuid/redeliver", #"{"from": 1}"#),
                ("POST", "/webhooks/\(id)/rotate-secret", #"{"secret": "#),
                ("POST", "/webhooks/\(id)/rotate-secret", "{}"),
                ("POST", "/webhooks/\(id)/rotate-secret", #"{"secret": 5}"#),
                ("POST", "/webhooks/\(id)/rotate-secret", #"{"secret": "short"}"#),
                ("POST", "/webhooks/\(id)/rotate-secret", #"{"secret": "\#(secret)-2", "grace": "soon"}"#),
                ("POST", "/webhooks/\(unknown)/rotate-secret", #"{"secret": "\#(secret)-2"}"#),
                ("POST", "/reconciliation/breaks/b-1/resolve", #"{"reason": "#),
                ("POST", "/reconciliation/breaks/b-1/resolve", "{}"),
                ("POST", "/reconciliation/breaks/b-1/resolve", #"{"reason": 5}"#),
                ("POST", "/reconciliation/breaks/b-1/resolve", #"{"reason": ""}"#),
                ("POST", "/reconciliation/breaks/b-1/resolve", #"{"reason": "fee agreed", "extra": 1}"#),
                ("POST", "/reconciliation/breaks/no-such-break/resolve", #"{"reason": "fee agreed"}"#),
            ]
            for (method, uri, body) in refused {
                let (status, text) = try await call(client, HTTPRequest.Method(method)!, uri, body)
                #expect((400..<500).contains(status), "\(method) \(uri) \(body ?? ""): \(status) \(text)")
                #expect(AccessAndLimitsTests.errorCode(text) != nil, "\(method) \(uri) \(body ?? ""): no error shape: \(text)")
            }
            #expect(try await services.store.head().position == head, "a refused change appended")
            #expect(try await Self.tableRows(services) == before, "a refused change wrote a row")
            // The same routes with good bodies do write (the refusals above were theirs, not a dead route's).
            #expect(try await call(client, .post, "/subscriptions/erp/ack", #"{"position": 1}"#).0 == 200)
            #expect(try await call(client, .post, "/webhooks/\(id)/rotate-secret", #"{"secret": "\#(secret)-2"}"#).0 == 200)
            #expect(try await Self.tableRows(services) != before)
            #expect(try await call(client, .delete, "/subscriptions/erp").0 == 204)
            #expect(try await Self.rows(services).subscriptions == 0)
        }
    }

    /// Every operation of the acquirer service's document but `/health` refuses a request without `X-API-Key` or with a
    /// wrong one (401, nothing journaled), and the right key gets past the check (test audit 3: dropping the check stayed
    /// green). The operations come from the document, so a new route is covered once it is documented.
    @Test func theAcquirerServiceRefusesAMissingOrWrongKeyOnEveryOperation() async throws {
        try await Self.withAcquirerService { client, journaled in
            let operations = try OpenAPIContractTests.operations(ofJSON: AcquirerOpenAPIDocument.json).subtracting(["GET /health"]).sorted()
            #expect(operations.count >= 12, "\(operations)")
            let before = try await journaled()
            for operation in operations {
                let parts = operation.split(separator: " ", maxSplits: 1)
                let method = HTTPRequest.Method(String(parts[0]))!
                let path = Self.acquirerPath(parts[1])
                let uri = method == .get && path.hasSuffix("/payments") ? path + "?merchantReference=order-1" : path
                for key in [nil, "wrong-key", AcquirerHarness.apiKey + "x"] {
                    var headers: HTTPFields = [.contentType: "application/json", HTTPField.Name("Idempotency-Key")!: "k-1"]
                    if let key { headers[HTTPField.Name("X-API-Key")!] = key }
                    let body: ByteBuffer? = method == .get ? nil : ByteBuffer(string: method == .put ? "[]" : "{}")
                    try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
                        #expect(response.status == .unauthorized, "\(operation) with key \(key ?? "none"): \(response.status)")
                        #expect(String(buffer: response.body).contains(#""error""#), "\(operation)")
                    }
                }
            }
            #expect(try await journaled() == before)
            // The right key gets past the check: the same request is answered by the model (an unknown reference).
            try await client.execute(
                uri: "/v1/payments?merchantReference=order-1",
                method: .get,
                headers: [HTTPField.Name("X-API-Key")!: AcquirerHarness.apiKey]
            ) { response in
                #expect(response.status != .unauthorized, "\(response.status)")
            }
        }
    }

    /// The acquirer service's changing operations (every POST and PUT of its document), with the right key, refuse what
    /// its README says they refuse — no `Idempotency-Key`, one over 200 bytes, a body that is not JSON, a body over the
    /// route's limit (1 MiB; 64 MiB for a batch's page, not sent) — each with the error shape, and journal nothing.
    @Test func theAcquirerServiceRefusesBadChangesAndJournalsNothing() async throws {
        try await Self.withAcquirerService { client, journaled in
            let changes = try OpenAPIContractTests.operations(ofJSON: AcquirerOpenAPIDocument.json)
                .filter { $0.hasPrefix("POST ") || $0.hasPrefix("PUT ") }.sorted()
            #expect(changes.count >= 7, "\(changes)")
            let before = try await journaled()
            for operation in changes {
                let parts = operation.split(separator: " ", maxSplits: 1)
                let method = HTTPRequest.Method(String(parts[0]))!
                let uri = Self.acquirerPath(parts[1])
                var cases: [(String, String?, ByteBuffer)] = [
                    ("no Idempotency-Key", nil, ByteBuffer(string: "{}")),
                    ("a 201-byte Idempotency-Key", String(repeating: "k", count: 201), ByteBuffer(string: "{}")),
                    ("a body that is not JSON", "bad-json-1", ByteBuffer(string: "not json")),
                ]
                if method == .post {
                    cases.append(("a body over 1 MiB", "big-1", ByteBuffer(repeating: UInt8(ascii: " "), count: (1 << 20) + 1)))
                }
                for (what, key, body) in cases {
                    var headers: HTTPFields = [.contentType: "application/json", HTTPField.Name("X-API-Key")!: AcquirerHarness.apiKey]
                    if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
                    try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
                        let text = String(buffer: response.body)
                        #expect((400..<500).contains(Int(response.status.code)), "\(operation), \(what): \(response.status) \(text)")
                        let expected: HTTPResponse.Status = what == "a body over 1 MiB" ? .contentTooLarge : .badRequest
                        #expect(response.status == expected, "\(operation), \(what): \(response.status)")
                        #expect(text.contains(#""error""#) && text.contains(#""message""#), "\(operation), \(what): \(text)")
                    }
                }
            }
            #expect(try await journaled() == before)
        }
    }

    /// The acquirer service's application on a fresh durable model, live: its client, and a count of its journal.
    static func withAcquirerService(
        _ body: @Sendable (any TestClientProtocol, @Sendable () async throws -> Int64) async throws -> Void
    ) async throws {
        let database = try await TestDatabase.fresh()
        try await AcquirerHarness.withModel(database: database) { owner, model in
            let app = AcquirerServer.application(
                model: model,
                client: owner,
                apiKey: AcquirerHarness.apiKey,
                faults: .none,
                logger: TestCluster.logger
            )
            @Sendable func journaled() async throws -> Int64 {
                for try await count in try await owner.query("SELECT count(*) FROM acquirer.journal").decode(Int64.self) { return count }
                return -1
            }
            try await app.test(.live) { client in try await body(client, journaled) }
        }
    }

    /// An acquirer operation's path with its parameters filled (a payment, a batch, its first page, a report number).
    static func acquirerPath(_ template: Substring) -> String {
        String(template)
            .replacingOccurrences(of: "{psp}", with: "psp-1").replacingOccurrences(of: "{batch}", with: "batch-1")
            .replacingOccurrences(of: "{page}", with: "0").replacingOccurrences(of: "{number}", with: "1")
    }

    /// How many subscriptions and webhook endpoints the tables hold.
    static func rows(_ services: ServiceContainer) async throws -> Rows {
        func count(_ query: PostgresQuery) async throws -> Int64 {
            for try await count in try await services.client.query(query).decode(Int64.self) { return count }
            return -1
        }
        return Rows(
            subscriptions: try await count("SELECT count(*) FROM ledger.subscriptions"),
            webhooks: try await count("SELECT count(*) FROM ledger.webhook_endpoints")
        )
    }

    /// Every row of the subscription and webhook tables, whole, in a stable order.
    static func tableRows(_ services: ServiceContainer) async throws -> [String] {
        var rows: [String] = []
        for query: PostgresQuery in [
            "SELECT row_to_json(s)::text FROM ledger.subscriptions s ORDER BY name",
            "SELECT row_to_json(w)::text FROM ledger.webhook_endpoints w ORDER BY id",
        ] {
            for try await row in try await services.client.query(query).decode(String.self) { rows.append(row) }
        }
        return rows
    }

    struct Rows: Equatable {
        var subscriptions: Int64
        var webhooks: Int64
    }
}
