import Foundation
import LedgerServices
import Logging

/// Where the key that seals webhook secrets comes from: `LEDGERD_WEBHOOK_SECRETS_KEY` when set;
/// otherwise, for the embedded database, `<data dir>/webhook-secrets.key` (base64 of 32 random bytes,
/// mode 0600, written and read through ``SecretFile``), generated on first use. With a database URL and no key, webhooks cannot be registered
/// (the daemon says so) and the dispatcher idles.
public enum WebhookSecretsKeyFile {
    public static func key(for configuration: LedgerConfiguration, logger: Logger) throws -> [UInt8]? {
        if let key = configuration.webhookSecretsKey { return key }
        guard configuration.usesEmbeddedDatabase else {
            logger.notice("no LEDGERD_WEBHOOK_SECRETS_KEY: webhooks cannot be registered")
            return nil
        }
        let url = configuration.dataDirectoryURL.appendingPathComponent("webhook-secrets.key")
        if FileManager.default.fileExists(atPath: url.path) {
            let text = String(decoding: try SecretFile.read(url.path), as: UTF8.self)
            guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == WebhookSecretBox.keyByteCount
            else {
                throw ConfigurationError("\(url.path) must hold the base64 of 32 bytes")
            }
            return Array(bytes)
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<WebhookSecretBox.keyByteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try FileManager.default.createDirectory(at: configuration.dataDirectoryURL, withIntermediateDirectories: true)
        // 0600 from its creation (review 3, N10: `createFile(attributes:)` wrote it with the umask's mode, renamed it
        // into place and only then narrowed it).
        try SecretFile.write(Data((Data(bytes).base64EncodedString() + "\n").utf8), to: url)
        return bytes
    }
}
