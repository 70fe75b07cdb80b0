import Foundation
import Hummingbird
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import UnixSignals

/// `ledgerd serve`: database up (embedded or configured), migrated, HTTP and background services
/// running until SIGINT/SIGTERM, then a graceful drain and the embedded cluster stopped.
public enum Daemon {
    /// How long a stopping daemon may drain before what is still running is cancelled (systemd's own stop
    /// timeout, 90 s by default, is longer).
    static let shutdownGrace: Duration = .seconds(30)

    /// Run-time settings the daemon sends at connection start, on the primary and on a replica: every statement
    /// bounded (`statement_timeout`), and no JIT compilation (on by default once a plan's estimated cost passes
    /// 100,000, which a read of a few hundred streams does: 10–40 ms of compiling for a statement that runs in a few).
    static func sessionSettings(_ statementMilliseconds: Int64) -> [(String, String)] {
        [("statement_timeout", "\(statementMilliseconds)"), ("jit", "off")]
    }

    /// How long after ``shutdownGrace`` the cancelled services may take to end before ``stopWatchdog(logger:cleanUp:)``
    /// ends the process.
    static let stuckGrace: Duration = .seconds(10)

    /// A stop always ends: `shutdownGrace` + `stuckGrace` after the first SIGTERM or SIGINT, a daemon still running
    /// logs that its stop was stuck, runs `cleanUp` (the acquirer child, the embedded cluster) and exits with status 1.
    /// The drain bounds what the daemon waits for; a task that ignores cancellation too (a statement PostgresNIO never
    /// answers, seen inside a transaction after an outage: security review 3, N5) would otherwise keep the process,
    /// its acquirer child and its embedded PostgreSQL alive until someone kills them. Nothing acknowledged is at risk:
    /// every reply was sent after its COMMIT. Cancel the task once the group has ended.
    static func stopWatchdog(logger: Logger, cleanUp: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task.detached {
            let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
            for await signal in signals {
                try? await Task.sleep(for: shutdownGrace + stuckGrace)
                if Task.isCancelled { return }
                logger.critical(
                    "the daemon did not stop within its graceful bound and the cancellation after it; exiting",
                    metadata: ["signal": "\(signal)", "waited": "\(shutdownGrace + stuckGrace)"]
                )
                cleanUp()
                exit(1)
            }
        }
    }

