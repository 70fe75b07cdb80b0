import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LedgerServices
import Logging
import NIOCore
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
/// request head, is closed after `LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS`), a connection limit (connections beyond
/// `LEDGERD_HTTP_MAX_CONNECTIONS` are closed at once), and TLS when a certificate is configured.
func httpServer(configuration: LedgerConfiguration, tls: TLSCertificateStore?, logger: Logger) throws -> HTTPServerBuilder {
    let limit = ConnectionLimit(maximum: configuration.httpMaxConnections, logger: logger)
    let http = HTTP1Channel.Configuration(
        additionalChannelHandlers: [],
        idleTimeout: .seconds(Int64(configuration.httpIdleTimeout.components.seconds))
    )
    var withLimit = http
    withLimit.additionalChannelHandlers = { [ConnectionLimitHandler(limit: limit)] }
    let base = HTTPServerBuilder.http1(configuration: withLimit)
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
