import Configuration
import LedgerServices

/// Reads that refuse a value they cannot take. The library's `int(forKey:default:)` and `bool(forKey:default:)` answer
/// the default for a value that is set but not an integer or a boolean, so `LEDGERD_PORT=8O80` served on 12345 and
/// `LEDGERD_SETTLEMENT_AUTO=ture` settled nothing, silently. Here an unset key (or one set to nothing, as before) is
/// its default and a set one is taken or refused, naming its environment variable.
extension ConfigReader {
    func integer(forKey key: ConfigKey, default defaultValue: Int) throws -> Int {
        if let value = int(forKey: key) { return value }
        guard let text = string(forKey: key), !text.isEmpty else { return defaultValue }
        throw ConfigurationError("\(Self.variable(key)) must be an integer, not \"\(text)\"")
    }

    func boolean(forKey key: ConfigKey, default defaultValue: Bool) throws -> Bool {
        if let value = bool(forKey: key) { return value }
        guard let text = string(forKey: key), !text.isEmpty else { return defaultValue }
        throw ConfigurationError("\(Self.variable(key)) must be true or false, not \"\(text)\"")
    }

    /// The environment variable of `key` (`ledgerd.feed.wake.ms`: `LEDGERD_FEED_WAKE_MS`).
    static func variable(_ key: ConfigKey) -> String { key.components.joined(separator: "_").uppercased() }
}