    public static func serve(configuration: LedgerConfiguration, logger: Logger) async throws {
        // One daemon per data directory, decided before anything is read, started or written (``DataDirectoryLock``).
        // Held until the process ends; the kernel releases it then, however the process ends.
        let lock = try Self.lockDataDirectory(configuration)
        defer { withExtendedLifetime(lock) {} }
        // An inbox that cannot be used (world-writable, another user's) stops the daemon before anything starts.
        if let inbox = configuration.inbox { try ReportInbox.prepare(inbox.directory, claim: inbox.claim) }
        // A configured key that cannot be read stops the daemon before anything starts.
        let checkpointKey = try configuration.checkpointKeyPath.map(CheckpointKey.init(contentsOf:))
        let tls = try configuration.tlsCertificatePath.map { try TLSCertificateStore(certificatePath: $0, keyPath: configuration.tlsKeyPath ?? "") }
        let database = try await LedgerDatabase.prepare(configuration, logger: logger, daemonLock: lock)
        // With the copy of the migrations it applied (an installed one, a checkout's sql/, the source tree's): the
        // daemon's log only, since an offline command at the default level prints its report alone.
        let migrations = (try? configuration.resolvedMigrationsDirectory().path) ?? "?"
        logger.info("ledger database ready", metadata: ["database": "\(database.location)", "migrations": "\(migrations)"])
        do {
            // Watched: while the database is unreachable statements fail at once (503), and the pool is renewed
            // as soon as it is back.
            // The daemon's statements are bounded (`statement_timeout`, a run-time setting sent at connection start);
            // offline commands (`audit verify --sql` on a large ledger, `rebuild`) are not.
            // With several hosts (`target_session_attrs=read-write`) the watched pool follows the primary.
            let statementMilliseconds = configuration.databaseStatementTimeout.components.seconds * 1000
            let appConfiguration = database.appConfiguration.updating {
                $0.options.additionalStartupParameters += Self.sessionSettings(statementMilliseconds)
            }
            let client = DatabaseClient(
                hosts: appConfiguration,
                backgroundLogger: logger,
                watch: .init(),
                statementDeadline: configuration.databaseDeadline
            )
            // Auditors' reads on a streaming replica, watched and bounded like the primary's pool.
            let readClient = try configuration.readDatabaseURL.map { url in
                DatabaseClient(
                    hosts: try DatabaseURL(url).hosts.updating {
                        $0.options.maximumConnections = configuration.databasePoolSize
                        $0.options.connectTimeout = configuration.databaseConnectTimeout
                        $0.options.additionalStartupParameters += Self.sessionSettings(statementMilliseconds)
                    },
                    backgroundLogger: logger,
                    watch: .init(),
                    statementDeadline: configuration.databaseDeadline
                )
            }
            let keyring = try APIKeys.keyring(for: configuration, logger: logger)
            var clock: @Sendable () -> Date = { Date() }
            var offsetMicroseconds: Int64?
            if let start = configuration.clockStart {
                // Rehearsal time: starts at the configured instant, runs at wall speed.
                let offset = start.timeIntervalSince(Date())
                offsetMicroseconds = Int64((offset * 1_000_000).rounded())
                clock = { Date().addingTimeInterval(offset) }
                logger.warning("the daemon's clock is simulated (LEDGERD_CLOCK_START)", metadata: ["start": "\(start)"])
            }
            if configuration.faultStuckStop {
                logger.warning("a stop-test fault is armed: a service that never stops (LEDGERD_FAULT_STUCK_STOP)")
            }
            if let point = configuration.faultCrashAt {
                logger.warning("a crash-test fault point is armed (LEDGERD_FAULT_CRASH_AT)", metadata: ["point": "\(point.rawValue)"])
            }
            let metrics = LedgerMetrics()
            let (acquirer, supervisor) = try await AcquirerConnection.open(
                configuration: configuration,
                database: database,
                clockOffsetMicroseconds: offsetMicroseconds,
                metrics: metrics,
                logger: logger
            )
            do {
                let services = try ServiceContainer(
                    client: client,
                    readClient: readClient,
                    configuration: configuration,
                    metrics: metrics,
                    keyring: keyring,
                    acquirer: acquirer,
                    clock: clock,
                    checkpointKey: checkpointKey,
                    acquirerSupervisor: supervisor,
                    webhookSecretsKey: try WebhookSecretsKeyFile.key(for: configuration, logger: logger),
                    logger: logger
                )
                let scheme = tls == nil ? "http" : "https"
                let keysFile = APIKeys.clientFileURL(for: configuration)
                let app = try buildApplication(configuration: configuration, services: services, tls: tls, logger: logger) { port in
                    lock.record(port: port)
                    // Where a newcomer goes next: the console, signed in with a key from the keys file (issue 55).
                    logger.notice("\(Self.consoleLine(scheme: scheme, host: configuration.host, port: port, keysFile: keysFile))")
                }
                logger.info(
                    "ledgerd serving",
                    metadata: ["address": "\(configuration.host):\(configuration.port)", "scheme": "\(tls == nil ? "http" : "https")"]
                )
                // SIGTERM/SIGINT drain the daemon (the server, then its services in reverse order); a drain that
                // has not finished after `shutdownGrace` is cancelled, so a stop always ends (a service stuck in its
                // graceful path kept a daemon alive after an outage, its acquirer child with it).
                let groupServices: [any Service] = configuration.faultStuckStop ? [app, NeverStops()] : [app]
                var group = ServiceGroupConfiguration(services: groupServices, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
                group.maximumGracefulShutdownDuration = Self.shutdownGrace
                let watchdog = Self.stopWatchdog(logger: logger) {
                    supervisor?.stop()
                    database.stop()
                }
                defer { watchdog.cancel() }
                try await ServiceGroup(configuration: group).run()
            } catch {
                supervisor?.stop()
                try? await acquirer.shutdown()
                throw error
            }
            supervisor?.stop()
            try? await acquirer.shutdown()
        } catch {
            database.stop()
            throw error
        }
        database.stop()
        logger.info("ledgerd stopped")
    }

    /// The startup line naming the console's URL (a wildcard address shown as the loopback one a browser on this
    /// machine opens) and where its sign-in keys are: the keys file when there is one, else who issues them.
    static func consoleLine(scheme: String, host: String, port: Int, keysFile: URL) -> String {
        let shown = ["0.0.0.0", "::", ""].contains(host) ? "127.0.0.1" : host.contains(":") ? "[\(host)]" : host
        let keys =
            FileManager.default.fileExists(atPath: keysFile.path)
            ? "sign in with a key from \(keysFile.path)" : "sign in with a key from `ledgerd keys add` (LEDGERD_API_KEYRING)"
        return "console: \(scheme)://\(shown):\(port)/console/sign-in (\(keys))"
    }

    /// `serve`'s lock on its data directory; when another process holds it, an error naming that process (its PID,
    /// and its port once bound), thrown before this process has changed anything.
    static func lockDataDirectory(_ configuration: LedgerConfiguration) throws -> DataDirectoryLock {
        switch try DataDirectoryLock.acquire(in: configuration.dataDirectoryURL, command: "serve") {
        case .acquired(let lock): return lock
        case .held(let holder):
            throw DataDirectoryLockError(
                "\(holder) already runs on the data directory \(configuration.dataDirectoryURL.path); stop it first, or choose another LEDGERD_DATA_DIR"
            )
        }
    }

    /// Runs `body` against the configured ledger database for an offline command, starting the
    /// embedded cluster if needed (and stopping it afterwards only if this command started it).
    public static func withLedgerClient<T: Sendable>(
        configuration: LedgerConfiguration,
        logger: Logger,
        asOwner: Bool = false,
        _ body: @Sendable (DatabaseClient) async throws -> T
    ) async throws -> T {
        let database = try await LedgerDatabase.prepare(configuration, logger: logger)
        do {
            let result = try await withPostgresClient(
                hosts: asOwner ? database.ownerConfiguration : database.appConfiguration,
                logger: logger,
                body
            )
            database.stop()
            return result
        } catch {
            database.stop()
            throw error
        }
    }
}

/// The daemon's logger: swift-log to standard error, at the configured level.
public func makeLogger(_ configuration: LedgerConfiguration, label: String = "ledgerd") -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = configuration.logLevel
    return logger
}

/// `LEDGERD_FAULT_STUCK_STOP`'s service: it ignores the graceful stop and the cancellation after it (a continuation
/// nothing resumes, as a statement PostgresNIO never answers), so only the stop watchdog can end the daemon.
struct NeverStops: Service {
    /// Where the continuation waits, never resumed (kept, so it is not reported as leaked).
    static let parked = Mutex<[CheckedContinuation<Void, Never>]>([])

    func run() async {
        await withCheckedContinuation { continuation in Self.parked.withLock { $0.append(continuation) } }
    }
}
