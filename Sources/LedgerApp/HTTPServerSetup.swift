import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LedgerServices
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The daemon's TLS certificate and key (`LEDGERD_TLS_CERTIFICATE`, `LEDGERD_TLS_KEY`, PEM files), read at start and
/// again on ``reload()`` (SIGHUP): each TLS handshake uses the pair loaded last, so a renewed certificate is served
/// without a restart, and a pair that does not load keeps the previous one in service.
public final class TLSCertificateStore: Sendable {
    public let certificatePath: String
    public let keyPath: String
    private let loaded: Mutex<(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)>

    /// Reads the pair; throws ``ConfigurationError`` naming the variable and the file (never the file's content).
    public init(certificatePath: String, keyPath: String) throws {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.loaded = Mutex(try Self.load(certificatePath: certificatePath, keyPath: keyPath))
    }

    /// Reads the files again; on failure the previous pair stays in service and the error is thrown.
    public func reload() throws {
        let pair = try Self.load(certificatePath: certificatePath, keyPath: keyPath)
        loaded.withLock { $0 = pair }
    }

    /// The server TLS configuration: every handshake picks the pair loaded last.
    public var tlsConfiguration: TLSConfiguration {
        let (chain, key) = loaded.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        configuration.sslContextCallback = { [self] _, promise in
            let (chain, key) = loaded.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = chain.map { .certificate($0) }
            override.privateKey = .privateKey(key)
            promise.succeed(override)
        }
        return configuration
    }

    private static func load(certificatePath: String, keyPath: String) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw ConfigurationError("LEDGERD_TLS_CERTIFICATE: \(certificatePath) is not a readable PEM certificate chain")
        }
        guard !chain.isEmpty else { throw ConfigurationError("LEDGERD_TLS_CERTIFICATE: \(certificatePath) holds no certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw ConfigurationError("LEDGERD_TLS_KEY: \(keyPath) is not a readable PEM private key")
        }
        return (chain, key)
    }
}

/// Reloads the TLS certificate and key on SIGHUP.
struct CertificateReloader: Service {
    let store: TLSCertificateStore
    let logger: Logger

    func run() async {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            for await _ in signals {
                do {
                    try store.reload()
                    logger.notice("TLS certificate reloaded", metadata: ["certificate": "\(store.certificatePath)"])
                } catch {
                    logger.error("TLS certificate reload failed; the previous one stays in service", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}

/// The HTTP server: HTTP/1.1 with an idle timeout (a connection that sends nothing, or stops in the middle of its
/// request head, is closed after `LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS`), a request-head deadline (a head not complete
/// `LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS` after its first byte closes the connection, however slowly it trickles in),
/// a connection limit (connections beyond `LEDGERD_HTTP_MAX_CONNECTIONS` are closed at once), and TLS when a
/// certificate is configured (the handlers work on the decrypted bytes, so they hold for HTTPS too).
func httpServer(configuration: LedgerConfiguration, tls: TLSCertificateStore?, logger: Logger) throws -> HTTPServerBuilder {
    let limit = ConnectionLimit(maximum: configuration.httpMaxConnections, logger: logger)
    let headTimeout = TimeAmount(configuration.httpHeaderTimeout)
    var http = HTTP1Channel.Configuration(
        additionalChannelHandlers: [],
        idleTimeout: TimeAmount(configuration.httpIdleTimeout)
    )
    http.additionalChannelHandlers = {
        [ConnectionLimitHandler(limit: limit), RequestHeadTimeoutHandler(timeout: headTimeout, logger: logger)]
    }
    let base = HTTPServerBuilder.http1(configuration: http)
    guard let tls else { return base }
    return try .tls(base, tlsConfiguration: tls.tlsConfiguration)
}

/// How many HTTP connections are open, shared by every connection's ``ConnectionLimitHandler``.
final class ConnectionLimit: Sendable {
    let maximum: Int
    let logger: Logger
    private let open = Mutex(0)

    init(maximum: Int, logger: Logger) {
        self.maximum = maximum
        self.logger = logger
    }

    /// Counts a new connection; false when it is one too many (it still counts until it closes).
    func opened() -> Bool {
        open.withLock { count in
            count += 1
            return count <= maximum
        }
    }

    func closed() { open.withLock { $0 -= 1 } }
}

/// Counts its connection in a ``ConnectionLimit`` and closes it at once when the limit is exceeded.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let limit: ConnectionLimit

    init(limit: ConnectionLimit) { self.limit = limit }

    func handlerAdded(context: ChannelHandlerContext) {
        let admitted = limit.opened()
        let limit = self.limit
        context.channel.closeFuture.whenComplete { _ in limit.closed() }
        if !admitted {
            limit.logger.warning("connection refused: the HTTP connection limit is reached", metadata: ["limit": "\(limit.maximum)"])
            context.channel.close(promise: nil)
        }
    }
}

/// `LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS`: a request head must be complete within the timeout of its first byte.
///
/// The idle timeout alone does not bound a head: a client that sends a byte now and then is never idle. So a timer
/// starts at the first byte of each request (``RequestBytesWatcher``, before the HTTP decoder) and stops when the
/// decoder has the whole head (``RequestHeadWatcher``, after it); firing, it closes the connection. Between a
/// request's head and its end (its body) and while no byte of the next request has come, nothing runs: the idle
/// timeout covers those. Hummingbird adds this handler after its HTTP codec (its `additionalChannelHandlers`); it
/// places the two watchers around NIO's request decoder, which sees decrypted bytes under TLS.
final class RequestHeadTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let timeout: TimeAmount
    let logger: Logger

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let deadline = RequestHeadDeadline(timeout: timeout, logger: logger)
        do {
            let pipeline = context.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(RequestBytesWatcher(deadline: deadline), position: .before(decoder))
            try pipeline.addHandler(RequestHeadWatcher(deadline: deadline), position: .after(decoder))
        } catch {
            logger.error("HTTP pipeline without a request decoder: the header timeout cannot run", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }
}

/// One connection's request-head timer, shared by its two watchers (both run on the connection's event loop).
final class RequestHeadDeadline {
    let timeout: TimeAmount
    let logger: Logger
    /// Between a request's head and its end: the bytes are its body.
    var inRequest = false
    var timer: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    /// Bytes arrived: the first of a request head starts the timer.
    func bytesArrived(context: ChannelHandlerContext) {
        guard !inRequest, timer == nil else { return }
        let (timeout, logger) = (timeout, logger)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            logger.notice("connection closed: its request head was not complete in time", metadata: ["timeout": "\(timeout)"])
            context.close(promise: nil)
        }
    }

    func headComplete() {
        inRequest = true
        stop()
    }

    func requestEnded() { inRequest = false }

    func stop() {
        timer?.cancel()
        timer = nil
    }
}

/// Before the HTTP decoder: starts the request head's timer at its first byte.
final class RequestBytesWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    let deadline: RequestHeadDeadline

    init(deadline: RequestHeadDeadline) { self.deadline = deadline }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline.bytesArrived(context: context)
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { deadline.stop() }
}

/// After the HTTP decoder: stops the timer once the head is decoded; the request's end makes the next bytes a head.
final class RequestHeadWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    let deadline: RequestHeadDeadline

    init(deadline: RequestHeadDeadline) { self.deadline = deadline }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: deadline.headComplete()
        case .body: break
        case .end: deadline.requestEnded()
        }
        context.fireChannelRead(data)
    }
}
