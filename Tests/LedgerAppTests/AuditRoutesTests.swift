import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// The back-office history endpoints through the real router, and the access rules on them.
@Suite(.machine(.shared)) struct AuditRoutesTests {
    func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    func seed(_ services: ServiceContainer, count: Int) async throws {
        for n in 1...count {
            _ = try await services.writer.append(
                AppendRequest(
                    stream: StreamID("order-\(n % 3)")!,
                    expectedVersion: .any,
                    events: [
                        NewEvent(
                            type: "SampleRecorded",
                            data: #"{"n": \#(n), "note": "ü \"q\""}"#,
                            effectiveAt: Date(timeIntervalSince1970: 1_800_000_000.25)
                        )
                    ],
                    metadata: EventMetadata(correlationID: "c-\(n)", actor: "test")
                )
            )
        }
    }

    struct Feed: Decodable {
        struct Event: Decodable {
            let position: Int64
            let stream: String
            let version: Int64
            let type: String
            let data: [String: JSONValue]
            let metadata: [String: JSONValue]
            let effective_at: String
            let hash: String
        }
        let events: [Event]
        let next_after: Int64?
    }

    @Test func missingOrUnknownKeysAre401AndAuditorsCanRead() async throws {
        try await TestApp.withApp { client, services in
            try await seed(services, count: 3)
            try await client.execute(uri: "/events", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate] == "Bearer")
                #expect(String(buffer: response.body).contains(#""code":"unauthenticated""#))
            }
            try await client.execute(uri: "/events", method: .get, headers: bearer("wrong")) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/events", method: .get, headers: [.authorization: "Basic dXNlcjpwdw=="]) { response in
                #expect(response.status == .unauthorized)
            }
            for key in [TestApp.auditorKey, TestApp.operatorKey] {
                try await client.execute(uri: "/events", method: .get, headers: bearer(key)) { response in
                    #expect(response.status == .ok)
                    let feed = try JSONDecoder().decode(Feed.self, from: Data(buffer: response.body))
                    #expect(feed.events.map(\.position) == [1, 2, 3])
                }
            }
        }
    }

    @Test func pagingThroughTheFeedReturnsEveryEventOnceInOrder() async throws {
        try await TestApp.withApp { client, services in
            try await seed(services, count: 23)
            for pageSize in [1, 4, 7, 23, 50] {
                var after: Int64 = 0
                var seen: [Int64] = []
                while true {
                    let uri = "/events?after=\(after)&limit=\(pageSize)"
                    let feed = try await client.execute(uri: uri, method: .get, headers: bearer(TestApp.auditorKey)) { response in
                        try JSONDecoder().decode(Feed.self, from: Data(buffer: response.body))
                    }
                    seen += feed.events.map(\.position)
                    guard let next = feed.next_after else { break }
                    after = next
                }
                #expect(seen == Array(1...23), "page size \(pageSize)")
            }
        }
    }

    @Test func aStreamsHistoryShowsItsEventsAsStored() async throws {
        try await TestApp.withApp { client, services in
            try await seed(services, count: 6)
            let stored = try await services.store.readStream(StreamID("order-1")!)
            try await client.execute(uri: "/streams/order-1/events", method: .get, headers: bearer(TestApp.auditorKey)) { response in
                #expect(response.status == .ok)
                let body = String(buffer: response.body)
                let history = try JSONDecoder().decode(Feed.self, from: Data(buffer: response.body))
                #expect(history.events.map(\.version) == [1, 2])
                #expect(history.events.map(\.position) == stored.map(\.position))
                #expect(history.events.map(\.hash) == stored.map { $0.hash.map { String(format: "%02x", $0) }.joined() })
                #expect(history.events[0].effective_at == "2027-01-15T08:00:00.250000Z")
                // data and metadata are the stored jsonb text, verbatim
                #expect(body.contains(stored[0].data) && body.contains(stored[0].metadata))
            }
            try await client.execute(uri: "/streams/order-99/events", method: .get, headers: bearer(TestApp.auditorKey)) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    /// A stream's events come in pages: `limit` after `after_version`, with `next_after_version` while pages are full.
    @Test func aStreamsEventsArePaged() async throws {
        struct Page: Decodable {
            struct Event: Decodable { let version: Int64 }
            let events: [Event]
            let next_after_version: Int64?
        }
        try await TestApp.withApp { client, services in
            for n in 0..<5 {
                _ = try await services.writer.append(
                    AppendRequest(
                        stream: StreamID("sample-paged")!,
                        expectedVersion: .any,
                        events: [NewEvent(type: "SampleRecorded", data: #"{"n": \#(n)}"#, effectiveAt: Date())]
                    )
                )
            }
            var versions: [Int64] = []
            var after: Int64 = 0
            var pages = 0
            while true {
                let uri = "/streams/sample-paged/events?limit=2&after_version=\(after)"
                let page = try await client.execute(uri: uri, method: .get, headers: bearer(TestApp.auditorKey)) { response in
                    #expect(response.status == .ok)
                    return try JSONDecoder().decode(Page.self, from: Data(buffer: response.body))
                }
                pages += 1
                #expect(page.events.count <= 2)
                versions += page.events.map(\.version)
                guard let next = page.next_after_version else { break }
                after = next
            }
            #expect(versions == [1, 2, 3, 4, 5] && pages == 3)
            for bad in ["limit=0", "limit=1001", "after_version=-1", "offset=3"] {
                try await client.execute(uri: "/streams/sample-paged/events?\(bad)", method: .get, headers: bearer(TestApp.auditorKey)) {
                    #expect($0.status == .badRequest, "\(bad)")
                }
            }
        }
    }

    /// `/audit/verify` re-hashes at most its window per request and says where to continue (`next_from`).
    @Test func verifyIsBoundedToItsWindowAndSaysWhereToContinue() async throws {
        try await TestApp.withApp { _, services in
            try await seed(services, count: 7)
            let head = try await services.store.head().position
            let router = Router(context: LedgerRequestContext.self)
            AuditRoutes(reader: EventStoreReader(store: services.store, verifier: services.verifier, watcher: services.watcher), verifyWindow: 3)
                .register(on: router.group())
            try await Application(router: router).test(.router) { client in
                var from: Int64 = 1
                var checked: Int64 = 0
                var requests = 0
                while true {
                    let report = try await client.execute(uri: "/audit/verify?from=\(from)", method: .get) { response in
                        try JSONDecoder().decode(ChainReport.self, from: Data(buffer: response.body))
                    }
                    requests += 1
                    #expect(report.ok && report.checked <= 3)
                    checked += report.checked
                    guard let next = report.nextFrom else { break }
                    from = next
                }
                #expect(checked == head && requests == Int(head / 3) + 1)
                // A range inside the window is verified whole, with nothing to continue.
                let inside = try await client.execute(uri: "/audit/verify?from=2&to=4", method: .get) { response in
                    try JSONDecoder().decode(ChainReport.self, from: Data(buffer: response.body))
                }
                #expect(inside.ok && inside.checked == 3 && inside.nextFrom == nil)
            }
        }
    }

    @Test func verifyReportsTheChainAndRefusesBadRanges() async throws {
        try await TestApp.withApp { client, services in
            try await seed(services, count: 5)
            try await client.execute(uri: "/audit/verify", method: .get, headers: bearer(TestApp.auditorKey)) { response in
                #expect(response.status == .ok)
                let report = try JSONDecoder().decode(ChainReport.self, from: Data(buffer: response.body))
                #expect(report == ChainReport(ok: true, checked: 5))
            }
            try await client.execute(uri: "/audit/verify?from=0", method: .get, headers: bearer(TestApp.auditorKey)) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains(#""field":"from""#))
            }
            try await client.execute(uri: "/events?limit=5000", method: .get, headers: bearer(TestApp.auditorKey)) { response in
                #expect(response.status == .badRequest)
            }
        }
    }
}

/// Operator-only routes refuse auditor keys with 403 before their handler runs.
@Suite(.machine(.shared)) struct BackOfficeAuthMiddlewareTests {
    @Test func auditorsCannotChangeAnything() async throws {
        let keyring = try APIKeyring(operatorKeys: ["op"], auditorKeys: ["au"])
        let router = Router(context: LedgerRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        let calls = Counter()
        router.group().add(middleware: BackOfficeAuthMiddleware(keyring: keyring, access: .change))
            .post("/change") { _, context -> String in
                await calls.increment()
                return context.principal?.actor ?? "nobody"
            }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/change", method: .post, headers: [.authorization: "Bearer au"]) { response in
                #expect(response.status == .forbidden)
                #expect(String(buffer: response.body).contains(#""code":"forbidden""#))
            }
            try await client.execute(uri: "/change", method: .post) { response in
                #expect(response.status == .unauthorized)
            }
            #expect(await calls.value == 0)
            try await client.execute(uri: "/change", method: .post, headers: [.authorization: "Bearer op"]) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).hasPrefix("operator:"))
            }
            #expect(await calls.value == 1)
        }
    }

    actor Counter {
        var value = 0
        func increment() { value += 1 }
    }
}
