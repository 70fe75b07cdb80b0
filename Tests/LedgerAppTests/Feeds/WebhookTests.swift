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
import Synchronization
import Testing

/// Webhooks against a receiver on 127.0.0.1: signatures, order, retries, restarts, several daemons.
@Suite(.machine(.shared)) struct WebhookTests {
    let storefront = StorefrontDriver()
    static let secret = "whsec_test_0123456789abcdef"
    /// Retries fast enough for a test: 50 ms doubling up to 1 s.
    static let fastRetries = ["LEDGERD_WEBHOOK_RETRY_BASE_MS": "50", "LEDGERD_WEBHOOK_RETRY_MAX_SECONDS": "1"]

    func register(_ client: any TestClientProtocol, url: String, types: [String] = []) async throws -> WebhookReply {
        let typeList = types.map { "\"\($0)\"" }.joined(separator: ",")
        let (status, text) = try await call(client, .post, "/webhooks", #"{"url": "\#(url)", "secret": "\#(Self.secret)", "types": [\#(typeList)]}"#)
        #expect(status == 201, "\(text)")
        return try WireJSON.decode(WebhookReply.self, from: text)
    }

    /// Waits until the endpoint's cursor (committed with its delivery history) reaches `position`.
    func committed(_ client: any TestClientProtocol, _ id: String, through position: Int64?) async throws -> Bool {
        try await eventually {
            try WireJSON.decode(WebhookReply.self, from: try await call(client, .get, "/webhooks/\(id)").1).cursor >= (position ?? 0)
        }
    }

    func deliveries(_ client: any TestClientProtocol, _ id: String) async throws -> [WebhookDeliveryReply] {
        var all: [WebhookDeliveryReply] = []
        var after = 0
        while true {
            let page = try WireJSON.decode(
                WebhookDeliveryListReply.self,
                from: try await call(client, .get, "/webhooks/\(id)/deliveries?after=\(after)&limit=1000").1
            )
            all += page.deliveries
            guard let next = page.nextAfter else { return all }
            after = next
        }
    }

    /// The positions after `cursor` up to the head, of `types` (all when empty).
    func expected(_ services: ServiceContainer, after cursor: Int64, types: [String] = []) async throws -> [Int64] {
        try await services.store.read(from: cursor + 1, limit: 100_000).filter { types.isEmpty || types.contains($0.type) }.map(\.position)
    }

    /// The receiver answers 500 five times, then 200: every event arrives, in order, each signature valid;
    /// each failed attempt's retry is scheduled exactly by the documented policy and the next attempt
    /// comes no earlier.
    @Test(.timeLimit(.minutes(3))) func failuresAreRetriedWithTheDocumentedBackoffAndEveryEventArrivesInOrder() async throws {
        let receiver = WebhookReceiver(failures: 5, secrets: [Self.secret])
        try await receiver.serve { url in
            try await TestApp.withApp(seed: true, environment: Self.fastRetries) { client, services in
                let hook = try await register(client, url: url)
                for _ in 0..<3 { _ = try await storefront.placeOrder(client) }
                let want = try await expected(services, after: Int64(hook.cursor))
                let arrived = try await eventually { receiver.delivered.count >= want.count }
                #expect(arrived, "delivered \(receiver.delivered) of \(want)")
                #expect(receiver.delivered == want)
                #expect(receiver.hits.allSatisfy { $0.signatureValid && $0.bodyPosition == $0.position })
                // The failures were all on the first event, which was then delivered before any other.
                #expect(receiver.hits.prefix(6).allSatisfy { $0.position == want[0] })
                // Each POST is counted by its outcome (the five 500s answered before the first 200), and the workers' runs.
                let page = services.metrics.exposition()
                #expect(page.contains(#"ledger_webhook_deliveries_total{outcome="failed"} 5"#), "\(page)")
                #expect(page.contains(#"ledger_webhook_deliveries_total{outcome="delivered"} "#))
                #expect(page.contains(#"ledger_job_runs_total{name="webhook_dispatch",outcome="success"} "#))

                // The receiver's 200s come before the dispatcher's commit of the history.
                #expect(try await committed(client, hook.id, through: want.last))
                let history = try await deliveries(client, hook.id)
                let failed = history.filter { !$0.delivered }
                #expect(failed.map(\.attempt) == [1, 2, 3, 4, 5])
                #expect(failed.allSatisfy { $0.statusCode == 500 })
                let policy = WebhookRetryPolicy(baseDelayMicros: 50_000, maximumDelayMicros: 1_000_000, giveUpAfterMicros: 86_400_000_000, seed: 1)
                for (index, attempt) in failed.enumerated() {
                    let at = try #require(RFC3339.micros(attempt.attemptedAt))
                    let retry = try #require(attempt.retryAt.flatMap(RFC3339.micros))
                    #expect(
                        retry - at == policy.delayMicros(afterFailedAttempts: attempt.attempt, endpoint: hook.id, position: Int64(attempt.position))
                    )
                    let next = history[history.firstIndex(of: attempt)! + 1]
                    #expect(try #require(RFC3339.micros(next.attemptedAt)) >= retry, "attempt \(index + 2) came before its retry time")
                }
                #expect(history.filter(\.delivered).map { Int64($0.position) } == want)
                let state = try WireJSON.decode(WebhookReply.self, from: try await call(client, .get, "/webhooks/\(hook.id)").1)
                #expect(state.cursor == (try await services.store.head().position) && state.state == "active" && state.attempts == 0)
            }
        }
    }

    /// A daemon stops while an event is being retried; another starts on the same database: nothing is
    /// lost, the order holds, and the history shows the attempts of both.
    @Test(.timeLimit(.minutes(3))) func aRestartMidRetryLosesNothing() async throws {
        let receiver = WebhookReceiver(failures: 0, secrets: [Self.secret])
        receiver.set(failing: true)
        let db = try await TestDatabase.fresh()
        try await receiver.serve { url in
            let registered = Mutex<WebhookReply?>(nil)
            try await TestApp.withApp(seed: true, database: db, environment: Self.fastRetries) { client, services in
                let hook = try await register(client, url: url)
                registered.withLock { $0 = hook }
                for _ in 0..<2 { _ = try await storefront.placeOrder(client) }
                #expect(try await eventually { receiver.hits.count >= 3 }, "no retries happened")
            }
            let failedBefore = receiver.hits.count
            receiver.set(failing: false)
            try await TestApp.withApp(database: db, environment: Self.fastRetries) { client, services in
                let hook = try #require(registered.withLock { $0 })
                let id = hook.id
                _ = try await storefront.placeOrder(client)
                let want = try await expected(services, after: Int64(hook.cursor))
                #expect(try await eventually { receiver.delivered.count >= want.count })
                #expect(receiver.delivered == want)
                #expect(receiver.hits.allSatisfy { $0.signatureValid })
                #expect(try await committed(client, id, through: want.last))
                let history = try await deliveries(client, id)
                #expect(history.filter { !$0.delivered }.count == failedBefore)
                #expect(history.filter(\.delivered).map { Int64($0.position) } == want)
            }
        }
    }

    /// Two daemons on one database deliver to one endpoint: each event exactly once, in order.
    @Test(.timeLimit(.minutes(3))) func twoDaemonsDeliverEachEventExactlyOnce() async throws {
        let receiver = WebhookReceiver(failures: 0, secrets: [Self.secret])
        let db = try await TestDatabase.fresh()
        let wanted = Mutex<[Int64]>([])
        try await receiver.serve { url in
            try await TestApp.withApp(seed: true, database: db) { first, services in
                try await TestApp.withApp(database: db) { second, _ in
                    let hook = try await register(first, url: url)
                    for index in 0..<12 { _ = try await storefront.placeOrder(index % 2 == 0 ? first : second, product: "Pen", amount: 3200) }
                    let want = try await expected(services, after: Int64(hook.cursor))
                    wanted.withLock { $0 = want }
                    #expect(try await eventually { receiver.hits.count >= want.count })
                }
            }
            // Both daemons have shut down (their dispatchers with them): a duplicate either arrived or never will.
            #expect(receiver.hits.map(\.position) == wanted.withLock { $0 }, "each event exactly once, in order")
        }
    }

    /// A type filter; a rotated secret signs alongside the new one during its grace period, and alone
    /// after it; an event failing for 24 h (the injected clock) pauses the endpoint; a redelivery resumes it.
    @Test(.timeLimit(.minutes(3))) func filtersRotationAndPausingAfterTheGiveUpTime() async throws {
        let receiver = WebhookReceiver(failures: 0, secrets: [Self.secret])
        let clock = SimulatedClock(Date())
        let newSecret = "whsec_rotated_fedcba9876543210"
        try await receiver.serve { url in
            try await TestApp.withApp(seed: true, clock: { clock.now }, environment: Self.fastRetries) { client, services in
                let hook = try await register(client, url: url, types: ["OrderOpened"])
                _ = try await storefront.placeOrder(client)
                let opened = try await expected(services, after: Int64(hook.cursor), types: ["OrderOpened"])
                #expect(try await eventually { receiver.delivered == opened })

                let (rotated, rotatedText) = try await call(
                    client,
                    .post,
                    "/webhooks/\(hook.id)/rotate-secret",
                    #"{"secret": "\#(newSecret)", "grace_seconds": 3600}"#
                )
                #expect(rotated == 200, "\(rotatedText)")
                #expect(!rotatedText.contains(newSecret) && !rotatedText.contains(Self.secret))
                receiver.set(secrets: [newSecret, Self.secret], requireAll: true)
                _ = try await storefront.placeOrder(client)
                #expect(try await eventually { receiver.delivered.count == 2 })
                #expect(receiver.hits.last?.signatureValid == true && receiver.hits.last?.signatureCount == 2)

                // After the grace period only the new secret signs.
                clock.advance(by: 3_601)
                receiver.set(secrets: [newSecret], requireAll: true)
                _ = try await storefront.placeOrder(client)
                #expect(try await eventually { receiver.delivered.count == 3 })
                #expect(receiver.hits.last?.signatureValid == true && receiver.hits.last?.signatureCount == 1)

                // Failing for 24 h of the injected clock: paused.
                receiver.set(failing: true)
                _ = try await storefront.placeOrder(client)
                #expect(try await eventually { receiver.hits.count >= 4 })
                // An hour at a time until the endpoint says so, not a fixed 30: a background worker can hold the endpoint
                // for an attempt it dated earlier while this loop's claims skip it (locked), all 30 of them on a loaded
                // machine (seen: still "active").
                var paused = try WireJSON.decode(WebhookReply.self, from: try await call(client, .get, "/webhooks/\(hook.id)").1)
                for _ in 0..<500 where paused.state != "paused" {
                    clock.advance(by: 3_600)
                    if try await !services.dispatcher.deliverDue() { try await Task.sleep(for: .milliseconds(20)) }
                    paused = try WireJSON.decode(WebhookReply.self, from: try await call(client, .get, "/webhooks/\(hook.id)").1)
                }
                #expect(paused.state == "paused", "\(paused)")
                let attempts = receiver.hits.count
                clock.advance(by: 3_600)
                try await services.dispatcher.deliverDue()
                #expect(receiver.hits.count == attempts, "a paused endpoint gets nothing")

                receiver.set(failing: false)
                let last = try #require(receiver.hits.last?.position)
                let (status, text) = try await call(client, .post, "/webhooks/\(hook.id)/redeliver", #"{"from": \#(last)}"#)
                #expect(status == 200, "\(text)")
                #expect(try await eventually { receiver.delivered.last == last })
                let all = try WireJSON.decode(WebhookListReply.self, from: try await call(client, .get, "/webhooks").1)
                #expect(all.webhooks.first?.state == "active")
            }
        }
    }

    /// L6: an operator pauses an endpoint (it receives nothing while paused), resumes it (it receives what was held, in
    /// order) and deletes it (nothing more arrives; it stays readable, `deleted`, with its delivery history, and takes
    /// no further change: 404). An unknown id is 404, an auditor's key 403, and none of it appends an event.
    @Test(.timeLimit(.minutes(3))) func anOperatorPausesResumesAndDeletesAnEndpoint() async throws {
        let receiver = WebhookReceiver(failures: 0, secrets: [Self.secret])
        try await receiver.serve { url in
            try await TestApp.withApp(seed: true, environment: Self.fastRetries) { client, services in
                let hook = try await register(client, url: url, types: ["OrderOpened"])
                let head = try await services.store.head().position
                for (method, path) in [(HTTPRequest.Method.post, "/pause"), (.post, "/resume"), (.delete, "")] {
                    let auditor = try await call(client, method, "/webhooks/\(hook.id)\(path)", key: TestApp.auditorKey)
                    #expect(auditor.0 == 403, "\(method) \(path): \(auditor)")
                    for id in [UUID().uuidString, "not-a-uuid"] {
                        let unknown = try await call(client, method, "/webhooks/\(id)\(path)")
                        #expect(unknown.0 == 404, "\(method) \(id)\(path): \(unknown)")
                    }
                }
                #expect(try await services.store.head().position == head)
                func state(_ text: String) throws -> String { try WireJSON.decode(WebhookReply.self, from: text).state }

                let paused = try await call(client, .post, "/webhooks/\(hook.id)/pause")
                #expect(paused.0 == 200 && (try? state(paused.1)) == "paused", "\(paused)")
                _ = try await storefront.placeOrder(client)
                let held = try await expected(services, after: Int64(hook.cursor), types: ["OrderOpened"])
                try await services.dispatcher.deliverDue()
                try await Task.sleep(for: .milliseconds(600))
                #expect(receiver.hits.isEmpty, "a paused endpoint gets nothing: \(receiver.hits.map(\.position))")

                let resumed = try await call(client, .post, "/webhooks/\(hook.id)/resume")
                #expect(resumed.0 == 200 && (try? state(resumed.1)) == "active", "\(resumed)")
                #expect(try await eventually { receiver.delivered == held }, "\(receiver.delivered) of \(held)")
                #expect(try await committed(client, hook.id, through: held.last))

                let deleted = try await call(client, .delete, "/webhooks/\(hook.id)")
                #expect(deleted.0 == 204, "\(deleted)")
                _ = try await storefront.placeOrder(client)
                try await services.dispatcher.deliverDue()
                try await Task.sleep(for: .milliseconds(600))
                #expect(receiver.delivered == held, "a deleted endpoint gets nothing more")
                let read = try await call(client, .get, "/webhooks/\(hook.id)")
                #expect(read.0 == 200 && (try? state(read.1)) == "deleted", "\(read)")
                let listed = try WireJSON.decode(WebhookListReply.self, from: try await call(client, .get, "/webhooks").1)
                #expect(listed.webhooks.map(\.state) == ["deleted"])
                #expect(try await deliveries(client, hook.id).filter(\.delivered).map { Int64($0.position) } == held)
                for (method, path, body) in [
                    (HTTPRequest.Method.post, "/resume", nil), (.post, "/pause", nil), (.post, "/redeliver", #"{"from": 1}"#),
                    (.post, "/rotate-secret", #"{"secret": "whsec_rotated_fedcba9876543210"}"#), (.delete, "", nil),
                ] {
                    let refused = try await call(client, method, "/webhooks/\(hook.id)\(path)", body)
                    #expect(refused.0 == 404, "\(method) \(path) on a deleted endpoint: \(refused)")
                }
                try await services.dispatcher.deliverDue()
                #expect(receiver.delivered == held)
            }
        }
    }

    /// Secrets never leave: not in the replies, not in the log, not in clear in the database, and the
    /// auditor role cannot read the endpoints at all. Bad registrations are refused, nothing appended.
    @Test func secretsStaySealedAndBadRegistrationsAreRefused() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let head = try await services.store.head().position
            let hook = try await register(client, url: "http://127.0.0.1:9/hook")
            let listed = try await call(client, .get, "/webhooks").1
            #expect(!listed.contains(Self.secret) && listed.contains(hook.id))
            let events = try await services.store.read(from: 1, limit: 100_000)
            #expect(!events.contains { $0.data.contains(Self.secret) || $0.metadata.contains(Self.secret) })
            let rows = try await services.client.query("SELECT sealed_secret FROM ledger.webhook_endpoints")
            for try await sealed in rows.decode(ByteBuffer.self) {
                #expect(!String(decoding: sealed.readableBytesView, as: UTF8.self).contains(Self.secret))
            }
            let cases: [(String, Int)] = [
                (#"{"url": "ftp://x/y", "secret": "\#(Self.secret)"}"#, 422),
                (#"{"url": "http://x/y", "secret": "short"}"#, 422),
                (#"{"url": "http://x/y", "secret": "\#(Self.secret)", "types": ["Nope"]}"#, 422),
                (#"{"url": "http://x/y"}"#, 422),
                (#"{"url": "http://x/y", "secret": "\#(Self.secret)", "more": true}"#, 400),
                ("[]", 400),
            ]
            for (body, expected) in cases {
                let (status, text) = try await call(client, .post, "/webhooks", body)
                #expect(status == expected, "\(body): \(text)")
            }
            #expect(try await Self.rows(services, "ledger.webhook_endpoints") == 1, "a refused registration was stored")
            #expect(try await call(client, .post, "/webhooks/\(hook.id)/redeliver", #"{"from": 0}"#).0 == 422)
            #expect(try await call(client, .get, "/webhooks/not-a-uuid").0 == 404)
            #expect(try await call(client, .get, "/webhooks/\(UUID().uuidString)").0 == 404)
            #expect(
                try await call(client, .post, "/webhooks", #"{"url": "http://x/y", "secret": "\#(Self.secret)"}"#, key: TestApp.auditorKey).0 == 403
            )
            #expect(try await services.store.head().position == head)
        }
        let db = try await TestDatabase.fresh()
        let denied = try await TestCluster.withClient(endpoint: db.endpoint, database: db.name, user: "ledger_auditor") { client -> Bool in
            do {
                for try await _ in try await client.query("SELECT count(*) FROM ledger.webhook_endpoints").decode(Int64.self) {}
                return false
            } catch { return String(reflecting: error).contains("42501") }
        }
        #expect(denied, "the auditor role must not read webhook endpoints")
    }

    /// Rows in a table of the feeds (sql/0012), read as the ledger's owner sees them.
    static func rows(_ services: ServiceContainer, _ table: String) async throws -> Int64 {
        var count: Int64 = -1
        for try await n in try await services.client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).decode(Int64.self) { count = n }
        return count
    }
}
