import AsyncHTTPClient
import Foundation
import LedgerServices
import LedgerTestSupport
import NIOCore
import NIOSSL
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ledgerd serve` over HTTPS with a certificate from a CA made in the test; plain HTTP to the TLS port gets no
/// answer; SIGHUP makes the daemon serve a renewed certificate (from another CA) without a restart.
@Suite(.machine(.shared)) struct HTTPSTests {
    /// `GET /health` over HTTPS trusting only `ca`, on a new connection each time; nil when no answer came.
    static func health(port: Int, trusting ca: String) async -> (Int, String)? {
        if case .success(let answer) = await healthResult(port: port, trusting: ca) { return answer }
        return nil
    }

    /// Why `GET /health` over HTTPS trusting `ca` failed (the error, as reflected), or nil when it was answered: a test
    /// of a refused certificate checks it was the certificate (`CERTIFICATE_VERIFY_FAILED`), not any failure at all.
    static func failure(port: Int, trusting ca: String) async -> String? {
        if case .failure(let error) = await healthResult(port: port, trusting: ca) { return String(reflecting: error) }
        return nil
    }

    static func healthResult(port: Int, trusting ca: String) async -> Result<(Int, String), any Error> {
        let root: NIOSSLCertificate
        do { root = try NIOSSLCertificate(bytes: Array(ca.utf8), format: .pem) } catch { return .failure(error) }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([root])
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        let answer: Result<(Int, String), any Error>
        do {
            let response = try await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/health"), timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 1 << 20)
            answer = .success((Int(response.status.code), String(buffer: body)))
        } catch {
            answer = .failure(error)
        }
        try? await client.shutdown()
        return answer
    }

    @Test(.timeLimit(.minutes(3))) func httpsWithATestCAPlaintextFailsAndSIGHUPReloadsTheCertificate() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-tls-\(UUID().uuidString.prefix(8))")
        let files = URL(fileURLWithPath: "\(dataDirectory.path)-files")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            for url in [dataDirectory, files, log] { try? FileManager.default.removeItem(at: url) }
        }
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let first = try TestCA("ledgerd test CA one")
        let second = try TestCA("ledgerd test CA two")
        let firstCA = try first.pem
        let secondCA = try second.pem
        let certificate = files.appendingPathComponent("server.pem")
        let key = files.appendingPathComponent("server.key")
        let issued = try first.issue(commonName: "ledgerd", hosts: ["localhost", "127.0.0.1"])
        try issued.certificate.write(to: certificate, atomically: true, encoding: .utf8)
        try SecretFile.write(Data(issued.key.utf8), to: key)

        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            environment: ["LEDGERD_TLS_CERTIFICATE": certificate.path, "LEDGERD_TLS_KEY": key.path],
            probe: { port in await Self.health(port: port, trusting: firstCA) }
        )
        guard let health = daemon.health else {
            daemon.process.terminate()
            Issue.record("no HTTPS /health answer; daemon output:\n\(daemon.output())")
            return
        }
        #expect(health.1.contains("last_position"))
        // The certificate is checked: a client trusting another CA gets nothing.
        let refused = await Self.failure(port: daemon.port, trusting: secondCA)
        #expect(refused?.contains("CERTIFICATE_VERIFY_FAILED") == true, "not refused for its certificate: \(String(describing: refused))")
        // Plain HTTP to the TLS port: no HTTP answer — from a daemon that still serves HTTPS (not one that died).
        #expect(await DaemonProcess.get(URL(string: "http://127.0.0.1:\(daemon.port)/health")!) == nil)
        #expect(await Self.health(port: daemon.port, trusting: firstCA)?.0 == 200, "HTTPS stopped answering after the plain request")

        // Renew the certificate (another CA) and send SIGHUP: new handshakes present the new one.
        let renewed = try second.issue(commonName: "ledgerd", hosts: ["localhost", "127.0.0.1"])
        try renewed.certificate.write(to: certificate, atomically: true, encoding: .utf8)
        try SecretFile.write(Data(renewed.key.utf8), to: key, overwrite: true)
        kill(daemon.process.processIdentifier, SIGHUP)
        var reloaded = false
        for _ in 0..<40 where !reloaded {
            if let answer = await Self.health(port: daemon.port, trusting: secondCA), answer.0 == 200 {
                reloaded = true
            } else {
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        #expect(reloaded, "SIGHUP did not bring the renewed certificate:\n\(daemon.output())")
        let stale = await Self.failure(port: daemon.port, trusting: firstCA)
        #expect(stale?.contains("CERTIFICATE_VERIFY_FAILED") == true, "the old CA: \(String(describing: stale))")
        #expect(daemon.process.isRunning)
        try await daemon.stop()
    }
}

/// Slow clients and too many clients: a connection that sends nothing, or stops in its request head, is closed
/// after the idle timeout; connections beyond the limit are closed at once; the daemon serves again once
/// connections are freed. (Client-side deadlines are generous upper bounds, not performance assertions.)
@Suite(.machine(.alone)) struct HTTPConnectionLimitTests {
    @Test(.timeLimit(.minutes(30))) func idleConnectionsAreClosedAndConnectionsBeyondTheLimitAreRefused() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-lim-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            for url in [dataDirectory, log] { try? FileManager.default.removeItem(at: url) }
        }
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            // An idle timeout long enough that the first two connections still hold their slots when the third comes,
            // however loaded the machine.
            environment: ["LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS": "15", "LEDGERD_HTTP_MAX_CONNECTIONS": "2"]
        )
        guard daemon.health != nil else {
            daemon.process.terminate()
            Issue.record("no /health answer; daemon output:\n\(daemon.output())")
            return
        }
        // Two connections fill the limit, each admitted for certain (it was answered) before the next one opens:
        // the server initialises accepted connections on several event loops, so three opened at once could be
        // counted in any order. Then one stays idle and the other stops half way through its next request head.
        // A third is closed, unanswered (the deadline is generous; an admitted third would be answered 200).
        let health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        // Served means answered: `/health` says 503 when its database probe misses its deadline on a loaded machine
        // (seen beside two CPU burners), which is an answer as much as 200.
        // A connection closed unanswered is tried again (a few times, a second apart): on a loaded machine a probe of
        // the daemon's start that gave up at 2 s can hold its slot until the server has written the answer nobody reads.
        func served(_ name: String) async throws -> RawConnection {
            for _ in 0..<10 {
                let connection = try RawConnection(port: daemon.port)
                try connection.send(health)
                if await connection.readResponse(within: 20).hasPrefix("HTTP/1.1 ") { return connection }
                try await Task.sleep(for: .seconds(1))
            }
            Issue.record("the \(name) connection was not served in 10 tries; the daemon's output ends:\n\(daemon.output().suffix(6_000))")
            throw CancellationError()
        }
        let a = try await served("first")
        let b = try await served("second")
        try b.send("GET /health HTTP/1.1\r\nHost: x\r\n")  // half a request head
        // Beyond the limit a connection is admitted from the /health reserve only (review 4, L4; SlotsAndHeadTests): any
        // other request on it is closed unanswered.
        let c = try RawConnection(port: daemon.port)
        try? c.send("GET /inventory HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = await c.readUntilClosed(within: 20)
        #expect(refused.closed && !refused.text.contains("HTTP/1.1 "), "a third connection was served: \(refused.text)")
        // The idle and the half-sent connections are closed by the timeouts (idle 15 s, header 10 s), unanswered
        // (HTTPTimeoutTests shows each closes within its own configured time).
        for (name, connection) in [("idle", a), ("half request", b)] {
            let outcome = await connection.readUntilClosed(within: 15 + 15)
            #expect(outcome.closed && !outcome.text.contains("HTTP/1.1 "), "\(name) connection: \(outcome)")
        }
        // With them gone, the daemon answers again.
        try await Task.sleep(for: .milliseconds(300))
        let (status, _) = try await daemon.request("GET", "/health", timeout: 20)
        #expect(status == 200 || status == 503, "\(status)")
        try await daemon.stop()
    }
}

/// A plain TCP connection to 127.0.0.1, for what HTTP clients do not do (send nothing, send half a request).
final class RawConnection {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw POSIXError(.EPIPE) }
    }

    /// Reads until the peer closes (or resets) the connection or `seconds` pass; what came, and whether it closed.
    /// Non-blocking reads with a pause between them: a blocking read would hold a thread of the cooperative pool.
    func readUntilClosed(within seconds: Int) async -> (closed: Bool, text: String) {
        var received: [UInt8] = []
        let closed = await read(within: seconds) { bytes in
            received += bytes
            return false
        }
        return (closed, String(decoding: received, as: UTF8.self))
    }

    /// Reads one response (head and `Content-Length` body) or what came within `seconds`.
    func readResponse(within seconds: Int) async -> String {
        var received: [UInt8] = []
        _ = await read(within: seconds) { bytes in
            received += bytes
            return firstResponseLength(received) != nil
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Feeds what arrives to `take` until it returns true (false: not closed), the peer closes (true), or
    /// `seconds` pass (false).
    ///
    /// The socket is read once more after every pause, the last one included: a test task starved past the deadline
    /// (a busy machine's cooperative pool) still sees a close that came while it waited. Before, it gave up unread,
    /// and an idle connection the server had closed was reported open (CI, stop 62).
    private func read(within seconds: Int, _ take: ([UInt8]) -> Bool) async -> Bool {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let deadline = ContinuousClock.now + .seconds(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n > 0 {
                if take(Array(buffer[0..<n])) { return false }
            } else if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return true
            }
            // After what came, not before: a peer that never stops sending still ends the wait at the deadline.
            if ContinuousClock.now >= deadline { return false }
            if n <= 0 { try? await Task.sleep(for: .milliseconds(20)) }
        }
    }
}

/// The length in bytes of the first whole HTTP/1.1 response in `bytes` (its head and `Content-Length` body), or nil
/// while it is incomplete.
func firstResponseLength(_ bytes: [UInt8]) -> Int? {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let end = text.range(of: "\r\n\r\n") else { return nil }
    let length =
        text[..<end.lowerBound].split(separator: "\r\n")
        .first { $0.lowercased().hasPrefix("content-length:") }
        .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
    let whole = text[..<end.upperBound].utf8.count + length
    return bytes.count >= whole ? whole : nil
}
