import Foundation
import PostgresNIO

/// Parses `postgres://user:password@host:port/database?sslmode=…&sslrootcert=…` (and the Unix-socket form
/// `postgres://user@/database?host=/run/postgresql`) into a PostgresNIO configuration.
///
/// `sslmode` follows libpq (TCP only; a Unix socket never uses TLS, as in libpq):
///
/// | sslmode | TLS | certificate checked | host name checked |
/// |---|---|---|---|
/// | `disable` | never | — | — |
/// | `allow` | if the server offers it | no | no |
/// | `prefer` (default) | if the server offers it, else plain | no | no |
/// | `require` | always | no — unless a root certificate is given, then as `verify-ca` (libpq's rule) | no |
/// | `verify-ca` | always | against the root certificate | no |
/// | `verify-full` | always | against the root certificate | yes (DNS name, or the IP address's SAN) |
///
/// `sslrootcert`: a PEM file of the trusted CA certificate(s), or `system` for the system's trust store; when not
/// given, `~/.postgresql/root.crt` if it exists (libpq's default); `verify-ca` and `verify-full` refuse to start
/// without one. One difference from libpq: `allow` tries TLS first (as `prefer` does) where libpq tries plain first —
/// it connects wherever libpq would, and encrypts when it can.
public struct DatabaseURL: Sendable, CustomStringConvertible {
    public let configuration: PostgresClient.Configuration
    /// The URL with its password replaced by `***`, safe to log.
    public let redacted: String

    public var description: String { redacted }

    /// How a TCP connection uses TLS.
    enum TLSMode: Sendable {
        case disable
        case prefer(TLSConfiguration)
        case require(TLSConfiguration)
    }

    let tlsMode: TLSMode

    public init(_ string: String) throws {
        guard let components = URLComponents(string: string),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else {
            throw DatabaseURLError("database URL must look like postgres://user:password@host:5432/database")
        }
        guard let user = components.user, !user.isEmpty else {
            throw DatabaseURLError("database URL has no user name")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let password = components.password?.removingPercentEncoding ?? components.password

        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            let port = components.port ?? 5432
            configuration = PostgresClient.Configuration(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)",
                username: user,
                password: password,
                database: database.isEmpty ? nil : database
            )
            tlsMode = .disable
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw DatabaseURLError("database URL has no host (use ?host=/socket/dir for a Unix socket)")
            }
            let tls = try Self.tlsMode(sslmode: query["sslmode"] ?? "prefer", sslrootcert: query["sslrootcert"])
            let clientTLS: PostgresClient.Configuration.TLS
            switch tls {
            case .disable: clientTLS = .disable
            case .prefer(let configuration): clientTLS = .prefer(configuration)
            case .require(let configuration): clientTLS = .require(configuration)
            }
            configuration = PostgresClient.Configuration(
                host: host,
                port: components.port ?? 5432,
                username: user,
                password: password,
                database: database.isEmpty ? nil : database,
                tls: clientTLS
            )
            tlsMode = tls
        }
        var shown = components
        if shown.password != nil { shown.password = "***" }
        redacted = shown.string ?? "postgres://***"
    }

    /// The same connection as one `PostgresConnection` (tools and tests that want the connection's own error).
    public func connectionConfiguration() throws -> PostgresConnection.Configuration {
        if let path = configuration.unixSocketPath {
            return PostgresConnection.Configuration(
                unixSocketPath: path,
                username: configuration.username,
                password: configuration.password,
                database: configuration.database
            )
        }
        let tls: PostgresConnection.Configuration.TLS
        switch tlsMode {
        case .disable: tls = .disable
        case .prefer(let configuration): tls = .prefer(try NIOSSLContext(configuration: configuration))
        case .require(let configuration): tls = .require(try NIOSSLContext(configuration: configuration))
        }
        return PostgresConnection.Configuration(
            host: configuration.host ?? "localhost",
            port: configuration.port ?? 5432,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            tls: tls
        )
    }

    /// libpq's `sslmode` and `sslrootcert` as a TLS mode (see the type's table).
    static func tlsMode(sslmode: String, sslrootcert: String?) throws -> TLSMode {
        var root = sslrootcert.flatMap { $0.isEmpty ? nil : $0 }
        if root == nil {
            let fallback = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".postgresql/root.crt").path
            if FileManager.default.fileExists(atPath: fallback) { root = fallback }
        }
        func trustRoots() throws -> NIOSSLTrustRoots {
            guard let root else {
                throw DatabaseURLError(
                    "sslmode=\(sslmode) needs the server's CA certificate: add sslrootcert=FILE (or sslrootcert=system), or put it in ~/.postgresql/root.crt"
                )
            }
            if root == "system" { return .default }
            guard FileManager.default.isReadableFile(atPath: root) else {
                throw DatabaseURLError("sslrootcert: \(root) is not a readable file")
            }
            return .file(root)
        }
        func configuration(_ verification: CertificateVerification) throws -> TLSConfiguration {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = verification
            if verification != .none { tls.trustRoots = try trustRoots() }
            return tls
        }
        switch sslmode {
        case "disable": return .disable
        case "allow", "prefer": return .prefer(try configuration(.none))
        case "require": return .require(try configuration(root == nil ? .none : .noHostnameVerification))
        case "verify-ca": return .require(try configuration(.noHostnameVerification))
        case "verify-full": return .require(try configuration(.fullVerification))
        default:
            throw DatabaseURLError("unsupported sslmode \(sslmode): use disable, allow, prefer, require, verify-ca or verify-full")
        }
    }
}

public struct DatabaseURLError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
}
