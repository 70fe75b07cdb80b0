import Foundation
import LedgerApp
import LedgerServices
import LedgerTestSupport
import Testing

/// Secrets in embedded mode as root: the cluster's processes do not inherit the daemon's environment (API keys,
/// URLs), the generated `api-keys.json` and `api-keyring.json` are 0600 in a root-owned directory, and the `postgres` OS user — trying for
/// real, as that user — can neither read nor replace it.
@Suite(.machine(.shared)) struct SecretsTests {
    static var rootWithPostgresUser: Bool { geteuid() == 0 && getpwnam("postgres") != nil }

    /// Runs `script` with `sh -c` as the `postgres` OS user; its exit status and output.
    static func asPostgres(_ script: String) async throws -> (status: Int32, output: String) {
        try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", "/bin/sh", "-c", script],
            currentDirectory: URL(fileURLWithPath: "/")
        )
    }

    /// The process whose parent is `parent` and whose command line contains `text` (from /proc), if any.
    static func child(of parent: Int32, commandContaining text: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm) ": the state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == parent,
                let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                String(decoding: command, as: UTF8.self).contains(text)
            else { continue }
            return pid
        }
        return nil
    }

    @Test(
        .enabled(if: rootWithPostgresUser, "needs root and a `postgres` OS user (CI runs as root): the test runs PostgreSQL as another user"),
        .timeLimit(.minutes(3))
    )
    func thePostgresUserCannotReadOrReplaceTheDaemonsSecrets() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-sec-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            for url in [dataDirectory, log] { try? FileManager.default.removeItem(at: url) }
        }
        let marker = "secret-marker-\(UUID().uuidString)"
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            // A secret in the daemon's environment (as a database URL or keys would be); no keys: they are generated.
            environment: ["LEDGERD_TEST_SECRET": marker, "LEDGERD_OPERATOR_KEYS": nil, "LEDGERD_AUDITOR_KEYS": nil]
        )
        guard daemon.health != nil, let operatorKey = daemon.operatorKey else {
            daemon.process.terminate()
            Issue.record("the daemon did not come up with generated keys:\n\(daemon.output())")
            return
        }
        let keys = dataDirectory.appendingPathComponent("api-keys.json")
        let keyring = dataDirectory.appendingPathComponent("api-keyring.json")
        let originals = try [keys, keyring].map { try Data(contentsOf: $0) }

        // The server's processes carry none of the daemon's environment.
        let postmaster =
            try String(contentsOf: dataDirectory.appendingPathComponent("pg/postmaster.pid"), encoding: .utf8)
            .split(separator: "\n").first.map(String.init) ?? ""
        let environ = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(postmaster)/environ")), as: UTF8.self)
        #expect(!environ.contains(marker) && !environ.contains("LEDGERD_"), "postmaster environment: \(environ)")
        // Nor does the acquirer child (review 3, N16: it inherited the daemon's whole environment, keys included).
        let child = try #require(Self.child(of: daemon.process.processIdentifier, commandContaining: "acquirer"), "no acquirer child")
        let childEnviron = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(child)/environ")), as: UTF8.self)
        #expect(!childEnviron.contains(marker) && !childEnviron.contains("LEDGERD_MIGRATIONS_DIR"), "acquirer environment: \(childEnviron)")

        // The files and the directory: root's, the key files 0600.
        for file in [keys, keyring] {
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600 && (attributes[.ownerAccountID] as? Int) == 0, "\(file.lastPathComponent)")
        }
        let directory = try FileManager.default.attributesOfItem(atPath: dataDirectory.path)
        #expect((directory[.ownerAccountID] as? Int) == 0 && (directory[.posixPermissions] as? Int) == 0o711)

        // As postgres: read, replace, plant, rename — each refused, for the keys and for the keyring.
        let planted =
            #"{"keys":[{"id":"evil","role":"operator","salt":"00000000000000000000000000000000","hash":"\#(String(repeating: "0", count: 64))","created_at":"2026-01-01T00:00:00Z"}]}"#
        var attempts = ["ls '\(dataDirectory.path)'", "grep -a LEDGERD_ /proc/\(postmaster)/environ"]
        for path in [keys.path, keyring.path] {
            attempts += [
                "cat '\(path)'",
                "cp /dev/null '\(path)'",
                "printf '%s' '\(planted)' > '\(path).new' && mv '\(path).new' '\(path)'",
                "mv '\(path)' '\(path).orig'",
                "rm -f '\(path)'",
            ]
        }
        // Every other file of the daemon's own (outside the cluster's pg/ and run/): the acquirer's secrets, keys…
        let others =
            FileManager.default.enumerator(at: dataDirectory, includingPropertiesForKeys: [.isRegularFileKey])?
            .compactMap { $0 as? URL }
            .filter { url in
                let relative = url.path.dropFirst(dataDirectory.path.count + 1)
                return ["pg/", "run/", "product_images/", "checkpoints/"].allSatisfy { !relative.hasPrefix($0) }
                    && (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
            } ?? []
        #expect(others.contains { $0.lastPathComponent == "secrets.json" }, "\(others)")
        for file in others where ![keys, keyring].contains(file) { attempts.append("cat '\(file.path)'") }
        for attempt in attempts {
            let outcome = try await Self.asPostgres(attempt)
            #expect(outcome.status != 0, "as postgres, `\(attempt)` succeeded: \(outcome.output)")
            #expect(!outcome.output.contains("olk_") && !outcome.output.contains("\"hash\""), "as postgres, `\(attempt)` showed a key")
        }
        // The cluster itself still works for that user (its own directories), and nothing changed.
        #expect(try await Self.asPostgres("test -O '\(dataDirectory.path)/pg/PG_VERSION'").status == 0)
        #expect(try [keys, keyring].map { try Data(contentsOf: $0) } == originals)
        let (status, _) = try await daemon.request("GET", "/orders?limit=1", timeout: 10)
        #expect(status == 200 && !operatorKey.isEmpty)
        try await daemon.stop()
    }

    @Test func secretFilesAre0600WhateverTheUmaskAndNeverOverwritten() throws {
        let directory = URL(fileURLWithPath: "/tmp/ledgerd-secretfile-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("key.pem")
        let previous = umask(0)
        defer { umask(previous) }
        try SecretFile.write(Data("first".utf8), to: file)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o600)
        #expect(throws: SecretFileError.self) { try SecretFile.write(Data("second".utf8), to: file) }
        #expect(try String(contentsOf: file, encoding: .utf8) == "first")
        try SecretFile.write(Data("third".utf8), to: file, overwrite: true)
        #expect(try String(contentsOf: file, encoding: .utf8) == "third")
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o600)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["key.pem"])
    }

    /// Review 3, N11: a keyring group or others can write (or read) is refused, at start and on every reload (the
    /// watcher reads through the same `readKeyring`), so a local user cannot plant an operator verifier.
    @Test func aKeyringGroupOrOthersCanWriteOrReadIsRefused() throws {
        let directory = URL(fileURLWithPath: "/tmp/ledgerd-keyring-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("api-keyring.json")
        _ = try APIKeys.add(role: .operator, id: nil, expiresAt: nil, keyring: url)
        #expect(try APIKeys.readKeyring(url).keys.count == 1)
        let configuration = try LedgerConfiguration.load(environment: [
            "LEDGERD_DATABASE_URL": "postgres://ledger@127.0.0.1:1/ledger", "LEDGERD_API_KEYRING": url.path,
        ])
        #expect(try !APIKeys.keyring(for: configuration, logger: TestCluster.logger).isEmpty)
        for mode: mode_t in [0o666, 0o620, 0o602, 0o640] {
            #expect(chmod(url.path, mode) == 0)
            #expect(throws: ConfigurationError.self, "mode \(String(mode, radix: 8))") { try APIKeys.readKeyring(url) }
            #expect(throws: ConfigurationError.self, "mode \(String(mode, radix: 8))") {
                try APIKeys.keyring(for: configuration, logger: TestCluster.logger)
            }
        }
    }

    /// Review 3, N10: the generated webhook secrets key is a secret file like the others — 0600 whatever the umask,
    /// written through `SecretFile` — and one others can read is refused rather than used.
    @Test func theWebhookSecretsKeyIsWrittenAndReadAsASecretFile() throws {
        let directory = URL(fileURLWithPath: "/tmp/ledgerd-whkey-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try LedgerConfiguration.load(environment: ["LEDGERD_DATA_DIR": directory.path])
        let previous = umask(0)
        let key = try WebhookSecretsKeyFile.key(for: configuration, logger: TestCluster.logger)
        umask(previous)
        let file = directory.appendingPathComponent("webhook-secrets.key")
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o600)
        #expect(try WebhookSecretsKeyFile.key(for: configuration, logger: TestCluster.logger) == key)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["webhook-secrets.key"])
        #expect(chmod(file.path, 0o644) == 0)
        #expect(throws: (any Error).self) { try WebhookSecretsKeyFile.key(for: configuration, logger: TestCluster.logger) }
    }
}
