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
///
/// **Several hosts** (libpq's multi-host form): `postgres://u:p@h1:5432,h2:5433/db?target_session_attrs=read-write`,
/// or for Unix sockets `?host=/run/a,/run/b`. Every host shares the user, password, database and TLS settings;
/// `target_session_attrs` (`any` by default, `read-write`, `read-only`, `primary`, `standby`) says which server
/// to keep — see ``DatabaseHosts``.
public struct DatabaseURL: Sendable, CustomStringConvertible {
    /// The first host's configuration.
    public let configuration: PostgresClient.Configuration
    /// Every host, in order, and the session attribute that chooses among them.
    public let hosts: DatabaseHosts
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
        let variants = try Self.oneURLPerHost(string)
        let parsed = try variants.map(Self.parseOne)
        let query = parsed[0].query
        let attributes: DatabaseHosts.SessionAttributes
        if let named = query["target_session_attrs"], !named.isEmpty {
            guard let known = DatabaseHosts.SessionAttributes(rawValue: named) else {
                throw DatabaseURLError(
                    "unsupported target_session_attrs \(named): use \(DatabaseHosts.SessionAttributes.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            attributes = known
        } else {
            attributes = .any
        }
        configuration = parsed[0].configuration
        tlsMode = parsed[0].tlsMode
        hosts = DatabaseHosts(candidates: parsed.map(\.configuration), sessionAttributes: attributes)
        redacted = variants.count == 1 ? parsed[0].redacted : Self.redact(string)
    }

    /// `string` as one URL per host: the authority's comma-separated hosts (`h1:5432,h2:5433`), or the `host`
    /// query parameter's comma-separated socket directories.
    static func oneURLPerHost(_ string: String) throws -> [String] {
        guard let schemeEnd = string.range(of: "://") else { return [string] }
        let rest = string[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let at = authority.lastIndex(of: "@")
        let userInfo = at.map { String(authority[...$0]) } ?? ""
        let hostList = at.map { authority[authority.index(after: $0)...] } ?? authority
        let prefix = String(string[..<schemeEnd.upperBound])
        let tail = rest[authorityEnd...]
        var urls: [String] =
            hostList.contains(",")
            ? hostList.split(separator: ",", omittingEmptySubsequences: false).map { prefix + userInfo + $0 + tail }
            : [string]
        // `?host=/a,/b`: one URL per socket directory.
        urls = urls.flatMap { url -> [String] in
            guard var components = URLComponents(string: url),
                let items = components.queryItems,
                let index = items.firstIndex(where: { $0.name == "host" }),
                let value = items[index].value, value.contains(",")
            else { return [url] }
            return value.split(separator: ",", omittingEmptySubsequences: false).map { directory in
                var copy = items
                copy[index].value = String(directory)
                components.queryItems = copy
                return components.string ?? url
            }
        }
        if urls.count > 1, urls.contains(where: { $0.contains("://") && URLComponents(string: $0) == nil }) {
            throw DatabaseURLError("database URL: cannot read its list of hosts")
        }
        return urls
    }

    /// The URL with the password of its user info replaced by `***` (for URLs URLComponents cannot read).
    static func redact(_ string: String) -> String {
        guard let schemeEnd = string.range(of: "://") else { return "postgres://***" }
        let rest = string[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return string }
        let userInfo = rest[..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return string }
        return String(string[..<schemeEnd.upperBound]) + userInfo[..<colon] + ":***" + rest[at...]
    }

    private struct Parsed {
        var configuration: PostgresClient.Configuration
        var tlsMode: TLSMode
        var redacted: String
        var query: [String: String]
    }

    private static func parseOne(_ string: String) throws -> Parsed {
        let configuration: PostgresClient.Configuration
        let tlsMode: TLSMode
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
        return Parsed(configuration: configuration, tlsMode: tlsMode, redacted: shown.string ?? "postgres://***", query: query)
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
