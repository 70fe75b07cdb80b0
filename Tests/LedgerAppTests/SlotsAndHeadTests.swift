import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerHTTP
import LedgerHTTPServer
import LedgerTestSupport
import Logging
import NIOCore
import Testing

/// Security review 4: expensive slots taken only by authenticated callers on expensive routes (M4), a reply that stops
/// advancing closes its connection and gives its slot back (M5), connections grouped by IPv6 /64 with a reserve for
/// `/health` (L4), and HEAD answered on every GET route (RFC 9110 §9.3.2).
@Suite(.machine(.shared)) struct SlotsAndHeadTests {
    static let health = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"

    /// M4: four anonymous connections sending `POST /payment?as_of=1` with a long body at a trickle took all four slots
    /// (`as_of` on any path was expensive, counted before authentication), and `GET /audit/verify` with a valid key was
    /// 429. Now the payment is not expensive and an anonymous caller takes no slot: the verification is 200.
    @Test(.timeLimit(.minutes(5))) func anonymousSlowBodiesTakeNoExpensiveSlot() async throws {
        let environment = [
            "LEDGERD_EXPENSIVE_REQUEST_LIMIT": "4", "LEDGERD_HTTP_BODY_TIMEOUT_SECONDS": "60", "LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "60",
        ]
        try await TestApp.withApp(seed: true, environment: environment, live: true) { client, services in
            let port = try #require(client.port)
            let before = try await services.store.head().position
            var slow: [ByteClient] = []
            for _ in 0..<4 {
                let connection = try await ByteClient.connect(port: port)
                try await connection.send(
                    "POST /payment?as_of=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 65000\r\n\r\n{"
                )
                slow.append(connection)
            }
            try await Task.sleep(for: .milliseconds(500))
            try await client.execute(uri: "/audit/verify", method: .get, headers: [.authorization: "Bearer \(TestApp.auditorKey)"]) { response in
                #expect(response.status == .ok, "\(response.status): \(String(buffer: response.body))")
            }
            // Without a key: 401, never 429.
            try await client.execute(uri: "/audit/verify", method: .get) { #expect($0.status == .unauthorized) }
            #expect(try await services.store.head().position == before)
            _ = slow
        }
    }

    /// An app on the daemon's connection policy with a write timeout of `writeTimeout`, one expensive slot, and an export
    /// route writing `chunks` parts of 64 KiB.
    static func withStreamingServer(
        policy: HTTPConnectionPolicy,
        _ body: @escaping @Sendable (_ port: Int) async throws -> Void
    ) async throws {
        let router = Router()
        router.add(middleware: ExpensiveRequestLimitMiddleware(ExpensiveRequestLimit(limit: 1)) { _, _ in "key" })
        router.get("/console/audit/events.jsonl") { request, _ -> Response in
            let chunks = Int(request.uri.queryParameters["chunks"].map(String.init) ?? "1") ?? 1
            let part = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 * 1024)
            return Response(
                status: .ok,
                body: ResponseBody { writer in
                    for _ in 0..<chunks { try await writer.write(part) }
                    try await writer.finish(nil)
                }
            )
        }
        router.get("/health") { _, _ in "ok" }
        router.get("/other") { _, _ in "other" }
        let app = Application(router: router, server: .http1(configuration: policy.http1Configuration(logger: TestCluster.logger)))
        try await app.test(.live) { client in try await body(try #require(client.port)) }
    }

    /// M5: a client that stops reading a large export held its connection, its slot and a page of events for ever
    /// (Hummingbird's idle timer does nothing while a reply is in progress). With a write timeout of 2 s the connection
    /// is closed once its reply has not advanced for that long, and the export's slot is free again.
    @Test(.timeLimit(.minutes(3))) func aClientThatStopsReadingIsClosedAndItsSlotFreed() async throws {
        let policy = HTTPConnectionPolicy(idleTimeout: .seconds(120), writeTimeout: .seconds(2))
        try await Self.withStreamingServer(policy: policy) { port in
            let stalled = try await ByteClient.connect(port: port)
            try await stalled.channel.setOption(ChannelOptions.autoRead, value: false).get()
            // 6.4 GB: far more than the sockets' buffers hold.
            try await stalled.send("GET /console/audit/events.jsonl?chunks=100000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            try await Task.sleep(for: .milliseconds(500))
            // While it is held, the one slot is taken.
            let busy = try await ByteClient.connect(port: port)
            try await busy.send("GET /console/audit/events.jsonl HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let refused = try await busy.response(within: .seconds(20))
            #expect(refused.hasPrefix("HTTP/1.1 429"), "\(refused.prefix(200))")
            // Within the timeout (and slack for a loaded machine) the stalled reply is closed and the slot given back.
            let started = ContinuousClock.now
            var served = false
            while !served, ContinuousClock.now - started < .seconds(2 + 15) {
                try await Task.sleep(for: .milliseconds(500))
                let again = try await ByteClient.connect(port: port)
                try await again.send("GET /console/audit/events.jsonl HTTP/1.1\r\nHost: localhost\r\n\r\n")
                served = try await again.response(within: .seconds(10)).hasPrefix("HTTP/1.1 200")
                again.channel.close(promise: nil)
            }
            #expect(served, "the stalled export still held its slot after \(ContinuousClock.now - started)")
            #expect(ContinuousClock.now - started >= .seconds(1), "the slot came back before the write timeout")
        }
    }

    /// L4: an IPv6 client is its /64; an IPv4 address (mapped ones too) is itself.
    @Test func anIPv6ClientIsItsSlash64() {
        #expect(ConnectionLimit.client(ofAddress: "2001:db8:0:1::1") == "2001:db8:0:1::/64")
        #expect(ConnectionLimit.client(ofAddress: "2001:db8:0:1:ffff:ffff:ffff:fffe") == "2001:db8:0:1::/64")
        #expect(ConnectionLimit.client(ofAddress: "2001:db8:0:2::1") == "2001:db8:0:2::/64")
        #expect(ConnectionLimit.client(ofAddress: "::ffff:192.0.2.7") == "192.0.2.7")
        #expect(ConnectionLimit.client(ofAddress: "192.0.2.7") == "192.0.2.7")
        #expect(ConnectionLimit.client(ofAddress: "::1") == "0:0:0:0::/64")
        #expect(ConnectionLimit.client(ofAddress: "unknown") == "unknown")
    }

    /// L4: the per-client cap counts an IPv6 /64 as one client (one subscriber holds as many addresses as it likes);
    /// beyond the cap in all, the reserve admits a connection for `/health` only, and beyond that it is refused.
    @Test func theConnectionCapGroupsAnIPv6Slash64AndKeepsAReserve() {
        let limit = ConnectionLimit(maximum: 3, perClient: 2, healthReserve: 1, logger: TestCluster.logger)
        #expect(limit.opened(address: "2001:db8::1") == nil)
        #expect(limit.opened(address: "2001:db8::2") == nil)
        #expect(limit.opened(address: "2001:db8::3:4") == .client)
        limit.closed(address: "2001:db8::3:4")
        #expect(limit.opened(address: "2001:db8:0:9::1") == nil)
        #expect(limit.opened(address: "192.0.2.1") == .healthOnly)
        #expect(limit.opened(address: "192.0.2.2") == .server)
    }

    /// L4: nine addresses held every connection and `/health` was refused. With every slot taken, a connection from
    /// the reserve is served `GET /health` (and closed after it); any other request on it is closed unanswered.
    @Test(.timeLimit(.minutes(3))) func healthIsServedFromTheReserveWhenEverySlotIsTaken() async throws {
        let policy = HTTPConnectionPolicy(idleTimeout: .seconds(60), maximumConnections: 2, healthReserve: 1)
        try await Self.withStreamingServer(policy: policy) { port in
            var held: [ByteClient] = []
            for _ in 0..<2 {
                let connection = try await ByteClient.connect(port: port, from: "127.0.0.3")
                try await connection.send(Self.health)
                try #require(try await connection.response(within: .seconds(20)).contains("200 OK"))
                held.append(connection)
            }
            let other = try await ByteClient.connect(port: port, from: "127.0.0.4")
            try? await other.send("GET /other HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(await other.closed(within: .seconds(20)) && !other.received.contains("200 OK"), "\(other.received)")
            let probe = try await ByteClient.connect(port: port, from: "127.0.0.2")
            try await probe.send(Self.health)
            #expect(try await probe.response(within: .seconds(20)).contains("200 OK"), "/health was refused with every slot taken")
            #expect(await probe.closed(within: .seconds(20)), "the reserve's connection was kept after its reply")
            _ = held
        }
    }

    /// HEAD on a GET route (RFC 9110 §9.3.2) was 405 with `Allow: GET`. Now: the GET's status and headers, no body,
    /// on the wire as `curl -I` sees it (the connection stays usable: the reply is framed without a body).
    @Test(.timeLimit(.minutes(3))) func headIsAnsweredAsGetWithoutABody() async throws {
        try await TestApp.withApp(seed: true, live: true) { client, _ in
            let port = try #require(client.port)
            for (path, key, status) in [
                ("/health", nil, "200"), ("/inventory", nil, "200"), ("/orders", nil, "401"), ("/orders", TestApp.auditorKey, "200"),
            ] {
                let connection = try await ByteClient.connect(port: port)
                let authorization = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
                try await connection.send("HEAD \(path) HTTP/1.1\r\nHost: localhost\r\n\(authorization)\r\n")
                let deadline = ContinuousClock.now + .seconds(20)
                while !connection.received.contains("\r\n\r\n"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                try await Task.sleep(for: .milliseconds(200))
                let reply = connection.received
                #expect(reply.hasPrefix("HTTP/1.1 \(status)"), "HEAD \(path): \(reply)")
                #expect(reply.hasSuffix("\r\n\r\n"), "HEAD \(path) carried a body: \(reply)")
                #expect(reply.lowercased().contains("content-type: application/json"), "HEAD \(path): \(reply)")
                // Framed without a body: the next request on the connection is answered.
                try await connection.send(Self.health)
                while !String(connection.received.dropFirst(reply.count)).contains("\r\n\r\n"), ContinuousClock.now < deadline + .seconds(20) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let next = String(connection.received.dropFirst(reply.count))
                #expect(next.hasPrefix("HTTP/1.1 200"), "the connection was not usable after HEAD \(path): \(next)")
            }
            // The GET's length is the HEAD's.
            let length = try await client.execute(uri: "/inventory", method: .get) { $0.headers[.contentLength] }
            try await client.execute(uri: "/inventory", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.contentLength] == length && length != nil)
            }
        }
    }

    /// HEAD on a streamed export: the GET's status and headers, no body, and its slot not left held (the body is never
    /// run; dropping it gives the slot back): a GET after it is served.
    @Test func headOnAStreamedExportHoldsNoSlot() async throws {
        let router = Router()
        router.add(middleware: ExpensiveRequestLimitMiddleware(ExpensiveRequestLimit(limit: 1, exportsPerKey: 1)) { _, _ in "key" })
        router.get("/console/audit/events.jsonl") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "application/x-ndjson"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "{}\n"))
                    try await writer.finish(nil)
                }
            )
        }
        router.post("/console/reports") { _, _ in "uploaded" }
        let checked = MethodCheckedRouter(router) { message, _, _ in
            Response(status: .methodNotAllowed, body: .init(byteBuffer: ByteBuffer(string: message)))
        }
        try await Application(router: checked).test(.router) { client in
            for _ in 0..<3 {
                try await client.execute(uri: "/console/audit/events.jsonl", method: .head) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "application/x-ndjson")
                    #expect(response.body.readableBytes == 0)
                }
            }
            try await client.execute(uri: "/console/audit/events.jsonl", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "{}\n")
            }
            // `Allow` lists HEAD where it lists GET; a HEAD on a path without GET is 405.
            try await client.execute(uri: "/console/audit/events.jsonl", method: .delete) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "GET, HEAD")
            }
            try await client.execute(uri: "/console/reports", method: .head) { response in
                #expect(response.status == .methodNotAllowed)
                #expect(response.headers[.allow] == "POST")
                #expect(response.body.readableBytes == 0)
            }
        }
    }
}
