import Foundation
import Logging

/// The tests' logs: quiet unless `LEDGERD_TEST_LOG` names a level (`trace`, `debug`, `info`, `notice`,
/// `warning`, `error`, `critical`; anything else means `warning`). Every logger the harness makes or
/// hands to the application (its services, its PostgreSQL pools, the embedded cluster) comes from here.
public enum TestLog {
    /// The level `LEDGERD_TEST_LOG` asks for; nil when it is unset (nothing is logged).
    public static let level: Logger.Level? = ProcessInfo.processInfo.environment["LEDGERD_TEST_LOG"].map {
        Logger.Level(rawValue: $0.lowercased()) ?? .warning
    }

    /// A logger at ``level``, or one that drops everything when `LEDGERD_TEST_LOG` is unset.
    public static func logger(label: String) -> Logger {
        guard let level else { return Logger(label: label) { _ in SwiftLogNoOpLogHandler() } }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}
