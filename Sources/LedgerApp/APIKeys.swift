import Foundation
import LedgerHTTP
import LedgerServices
import Logging

/// Where the back-office API keys come from.
///
/// `LEDGERD_OPERATOR_KEYS` / `LEDGERD_AUDITOR_KEYS` (comma-separated) when set. Otherwise, in the
/// embedded default, one key of each role is generated on first run and kept in
/// `<data dir>/api-keys.json` (mode 0600 from creation, see ``SecretFile``); the daemon logs where. When the daemon
/// runs as root the data directory belongs to root (the cluster's OS user owns only `pg/` and `run/`), so that user
/// can neither read nor replace the file. With a database URL and no keys
/// configured, the back office is closed (every call is 401) and the daemon says so.
public enum APIKeys {
    struct File: Codable {
        var operatorKeys: [String]
        var auditorKeys: [String]
        enum CodingKeys: String, CodingKey {
            case operatorKeys = "operator_keys"
            case auditorKeys = "auditor_keys"
        }
    }

    public static func keyring(for configuration: LedgerConfiguration, logger: Logger) throws -> APIKeyring {
        if !configuration.operatorKeys.isEmpty || !configuration.auditorKeys.isEmpty {
            return APIKeyring(operatorKeys: configuration.operatorKeys, auditorKeys: configuration.auditorKeys)
        }
        guard configuration.usesEmbeddedDatabase else {
            logger.warning("no back-office API keys configured: set LEDGERD_OPERATOR_KEYS / LEDGERD_AUDITOR_KEYS")
            return APIKeyring(operatorKeys: [], auditorKeys: [])
        }
        let url = configuration.dataDirectoryURL.appendingPathComponent("api-keys.json")
        let file: File
        if let data = FileManager.default.contents(atPath: url.path) {
            file = try JSONDecoder().decode(File.self, from: data)
        } else {
            file = File(operatorKeys: [generate("olk_op_")], auditorKeys: [generate("olk_au_")])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try FileManager.default.createDirectory(at: configuration.dataDirectoryURL, withIntermediateDirectories: true)
            // 0600 from creation, in the data directory that (as root) belongs to root, not to the cluster's user.
            try SecretFile.write(try encoder.encode(file), to: url)
        }
        logger.notice("back-office API keys (operator and auditor) are in \(url.path)")
        return APIKeyring(operatorKeys: file.operatorKeys, auditorKeys: file.auditorKeys)
    }

    /// An operator key for command-line clients of a running daemon: the first configured one, or
    /// the embedded daemon's generated one from `<data dir>/api-keys.json`.
    public static func operatorKey(for configuration: LedgerConfiguration) throws -> String {
        if let key = configuration.operatorKeys.first { return key }
        let url = configuration.dataDirectoryURL.appendingPathComponent("api-keys.json")
        guard let data = FileManager.default.contents(atPath: url.path),
            let key = try JSONDecoder().decode(File.self, from: data).operatorKeys.first
        else {
            throw ConfigurationError("no operator key: set LEDGERD_OPERATOR_KEYS or pass --api-key (no \(url.path))")
        }
        return key
    }

    /// 32 random bytes, base64url, behind a prefix that says what the secret is.
    static func generate(_ prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return prefix
            + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
