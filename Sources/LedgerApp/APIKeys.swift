import Foundation
import LedgerAPI
import LedgerHTTP
import LedgerServices
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Where the back-office API keys come from, and the keyring file that holds them.
///
/// - **The keyring file** (`LEDGERD_API_KEYRING`; in the embedded default `<data dir>/api-keyring.json`)
///   holds only verifiers (``APIKeyVerifier``: id, role, salt, salted SHA-256, created / expires /
///   revoked), never a key. `ledgerd keys add|list|revoke` edit it (0600, written whole and moved into
///   place, see ``SecretFile``); the daemon reads it again within a second of a change (``Watcher``), so
///   a key is added, rotated (add the new one, move the clients, revoke the old) or revoked without a
///   restart. A revoked key stays in the file so its id is never given again.
/// - **Keys in the environment** (`LEDGERD_OPERATOR_KEYS` / `LEDGERD_AUDITOR_KEYS`, comma-separated) are
///   hashed at start like the file's; both sets are in force together.
/// - **The embedded default's first run** creates one key of each role (`op-1`, `au-1`): their
///   verifiers go to the keyring file, the keys themselves to `<data dir>/api-keys.json`, the local
///   command line's credentials (the daemon never reads that file once the keyring exists; delete it
///   when the keys live elsewhere). Both are 0600 in a directory that, when the daemon runs as root,
///   belongs to root, so the cluster's OS user can neither read nor replace them. A data directory from
///   before the keyring has only `api-keys.json`: its keys are taken into a new keyring as they are
///   (ids `op-1`, `au-1`, …; the whole key is the secret).
///
/// With a database URL and no keys configured the back office is closed (every call is 401) and the
/// daemon says so.
public enum APIKeys {
    /// `<data dir>/api-keys.json`: whole keys, for the local command line.
    struct ClientFile: Codable {
        var operatorKeys: [String]
        var auditorKeys: [String]
        enum CodingKeys: String, CodingKey {
            case operatorKeys = "operator_keys"
            case auditorKeys = "auditor_keys"
        }
    }

    /// The keyring file's document.
    public struct KeyringFile: Codable, Sendable {
        public var keys: [APIKeyVerifier]

        public static func decode(_ data: Data) throws -> KeyringFile {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(KeyringFile.self, from: data)
        }

        public func encoded() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            return try encoder.encode(self)
        }

