import Foundation
import LedgerApp
import LedgerServices
import LedgerTestSupport
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import Testing

/// The HTTP server's timeouts, on a live app (the daemon's server configuration) with short settings: an idle
/// connection is closed after the idle timeout, and a request head trickled in byte by byte — never idle — is closed
/// after the header timeout, over HTTP and HTTPS; a keep-alive connection serving whole requests is left alone.
/// Bounds are generous (the setting plus 10 s for a loaded machine), and far below what the other timeout would give.
@Suite(.machine(.shared)) struct HTTPTimeoutTests {
    static let health = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"

    @Test(.timeLimit(.minutes(3))) func anIdleConnectionIsClosedAfterTheConfiguredIdleTimeout() async throws {
        try await TestApp.withApp(environment: ["LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "2"], live: true) { client, _ in
            let port = try #require(client.port)
            // One that never sends a byte, then one idle after a served request; each timed from its last activity.
            for name in ["silent", "served"] {
                let connection = try await ByteClient.connect(port: port)
                if name == "served" {
                    try await connection.send(Self.health)
                    #expect(try await connection.response(within: .seconds(20)).contains("200 OK"))
                }
                // Closed within the timeout plus slack (an unconfigured server, 30 s, or none would keep it open) …
                #expect(await connection.closed(within: .seconds(2 + 10)), "\(name): still open")
                // … and not before about half of it, timed from the client's last byte sent (or the connection) to
                // the close on the client's event loop: a reply that comes late on a loaded machine does not shorten it.
                let idle = try #require(connection.quietBeforeClose)
                #expect(idle >= .seconds(1) && idle <= .seconds(2 + 10), "\(name): closed after \(idle) of quiet")
            }
        }
    }

    @Test(.timeLimit(.minutes(3)), arguments: [false, true])
    func aRequestHeadTrickledInSlowerThanTheHeaderTimeoutIsClosed(https: Bool) async throws {
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-head-timeout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let (store, clientTLS) = try https ? Self.serverAndClientTLS(in: files) : (nil, nil)
        // The idle timeout (60 s) would close the trickling connection only long after the header timeout (2 s).
        let environment = ["LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS": "2", "LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "60"]
        try await TestApp.withApp(environment: environment, live: true, tls: store) { client, _ in
            let port = try #require(client.port)
            // Keep-alive with whole requests: the timer runs only from a head's first byte to its end, so a pause
            // longer than the header timeout between two requests closes nothing.
            let keepAlive = try await ByteClient.connect(port: port, tls: clientTLS)
            try await keepAlive.send(Self.health)
            #expect(try await keepAlive.response(within: .seconds(20)).contains("200 OK"))
            #expect(await !keepAlive.closed(within: .seconds(3)), "a served keep-alive connection was closed")
            try await keepAlive.send(Self.health)
            #expect(try await keepAlive.response(within: .seconds(20)).contains("200 OK"), "the second request was not served")

            // A head sent a byte every 300 ms: never idle, never complete.
            let slow = try await ByteClient.connect(port: port, tls: clientTLS)
            let head = Array("GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + String(repeating: "a", count: 1_000))
            let started = ContinuousClock.now
            var sent = 0
            while sent < head.count, ContinuousClock.now - started < .seconds(2 + 10) {
                guard (try? await slow.send(String(head[sent]))) != nil, await !slow.closed(within: .milliseconds(300)) else { break }
                sent += 1
            }
            let elapsed = ContinuousClock.now - started
            #expect(await slow.closed(within: .seconds(1)), "a trickled head was still open after \(elapsed) (\(sent) bytes)")
            #expect(elapsed >= .seconds(1), "closed after \(elapsed), before the header timeout")
            #expect(!slow.received.contains("200 OK"))
        }
    }
}

extension HTTPTimeoutTests {
    /// A server certificate from a test CA (files in `directory`) and a client context trusting that CA.
    static func serverAndClientTLS(in directory: URL) throws -> (TLSCertificateStore?, NIOSSLContext?) {
        let ca = try TestCA("ledgerd header timeout CA")
        let issued = try ca.issue(commonName: "ledgerd", hosts: ["localhost", "127.0.0.1"])
        let certificate = directory.appendingPathComponent("server.pem")
        let key = directory.appendingPathComponent("server.key")
        try issued.certificate.write(to: certificate, atomically: true, encoding: .utf8)
        try SecretFile.write(Data(issued.key.utf8), to: key)
        try ca.pem.write(to: directory.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(try ca.pem.utf8), format: .pem)])
        return (
            try TLSCertificateStore(certificatePath: certificate.path, keyPath: key.path),
            try NIOSSLContext(configuration: configuration)
        )
    }
}

/// A client connection (NIO, optionally TLS) that sends what it is told, when it is told, and collects what comes.
final class ByteClient: Sendable {
    let channel: any Channel
    private let collected: Collected

    /// What arrived, when the client last spoke (the connection opened, or its last byte was sent), and when it
    /// closed. The server's idle timer runs from its last read, which is never earlier than the client's last byte
    /// sent, so the quiet from there to the close is at least the server's timeout however late a reply arrives.
    final class Collected: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let bytes = Mutex<[UInt8]>([])
        let times = Mutex<(lastSpoke: ContinuousClock.Instant, closed: ContinuousClock.Instant?)>((.now, nil))

        func channelActive(context: ChannelHandlerContext) {
            times.withLock { $0.lastSpoke = .now }
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            bytes.withLock { $0 += buffer.readableBytesView }
        }

        func channelInactive(context: ChannelHandlerContext) {
            times.withLock { $0.closed = .now }
            context.fireChannelInactive()
        }
    }

    private init(channel: any Channel, collected: Collected) {
        self.channel = channel
        self.collected = collected
    }

    /// Connects to the server on the loopback; `from` binds the client's end to another loopback address (127.0.0.2:
    /// another client, as far as the server's per-client limit can tell).
    static func connect(port: Int, tls: NIOSSLContext? = nil, from: String? = nil) async throws -> ByteClient {
        let collected = Collected()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: "localhost")) }
                    try channel.pipeline.syncOperations.addHandler(collected)
                }
            }
        if let from { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: from, port: 0)) }
        let channel = try await bootstrap.connect(host: from == nil ? "localhost" : "127.0.0.1", port: port).get()
        return ByteClient(channel: channel, collected: collected)
    }

    deinit { channel.close(promise: nil) }

    func send(_ text: String) async throws {
        collected.times.withLock { $0.lastSpoke = .now }
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    var received: String { String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self) }

    /// From the client's last word (the connection's opening, or the last bytes sent) to the close; nil while open.
    var quietBeforeClose: Duration? {
        collected.times.withLock { times in times.closed.map { $0 - times.lastSpoke } }
    }

    /// Whether the server has closed the connection by the end of `duration` (true as soon as it has).
    func closed(within duration: Duration) async -> Bool {
        let deadline = ContinuousClock.now + duration
        while channel.isActive && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return !channel.isActive
    }

    /// Waits for one whole response (head and `Content-Length` body) and returns it, taking it from what came.
    func response(within duration: Duration) async throws -> String {
        // Looked at once more after every pause, the last one included (a task starved past the deadline still sees
        // what came while it waited).
        let deadline = ContinuousClock.now + duration
        while true {
            let taken: String? = collected.bytes.withLock { bytes in
                guard let whole = firstResponseLength(bytes) else { return nil }
                let response = String(decoding: bytes[0..<whole], as: UTF8.self)
                bytes.removeFirst(whole)
                return response
            }
            if let taken { return taken }
            if ContinuousClock.now >= deadline { return received }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
