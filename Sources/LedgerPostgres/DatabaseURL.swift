import Foundation
import PostgresNIO

/// Parses `postgres://user:password@host:port/database?sslmode=…` (and the Unix-socket form
/// `postgres://user@/database?host=/run/postgresql`) into a PostgresNIO client configuration.
/// `sslmode` may be `disable`, `prefer` (default for TCP) or `require`.
public struct DatabaseURL: Sendable, CustomStringConvertible {
    public let configuration: PostgresClient.Configuration
    /// The URL with its password replaced by `***`, safe to log.
    public let redacted: String

    public var description: String { redacted }

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
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw DatabaseURLError("database URL has no host (use ?host=/socket/dir for a Unix socket)")
            }
            let tls: PostgresClient.Configuration.TLS
            switch query["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
            case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
            case let other: throw DatabaseURLError("unsupported sslmode \(other)")
            }
            configuration = PostgresClient.Configuration(
                host: host,
                port: components.port ?? 5432,
                username: user,
                password: password,
                database: database.isEmpty ? nil : database,
                tls: tls
            )
        }
        var shown = components
        if shown.password != nil { shown.password = "***" }
        redacted = shown.string ?? "postgres://***"
    }
}

public struct DatabaseURLError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
}
