import AsyncHTTPClient
import Foundation
import LedgerApp
import LedgerServices
import LedgerTestSupport
import NIOCore
import NIOSSL
import Testing

/// Security review 3, N6 and N14, on a live app serving HTTPS: a reload whose key is not the certificate's (a renewal
/// that replaced the certificate before the key) is refused and the previous pair keeps serving; a key file others may
/// read is refused; TLS 1.2 offers no CBC suite.
@Suite(.machine(.shared)) struct TLSReloadTests {
    @Test(.timeLimit(.minutes(3))) func aMismatchedOrOpenPairIsRefusedOnReloadAndThePreviousPairKeepsServing() async throws {
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-tls-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let ca = try TestCA("ledgerd reload CA")
        let caPEM = try ca.pem
        let first = try ca.issue(commonName: "first", hosts: ["localhost", "127.0.0.1"])
        let second = try ca.issue(commonName: "second", hosts: ["localhost", "127.0.0.1"])
        let certificate = files.appendingPathComponent("server.pem")
        let key = files.appendingPathComponent("server.key")
        try SecretFile.write(Data(first.certificate.utf8), to: certificate)
        try SecretFile.write(Data(first.key.utf8), to: key)
        let store = try TLSCertificateStore(certificatePath: certificate.path, keyPath: key.path)
        try await TestApp.withApp(live: true, tls: store) { client, _ in
            let port = try #require(client.port)
            #expect(await Self.health(port: port, trusting: caPEM)?.0 == 200)
            // The renewal writes the certificate first: the pair does not match, the reload is refused …
            try SecretFile.write(Data(second.certificate.utf8), to: certificate, overwrite: true)
            #expect(throws: ConfigurationError.self) { try store.reload() }
            // … and the first pair still serves.
            #expect(await Self.health(port: port, trusting: caPEM)?.0 == 200, "the previous pair stopped serving")
            // Then the key: the new pair loads and serves.
            try SecretFile.write(Data(second.key.utf8), to: key, overwrite: true)
            try store.reload()
            #expect(await Self.health(port: port, trusting: caPEM)?.0 == 200)
            // A key file group can read is not loaded.
            #expect(chmod(key.path, 0o640) == 0)
            #expect(throws: ConfigurationError.self) { try store.reload() }
            #expect(await Self.health(port: port, trusting: caPEM)?.0 == 200)
        }
        // A mismatched pair does not start the server either.
        try SecretFile.write(Data(first.key.utf8), to: key, overwrite: true)
        #expect(throws: ConfigurationError.self) { try TLSCertificateStore(certificatePath: certificate.path, keyPath: key.path) }
    }

    @Test(.timeLimit(.minutes(3))) func tls12OffersOnlyAEADSuites() async throws {
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-tls-suites-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let (store, _) = try HTTPTimeoutTests.serverAndClientTLS(in: files)
        let caPEM = try String(contentsOf: files.appendingPathComponent("ca.pem"), encoding: .utf8)
        try await TestApp.withApp(live: true, tls: store) { client, _ in
            let port = try #require(client.port)
            // The probe's finding: ECDHE-ECDSA-AES{128,256}-SHA (CBC, SHA-1 MAC) were accepted over TLS 1.2.
            let cbc = "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA"
            #expect(await Self.health(port: port, trusting: caPEM, tls12Suites: cbc) == nil, "a CBC suite was negotiated")
            let gcm = "ECDHE-ECDSA-AES128-GCM-SHA256"
            #expect(await Self.health(port: port, trusting: caPEM, tls12Suites: gcm)?.0 == 200, "an AEAD suite was refused")
        }
    }

    /// `GET /health` over HTTPS trusting only `ca`, on a new connection; with `tls12Suites`, over TLS 1.2 offering only
    /// those suites. Nil when no answer came.
    static func health(port: Int, trusting ca: String, tls12Suites: String? = nil) async -> (Int, String)? {
        guard let root = try? NIOSSLCertificate(bytes: Array(ca.utf8), format: .pem) else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([root])
        if let tls12Suites {
            tls.maximumTLSVersion = .tlsv12
            tls.cipherSuites = tls12Suites
        }
        return try? await HTTPClient.withHTTPClient(configuration: .init(tlsConfiguration: tls)) { client in
            let response = try await client.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/health"), timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), String(buffer: body))
        }
    }
}