        /// `op-<n>` / `au-<n>` with the next free n of that role (ids of revoked keys stay taken).
        public func nextID(for role: Principal.Role) -> String {
            let prefix = role == .operator ? "op-" : "au-"
            let taken = keys.compactMap { $0.id.hasPrefix(prefix) ? Int($0.id.dropFirst(prefix.count)) : nil }
            return prefix + String((taken.max() ?? 0) + 1)
        }
    }

    /// The keyring file in force: the configured one, else the embedded default's.
    public static func keyringURL(for configuration: LedgerConfiguration) -> URL? {
        if let path = configuration.apiKeyringPath { return URL(fileURLWithPath: path) }
        return configuration.usesEmbeddedDatabase ? configuration.dataDirectoryURL.appendingPathComponent("api-keyring.json") : nil
    }

    static func clientFileURL(for configuration: LedgerConfiguration) -> URL {
        configuration.dataDirectoryURL.appendingPathComponent("api-keys.json")
    }

    public static func keyring(for configuration: LedgerConfiguration, logger: Logger) throws -> APIKeyring {
        var verifiers: [APIKeyVerifier] = []
        let hasEnvironmentKeys = !configuration.operatorKeys.isEmpty || !configuration.auditorKeys.isEmpty
        if let url = keyringURL(for: configuration) {
            if FileManager.default.fileExists(atPath: url.path) {
                verifiers = try readKeyring(url).keys
            } else if configuration.apiKeyringPath != nil {
                throw ConfigurationError("LEDGERD_API_KEYRING: \(url.path) does not exist (create it with `ledgerd keys add`)")
            } else if !hasEnvironmentKeys {
                verifiers = try createEmbeddedKeyring(configuration, at: url, logger: logger)
            }
        }
        let keyring = try APIKeyring(operatorKeys: configuration.operatorKeys, auditorKeys: configuration.auditorKeys, fileVerifiers: verifiers)
        if keyring.isEmpty {
            logger.warning("no back-office API keys configured: set LEDGERD_API_KEYRING or LEDGERD_OPERATOR_KEYS / LEDGERD_AUDITOR_KEYS")
        } else {
            logger.notice("back-office API keys in force", metadata: ["ids": "\(keyring.liveIDs.joined(separator: ","))"])
        }
        return keyring
    }

    public static func readKeyring(_ url: URL) throws -> KeyringFile {
        // Through SecretFile: a keyring group or others can write is refused (review 3, N11), at start and on reload.
        do { return try KeyringFile.decode(try SecretFile.read(url.path)) } catch {
            throw ConfigurationError("the API keyring \(url.path) does not read: \(error)")
        }
    }

    /// The embedded default's first keyring: the older `api-keys.json`'s keys when there is one, else
    /// a new operator and auditor key written there for the command line.
    private static func createEmbeddedKeyring(_ configuration: LedgerConfiguration, at url: URL, logger: Logger) throws -> [APIKeyVerifier] {
        try FileManager.default.createDirectory(at: configuration.dataDirectoryURL, withIntermediateDirectories: true)
        let clientURL = clientFileURL(for: configuration)
        let client: ClientFile
        if FileManager.default.fileExists(atPath: clientURL.path) {
            client = try JSONDecoder().decode(ClientFile.self, from: try SecretFile.read(clientURL.path))
        } else {
            client = ClientFile(
                operatorKeys: [APIKeyToken.generate(id: "op-1").text],
                auditorKeys: [APIKeyToken.generate(id: "au-1").text]
            )
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try SecretFile.write(try encoder.encode(client), to: clientURL)
        }
        var file = KeyringFile(keys: [])
        for (keys, role) in [(client.operatorKeys, Principal.Role.operator), (client.auditorKeys, .auditor)] {
            for key in keys {
                file.keys.append(APIKeyVerifier.make(id: APIKeyToken(key)?.id ?? file.nextID(for: role), role: role, key: key, createdAt: Date()))
            }
        }
        try SecretFile.write(try file.encoded(), to: url)
        logger.notice("back-office API keys (operator and auditor) are in \(clientURL.path); their verifiers in \(url.path)")
        return file.keys
    }

    /// `ledgerd keys add`: a new key of `role` into the keyring file (created when missing); returns
    /// the key, which exists nowhere else (only its verifier is stored). `id` nil: the next `op-<n>` /
    /// `au-<n>`.
    public static func add(role: Principal.Role, id: String?, expiresAt: Date?, keyring url: URL, now: Date = Date()) throws -> APIKeyToken {
        var file = FileManager.default.fileExists(atPath: url.path) ? try readKeyring(url) : KeyringFile(keys: [])
        let id = id ?? file.nextID(for: role)
        guard APIKeyToken.isValidID(id) else { throw ConfigurationError("a key id is 1 to 32 of a-z, A-Z, 0-9 and -: \(id)") }
        guard !file.keys.contains(where: { $0.id == id }) else { throw ConfigurationError("the keyring already has a key \(id)") }
        let token = APIKeyToken.generate(id: id)
        file.keys.append(APIKeyVerifier.make(id: id, role: role, key: token.text, createdAt: now, expiresAt: expiresAt))
        try SecretFile.write(try file.encoded(), to: url, overwrite: true)
        return token
    }

    /// `ledgerd keys revoke`: the key `id` is refused from `now` on (the daemon rereads the file within
    /// a second). Its verifier stays, so its id is not given again.
    public static func revoke(id: String, keyring url: URL, now: Date = Date()) throws {
        var file = try readKeyring(url)
        guard let index = file.keys.firstIndex(where: { $0.id == id }) else { throw ConfigurationError("the keyring has no key \(id)") }
        if file.keys[index].revokedAt == nil { file.keys[index].revokedAt = now }
        try SecretFile.write(try file.encoded(), to: url, overwrite: true)
    }

    /// An operator key for command-line clients of a running daemon: `LEDGERD_API_KEY`, the first
    /// configured one, or the embedded daemon's generated one from `<data dir>/api-keys.json`.
    public static func operatorKey(for configuration: LedgerConfiguration) throws -> String {
        if let key = configuration.clientAPIKey ?? configuration.operatorKeys.first { return key }
        let url = clientFileURL(for: configuration)
        guard FileManager.default.fileExists(atPath: url.path),
            let key = try JSONDecoder().decode(ClientFile.self, from: try SecretFile.read(url.path)).operatorKeys.first
        else {
            throw ConfigurationError("no operator key: set LEDGERD_API_KEY or pass --api-key (no \(url.path))")
        }
        return key
    }

    /// Reads the keyring file again whenever it changes (checked every second: its inode, size and
    /// modification time), so `ledgerd keys` takes effect without a restart. A file that does not read
    /// is logged and the keys in force stay.
    struct Watcher: Service {
        let keyring: APIKeyring
        let url: URL
        let logger: Logger
        var interval: Duration = .seconds(1)

        func run() async throws {
            try? await cancelWhenGracefulShutdown {
                // Nothing seen yet: the first look reads the file once more (it may have changed since start).
                var seen: [Int]? = []
                while !Task.isCancelled {
                    try await Task.sleep(for: interval)
                    let now = Self.stamp(url)
                    guard now != seen else { continue }
                    seen = now
                    do {
                        try keyring.replace(fileVerifiers: try readKeyring(url).keys)
                        logger.notice("API keyring reloaded", metadata: ["ids": "\(keyring.liveIDs.joined(separator: ","))"])
                    } catch {
                        logger.error("API keyring reload failed; the keys in force stay", metadata: ["error": "\(error)"])
                    }
                }
            }
        }

        static func stamp(_ url: URL) -> [Int]? {
            var status = stat()
            guard stat(url.path, &status) == 0 else { return nil }
            return [
                Int(status.st_ino), Int(status.st_size), Int(status.st_mtim.tv_sec), Int(status.st_mtim.tv_nsec),
            ]
        }
    }
}
