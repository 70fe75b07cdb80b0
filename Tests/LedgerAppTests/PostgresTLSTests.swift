import Foundation
import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

/// `sslmode` as libpq documents it, against a private-CA cluster started by the test (TCP on 127.0.0.1, `ssl = on`,
/// a server certificate for `localhost` only, issued by a CA made here).
@Suite(.machine(.shared)) struct PostgresTLSTests {
    /// One TLS cluster for the suite's cases.
    final class Cluster: Sendable {
        let directory: URL
        let port: Int
        let rightCA: String
        let wrongCA: String
        let cluster: EmbeddedPostgres

        init() throws {
            directory = URL(fileURLWithPath: "/tmp/ledgerd-pgtls-\(UUID().uuidString.prefix(8))")
            port = TestPorts.free()
            let files = directory.appendingPathComponent("tls")
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            let ca = try TestCA("ledgerd test PostgreSQL CA")
            let other = try TestCA("some other CA")
            let issued = try ca.issue(commonName: "localhost", hosts: ["localhost"])
            rightCA = files.appendingPathComponent("root.crt").path
            wrongCA = files.appendingPathComponent("other.crt").path
            let certificate = files.appendingPathComponent("server.crt").path
            let key = files.appendingPathComponent("server.key").path
            try ca.pem.write(toFile: rightCA, atomically: true, encoding: .utf8)
            try other.pem.write(toFile: wrongCA, atomically: true, encoding: .utf8)
            try issued.certificate.write(toFile: certificate, atomically: true, encoding: .utf8)
            try issued.key.write(toFile: key, atomically: true, encoding: .utf8)
            chmod(key, 0o600)
            if geteuid() == 0, let user = getpwnam("postgres") {
                for path in [directory.path, files.path, certificate, key] { chown(path, user.pointee.pw_uid, user.pointee.pw_gid) }
            }
            cluster = EmbeddedPostgres(
                configuration: .init(
                    dataDirectory: directory.appendingPathComponent("data"),
                    durable: false,
                    settings: [
                        "listen_addresses": "'127.0.0.1'", "port": "\(port)", "ssl": "on",
                        "ssl_cert_file": "'\(certificate)'", "ssl_key_file": "'\(key)'",
                    ]
                ),
                logger: TestCluster.logger
            )
        }

        /// Starts the cluster, waiting off the cooperative pool (``EmbeddedPostgres/startOffPool()``).
        func start() async throws { _ = try await cluster.startOffPool() }

        func shutdown() {
            try? cluster.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// Connects with `sslmode`/`sslrootcert` to `host`; whether the session is encrypted, or the error.
        func connect(host: String = "127.0.0.1", _ parameters: String) async -> Result<Bool, any Error> {
            do {
                let url = try DatabaseURL("postgres://postgres@\(host):\(port)/postgres\(parameters.isEmpty ? "" : "?\(parameters)")")
                let connection = try await PostgresConnection.connect(
                    configuration: try url.connectionConfiguration(),
                    id: 1,
                    logger: TestCluster.logger
                )
                defer { Task { try? await connection.close() } }
                let rows = try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: TestCluster.logger)
                for try await ssl in rows.decode(Bool.self) { return .success(ssl) }
                return .failure(NoRow())
            } catch {
                return .failure(error)
            }
        }
    }

    struct NoRow: Error {}

    func encrypted(_ result: Result<Bool, any Error>) -> Bool? { try? result.get() }

    @Test func eachSSLModeBehavesAsLibpqDocuments() async throws {
        let cluster = try Cluster()
        defer { cluster.shutdown() }
        try await cluster.start()
        let right = "sslrootcert=\(cluster.rightCA)"
        let wrong = "sslrootcert=\(cluster.wrongCA)"
        // No verification: disable is plain; allow, prefer (the TCP default) and require encrypt without checking.
        #expect(encrypted(await cluster.connect("sslmode=disable")) == false)
        #expect(encrypted(await cluster.connect("sslmode=allow")) == true)
        #expect(encrypted(await cluster.connect("sslmode=prefer")) == true)
        #expect(encrypted(await cluster.connect("")) == true, "TCP defaults to prefer, as libpq")
        #expect(encrypted(await cluster.connect("sslmode=require")) == true)
        // require with a root certificate checks it (libpq: as verify-ca).
        #expect(encrypted(await cluster.connect("sslmode=require&\(right)")) == true)
        #expect(encrypted(await cluster.connect("sslmode=require&\(wrong)")) == nil)
        // verify-ca: the chain, not the host name (127.0.0.1 is not in the certificate).
        #expect(encrypted(await cluster.connect("sslmode=verify-ca&\(right)")) == true)
        #expect(encrypted(await cluster.connect("sslmode=verify-ca&\(wrong)")) == nil, "wrong CA refused")
        // verify-full: the chain and the host name.
        #expect(encrypted(await cluster.connect(host: "localhost", "sslmode=verify-full&\(right)")) == true)
        #expect(encrypted(await cluster.connect(host: "localhost", "sslmode=verify-full&\(wrong)")) == nil, "wrong CA refused")
        #expect(encrypted(await cluster.connect("sslmode=verify-full&\(right)")) == nil, "wrong host refused")
    }

    @Test func verifyModesNeedARootCertificateAndUnknownModesAreRefused() throws {
        let home = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".postgresql/root.crt").path
        if !FileManager.default.fileExists(atPath: home) {
            for mode in ["verify-ca", "verify-full"] {
                #expect(throws: DatabaseURLError.self) { try DatabaseURL("postgres://u@db:5432/ledger?sslmode=\(mode)") }
            }
        }
        #expect(throws: DatabaseURLError.self) { try DatabaseURL("postgres://u@db:5432/ledger?sslmode=verify-everything") }
        #expect(throws: DatabaseURLError.self) {
            try DatabaseURL("postgres://u@db:5432/ledger?sslmode=verify-full&sslrootcert=/nonexistent/root.crt")
        }
        #expect(try DatabaseURL("postgres://u@db:5432/ledger?sslmode=verify-full&sslrootcert=system").redacted.contains("db"))
    }
}
