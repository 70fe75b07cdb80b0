import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LedgerHTTPServer
import LedgerServices
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import UnixSignals
import X509

/// The daemon's TLS certificate and key (`LEDGERD_TLS_CERTIFICATE`, `LEDGERD_TLS_KEY`, PEM files), read at start and
/// again on ``reload()`` (SIGHUP): each TLS handshake uses the pair loaded last, so a renewed certificate is served
/// without a restart, and a pair that does not load keeps the previous one in service.
///
/// A pair loads only when the key is the certificate's (its public key is the leaf certificate's): a renewal that
/// replaced the certificate before the key was accepted, and every handshake then failed (review 3, N6). The key is
/// a secret file (``SecretFile``: refused when group or others may read or write it). TLS 1.2 offers only AEAD
/// suites with forward secrecy (Mozilla's "intermediate" list: ECDHE with AES-GCM or ChaCha20-Poly1305); TLS 1.3's
/// suites are all AEAD.
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
        configuration.cipherSuites = Self.tls12CipherSuites
        configuration.sslContextCallback = { [self] _, promise in
            let (chain, key) = loaded.withLock { $0 }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = chain.map { .certificate($0) }
            override.privateKey = .privateKey(key)
            promise.succeed(override)
        }
        return configuration
    }

    /// The TLS 1.2 suites offered: AEAD with ECDHE only (no CBC, no SHA-1 MAC, no static RSA).
    static let tls12CipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    private static func load(certificatePath: String, keyPath: String) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw ConfigurationError("LEDGERD_TLS_CERTIFICATE: \(certificatePath) is not a readable PEM certificate chain")
        }
        guard !chain.isEmpty else { throw ConfigurationError("LEDGERD_TLS_CERTIFICATE: \(certificatePath) holds no certificate") }
        let pem: Data
        do { pem = try SecretFile.read(keyPath) } catch { throw ConfigurationError("LEDGERD_TLS_KEY: \(error)") }
        let key: NIOSSLPrivateKey
        let publicKey: Certificate.PublicKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(pem), format: .pem)
            publicKey = try Certificate.PrivateKey(pemEncoded: String(decoding: pem, as: UTF8.self)).publicKey
        } catch {
            throw ConfigurationError("LEDGERD_TLS_KEY: \(keyPath) is not a readable PEM private key")
        }
        guard let leaf = try? Certificate(derEncoded: chain[0].toDERBytes()), leaf.publicKey == publicKey else {
            throw ConfigurationError("LEDGERD_TLS_KEY: \(keyPath) is not the key of the certificate in \(certificatePath)")
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
                    logger.error("TLS certificate reload refused; the previous pair stays in service", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}

/// The HTTP server: HTTP/1.1 where every part of a request is bounded in time, and no client can take every slot.
///
/// - Idle: a connection that sends nothing this long is closed (`LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS`).
/// - Head: a request head not complete `LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS` after its first byte closes the
///   connection, however slowly it trickles in.
/// - Body: Apache's `mod_reqtimeout` rule (`body=20,MinRate=500`): a body must end within
///   `LEDGERD_HTTP_BODY_TIMEOUT_SECONDS` of its head, and every `LEDGERD_HTTP_BODY_MIN_RATE` bytes received extend that
///   by a second, so a large upload at any honest speed finishes while a body trickled at a byte now and then does not
///   hold its connection past the base timeout.
/// - Write: a reply that has not advanced (bytes waiting, none taken by the client) for
///   `LEDGERD_HTTP_WRITE_TIMEOUT_SECONDS` closes its connection, so a client that stops reading an export gives its
///   slot and buffers back.
/// - Connections: beyond `LEDGERD_HTTP_MAX_CONNECTIONS` in all, or `LEDGERD_HTTP_MAX_CONNECTIONS_PER_CLIENT` from one
///   address (an IPv6 client: from its /64), a new connection is closed at once (refusals are logged at most once per
///   10 s, with their count); beyond the first, four more are admitted for one `GET /health` each.
///
/// TLS when a certificate is configured: the handlers work on the decrypted bytes, so they hold for HTTPS too. The
/// acquirer service builds its server with the same handlers (``HTTPConnectionPolicy``).
func httpServer(configuration: LedgerConfiguration, tls: TLSCertificateStore?, logger: Logger) throws -> HTTPServerBuilder {
    let policy = HTTPConnectionPolicy(
        idleTimeout: configuration.httpIdleTimeout,
        headerTimeout: configuration.httpHeaderTimeout,
        bodyTimeout: configuration.httpBodyTimeout,
        bodyMinimumBytesPerSecond: configuration.httpBodyMinimumRate,
        writeTimeout: configuration.httpWriteTimeout,
        maximumConnections: configuration.httpMaxConnections,
        maximumConnectionsPerClient: configuration.httpMaxConnectionsPerClient
    )
    let base = HTTPServerBuilder.http1(configuration: policy.http1Configuration(logger: logger))
    guard let tls else { return base }
    return try .tls(base, tlsConfiguration: tls.tlsConfiguration)
}
