import Foundation
import LedgerApp
import LedgerHTTPServer
import LedgerTestSupport
import NIOCore
import Synchronization
import Testing

/// Security review 3, N1: a request body trickled in a byte at a time pinned its connection for ever, and one address
/// could take every connection slot, `/health` included. On a live app (the daemon's server configuration, 127.0.0.1):
/// a trickled body is closed at the body timeout; a body sent above the minimum rate outlives it and is answered; one
/// address is held to its own limit while another is served; and the probe's flood (1,030 connections sending a body
/// at 1 B/5 s) leaves `/health` answering another client. Bounds are generous and every loop stops by itself.
@Suite(.machine(.alone)) struct SlowClientTests {
    static let paymentHead = "POST /payment HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
    static let health = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"

    @Test(.timeLimit(.minutes(30))) func aBodyTrickledBelowTheMinimumRateIsClosedAtTheBodyTimeout() async throws {
        // The idle and head timeouts (60 s) would close nothing within the test's bound.
        let environment = [
            "LEDGERD_HTTP_BODY_TIMEOUT_SECONDS": "2", "LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "60", "LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS": "60",
        ]
        try await TestApp.withApp(environment: environment, live: true) { client, _ in
            let port = try #require(client.port)
            let slow = try await ByteClient.connect(port: port)
            try await slow.send(Self.paymentHead)
            let started = ContinuousClock.now
            var sent = 0
            // A byte every 300 ms: never idle, far below 500 B/s; stops by itself after 2 + 10 s.
            while ContinuousClock.now - started < .seconds(2 + 10) {
                guard (try? await slow.send("{")) != nil, await !slow.closed(within: .milliseconds(300)) else { break }
                sent += 1
            }
            let elapsed = ContinuousClock.now - started
            #expect(await slow.closed(within: .seconds(1)), "a trickled body was still open after \(elapsed) (\(sent) bytes)")
            #expect(elapsed >= .seconds(1), "closed after \(elapsed), before the body timeout")
            #expect(!slow.received.contains("HTTP/1.1 2"))
            // No "nothing appended" check: a body 60,000 bytes long that never arrives cannot append anything.
        }
    }

    @Test(.timeLimit(.minutes(30))) func aBodyAboveTheMinimumRateOutlivesTheBodyTimeoutAndIsAnswered() async throws {
        // 2 s base, 100 B/s: each 100 bytes earn 1 s. The head goes with the first 1,200 bytes, whose bytes count (they
        // arrive in the same read as the head: 12 s of credit); then a pause longer than the base, which only that credit
        // survives; then the rest, 400 bytes every 250 ms, each earning 4 s. A body sent for about 5 s is never late, with
        // seconds to spare at every step: a loaded machine that delays the client's sends (CI beside two CPU burners
        // once stretched the old margins, 3.5 s after the pause, past the credit) still sends above the rate.
        let environment = [
            "LEDGERD_HTTP_BODY_TIMEOUT_SECONDS": "2", "LEDGERD_HTTP_BODY_MIN_RATE": "100", "LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "60",
        ]
        try await TestApp.withApp(environment: environment, live: true) { client, _ in
            let port = try #require(client.port)
            let body = Array("{\"note\": \"" + String(repeating: "a", count: 4_000) + "\"}")
            let connection = try await ByteClient.connect(port: port)
            let head = "POST /payment HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
            try await connection.send(head + String(body[..<1_200]))
            try await Task.sleep(for: .milliseconds(2_500))
            for chunk in Array(body[1_200...]).chunks(of: 400) {
                try await connection.send(String(chunk))
                try await Task.sleep(for: .milliseconds(250))
            }
            // Answered (a 4xx for this body: what matters is that the server read it to the end).
            let reply = try await connection.response(within: .seconds(20))
            #expect(reply.hasPrefix("HTTP/1.1 4"), "no answer to a body sent above the minimum rate: \(reply)")
        }
    }

    @Test(.timeLimit(.minutes(30))) func oneAddressIsHeldToItsOwnConnectionLimitWhileAnotherIsServed() async throws {
        let environment = ["LEDGERD_HTTP_MAX_CONNECTIONS_PER_CLIENT": "2", "LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "60"]
        try await TestApp.withApp(environment: environment, live: true) { client, _ in
            let port = try #require(client.port)
            // Two from 127.0.0.3 (the harness's own client speaks from 127.0.0.1), each admitted for certain (answered)
            // before the next opens.
            var held: [ByteClient] = []
            for _ in 0..<2 {
                let connection = try await ByteClient.connect(port: port, from: "127.0.0.3")
                try await connection.send(Self.health)
                try #require(try await connection.response(within: .seconds(20)).contains("200 OK"))
                held.append(connection)
            }
            // A third from there is closed unanswered; one from 127.0.0.2 is served.
            let third = try await ByteClient.connect(port: port, from: "127.0.0.3")
            try? await third.send(Self.health)
            #expect(await third.closed(within: .seconds(20)) && !third.received.contains("200 OK"), "a third connection was served")
            let other = try await ByteClient.connect(port: port, from: "127.0.0.2")
            try await other.send(Self.health)
            #expect(try await other.response(within: .seconds(20)).contains("200 OK"), "another address was not served")
            // A slot given back is free again.
            held.removeFirst().channel.close(promise: nil)
            var served = false
            for _ in 0..<50 where !served {
                let again = try await ByteClient.connect(port: port, from: "127.0.0.3")
                try? await again.send(Self.health)
                served = (try? await again.response(within: .seconds(2)))?.contains("200 OK") ?? false
            }
            #expect(served, "the slot of a closed connection was not given back")
            _ = held
        }
    }

    /// The acceptance figure of issue 33: under the probe's flood (`connflood.py 1030 slowbody`: 1,030 connections from
    /// one address, each a `POST /payment` head then a byte every 5 s), `/health` from another client answers at every
    /// probe. With the default limits: before the fix 1,024 connections held every slot for as long as the flood ran
    /// and `/health` got no answer at all. Each probe is given 15 s (a two-core machine shared with three builds stalled a
    /// probe for 5 s now and then; the server and the flood share its event loops here); how
    /// many answered within 1 s, and the slowest, are printed: the figure.
    @Test(.timeLimit(.minutes(30))) func healthAnswersAnotherClientWithin1sUnderTheSlowBodyFlood() async throws {
        try await TestApp.withApp(live: true) { client, _ in
            let port = try #require(client.port)
            let flood = SlowBodyFlood(port: port, connections: 1_030)
            let floodTask = Task { await flood.run(for: .seconds(35), byteEvery: .seconds(5)) }
            // Let the flood open its connections before probing (it reports once every connection was tried).
            try await flood.waitUntilOpened(within: .seconds(60))
            var probes: [Duration?] = []
            let started = ContinuousClock.now
            while ContinuousClock.now - started < .seconds(30) {
                let probeStart = ContinuousClock.now
                let probe = try? await ByteClient.connect(port: port, from: "127.0.0.2")
                try? await probe?.send(Self.health)
                let reply = (try? await probe?.response(within: .seconds(15))) ?? ""
                probes.append(reply.contains("200 OK") ? ContinuousClock.now - probeStart : nil)
                probe?.channel.close(promise: nil)
                try await Task.sleep(for: .seconds(1))
            }
            let (held, refused) = flood.figures
            await floodTask.value
            let answered = probes.compactMap { $0 }
            let withinASecond = answered.filter { $0 <= .seconds(1) }.count
            print(
                "slow-body flood: at most \(held) flood connections seen open, \(refused) closed at once; /health answered "
                    + "\(answered.count)/\(probes.count) probes, \(withinASecond) within 1 s, slowest \(answered.max() ?? .zero)"
            )
            #expect(held > 0, "the flood held no connection: it did not test anything")
            #expect(probes.count >= 10 && answered.count == probes.count, "/health answered \(answered.count) of \(probes.count) probes")
        }
    }
}

/// The probe's slow-body flood: `connections` connections from 127.0.0.1, each sending a `POST /payment` head with a
/// 60,000-byte length and then one byte every `byteEvery`, each opened once (as the probe's script). Counts the most
/// connections open at once (each counted from its head sent until its channel closes, so a loaded machine's slow
/// opening of the others does not hide it) and those the server had closed half a second after all were opened.
final class SlowBodyFlood: Sendable {
    let port: Int
    let connections: Int
    private let state = Mutex<(opened: Bool, held: Int, refused: Int, open: Int)>((false, 0, 0, 0))

    init(port: Int, connections: Int) {
        self.port = port
        self.connections = connections
    }

    var figures: (held: Int, refused: Int) { state.withLock { ($0.held, $0.refused) } }

    func waitUntilOpened(within bound: Duration) async throws {
        let deadline = ContinuousClock.now + bound
        while !state.withLock({ $0.opened }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
    }

    func run(for duration: Duration, byteEvery: Duration) async {
        var open: [ByteClient?] = Array(repeating: nil, count: connections)
        var opened = false
        let started = ContinuousClock.now
        while ContinuousClock.now - started < duration {
            // (Re)open what is closed, all at once, then give the server a moment to refuse the ones over its limits.
            await withTaskGroup(of: (Int, ByteClient?).self) { group in
                for index in open.indices where open[index] == nil && !opened {
                    group.addTask {
                        let connection = try? await ByteClient.connect(port: self.port, from: "127.0.0.1")
                        try? await connection?.send(SlowClientTests.paymentHead)
                        if let channel = connection?.channel, channel.isActive {
                            self.state.withLock { state in
                                state.open += 1
                                state.held = max(state.held, state.open)
                            }
                            channel.closeFuture.whenComplete { _ in self.state.withLock { $0.open -= 1 } }
                        }
                        return (index, connection)
                    }
                }
                for await (index, connection) in group { open[index] = connection }
            }
            try? await Task.sleep(for: .milliseconds(500))
            let alive = open.filter { $0?.channel.isActive ?? false }.count
            state.withLock { state in
                if !opened { state.refused = open.count - alive }
                state.opened = true
            }
            opened = true
            // A byte on each live connection every `byteEvery`.
            let roundEnd = ContinuousClock.now + byteEvery
            try? await Task.sleep(until: roundEnd - .milliseconds(500))
            for connection in open.compactMap({ $0 }) where connection.channel.isActive {
                connection.channel.writeAndFlush(ByteBuffer(string: "{"), promise: nil)
            }
        }
        for connection in open.compactMap({ $0 }) { connection.channel.close(promise: nil) }
    }
}

extension Array {
    /// The array cut into consecutive slices of `size` elements (the last may be shorter).
    func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
