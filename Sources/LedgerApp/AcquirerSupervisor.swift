import Foundation
import LedgerAcquirerAPI
import LedgerAcquirerClient
import LedgerAcquirerService
import LedgerCore
import LedgerPostgres
import LedgerProcess
import LedgerServices
import Logging
import PostgresNIO
import ServiceLifecycle

/// The acquirer service as a child of `ledgerd serve` (no `LEDGERD_ACQUIRER_URL`): started on the
/// ledger's embedded cluster (database `acquirer`, role `acquirer_app`) before the ledger serves, and
/// restarted whenever it dies, on the same port.
///
/// Nothing secret reaches the child through its environment (``childEnvironment(_:)``) or its command line: its API key and
/// database URL are in a file only the daemon's OS user can read (`<data dir>/acquirer/secrets.json`,
/// 0600). Its standard input is a pipe the daemon never writes: when the daemon dies — even by
/// `kill -9` — the pipe closes and the child exits, so no orphan keeps serving an old journal.
public final class AcquirerSupervisor: Service, @unchecked Sendable {
    private let arguments: [String]
    /// `<data dir>/acquirer/endpoint`: where the child serves now (not secret; operators and tests read it).
    private let endpointFile: URL
    private let acquirer: HTTPAcquirer
    private let logger: Logger
    private let lock = NSLock()
    private var process: ChildProcessHandle?
    private var stopping = false
    private var port: Int

    private init(arguments: [String], acquirer: HTTPAcquirer, port: Int, endpointFile: URL, logger: Logger) {
        self.arguments = arguments
        self.endpointFile = endpointFile
        self.acquirer = acquirer
        self.port = port
        self.logger = logger
    }

    /// Prepares the child's database and files, starts it, and waits until it serves.
    public static func start(
        configuration: LedgerConfiguration,
        database: LedgerDatabase,
        apiKey: String,
        clockOffsetMicroseconds: Int64?,
        acquirer: @escaping (String) -> HTTPAcquirer,
        logger: Logger
    ) async throws -> (AcquirerSupervisor, HTTPAcquirer) {
        let directory = configuration.dataDirectoryURL.appendingPathComponent("acquirer")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let migrations = try configuration.resolvedMigrationsDirectory().appendingPathComponent("acquirer")
        let databaseURL: String
        if let embedded = database.embedded {
            let endpoint = embedded.endpoint
            try await prepareEmbedded(endpoint: endpoint, migrations: migrations, logger: logger)
            databaseURL = Self.embeddedURL(endpoint)
        } else {
            // A configured ledger database: the child keeps its schema in it, as the migration (owner) role.
            guard let owner = configuration.migrationDatabaseURL ?? configuration.databaseURL else {
                throw ConfigurationError("no database for the acquirer service")
            }
            databaseURL = owner
        }
        return try launchChild(
            directory: directory,
            secrets: AcquirerSecrets(apiKey: apiKey, databaseURL: databaseURL),
            settings: configuration.supervisedAcquirerSettings,
            seed: configuration.acquirerSeed,
            migrations: migrations,
            logLevel: configuration.logLevel.rawValue,
            clockOffsetMicroseconds: clockOffsetMicroseconds,
            wireFaults: configuration.acquirerWireFaults,
            databaseDeadline: configuration.databaseDeadline,
            acquirer: acquirer,
            logger: logger
        )
    }

    /// Starts the child on an embedded cluster the caller runs (`ledgerd bench settle`): its database
    /// `acquirer` is created (or, with `fresh`, dropped and created) and migrated first.
    public static func start(
        embedded endpoint: EmbeddedPostgres.Endpoint,
        directory: URL,
        migrations: URL,
        settings: SupervisedAcquirerSettings,
        seed: UInt64,
        logLevel: String,
        apiKey: String,
        clockOffsetMicroseconds: Int64?,
        fresh: Bool,
        acquirer: @escaping (String) -> HTTPAcquirer,
        logger: Logger
    ) async throws -> (AcquirerSupervisor, HTTPAcquirer) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try await prepareEmbedded(endpoint: endpoint, migrations: migrations, fresh: fresh, logger: logger)
        return try launchChild(
            directory: directory,
            secrets: AcquirerSecrets(
                apiKey: apiKey,
                databaseURL: Self.embeddedURL(endpoint)
            ),
            settings: settings,
            seed: seed,
            migrations: migrations,
            logLevel: logLevel,
            clockOffsetMicroseconds: clockOffsetMicroseconds,
            wireFaults: nil,
            databaseDeadline: nil,
            acquirer: acquirer,
            logger: logger
        )
    }

    private static func launchChild(
        directory: URL,
        secrets: AcquirerSecrets,
        settings: SupervisedAcquirerSettings,
        seed: UInt64,
        migrations: URL,
        logLevel: String,
        clockOffsetMicroseconds: Int64?,
        wireFaults: String?,
        databaseDeadline: Duration?,
        acquirer: @escaping (String) -> HTTPAcquirer,
        logger: Logger
    ) throws -> (AcquirerSupervisor, HTTPAcquirer) {
        let secretsFile = directory.appendingPathComponent("secrets.json").path
        try secrets.write(to: secretsFile)
        let settingsFile = directory.appendingPathComponent("settings.json")
        try LedgerJSON.encode(settings).write(to: settingsFile, options: .atomic)
        var arguments = [
            "acquirer", "serve",
            "--secrets-file", secretsFile,
            "--supervised-settings", settingsFile.path,
            "--seed", String(seed),
            "--host", "127.0.0.1",
            "--migrations-dir", migrations.path,
            "--log-level", logLevel,
            "--announce", "--exit-with-stdin",
        ]
        // "=": the offset may be negative, and "-…" alone would read as a flag.
        if let clockOffsetMicroseconds { arguments += ["--clock-offset-microseconds=\(clockOffsetMicroseconds)"] }
        if let wireFaults { arguments += ["--wire-faults", wireFaults] }
        if let databaseDeadline {
            let milliseconds = databaseDeadline.components.seconds * 1000 + databaseDeadline.components.attoseconds / 1_000_000_000_000_000
            arguments += ["--database-deadline-milliseconds", String(milliseconds)]
        }
        let first = try launch(arguments: arguments, port: 0, logger: logger)
        let client = acquirer("http://127.0.0.1:\(first.port)")
        let endpointFile = directory.appendingPathComponent("endpoint")
        try Data("http://127.0.0.1:\(first.port)\n".utf8).write(to: endpointFile, options: .atomic)
        let supervisor = AcquirerSupervisor(arguments: arguments, acquirer: client, port: first.port, endpointFile: endpointFile, logger: logger)
        supervisor.process = first.process
        logger.info("acquirer service started", metadata: ["port": "\(first.port)", "pid": "\(first.process.processIdentifier)"])
        return (supervisor, client)
    }

    /// The child's process id (tests kill it).
    public var childProcessIdentifier: Int32? { lock.withLock { process?.processIdentifier } }

    /// Restarts the child whenever it dies, until graceful shutdown **or cancellation** (a service group
    /// cancels its services when one of them fails): then the child gets SIGTERM (it drains and exits) and,
    /// if it has not exited after ``stopGrace``, SIGKILL. A supervisor that only stopped on graceful shutdown
    /// kept a cancelled daemon alive forever, relaunching its child.
    public func run() async throws {
        await withTaskCancellationOrGracefulShutdownHandler {
            while true {
                guard let child = lock.withLock({ stopping ? nil : process }) else { break }
                await Self.waitForExit(child)
                if lock.withLock({ stopping }) { break }
                logger.error("the acquirer service exited; restarting it", metadata: ["status": "\(child.terminationStatus)"])
                while !lock.withLock({ stopping }) {
                    do {
                        let port = lock.withLock { self.port }
                        var started = try? Self.launch(arguments: arguments, port: port, logger: logger)
                        if started == nil { started = try Self.launch(arguments: arguments, port: 0, logger: logger) }
                        guard let started else { break }
                        lock.withLock {
                            self.process = started.process
                            self.port = started.port
                        }
                        acquirer.setBaseURL("http://127.0.0.1:\(started.port)")
                        try? Data("http://127.0.0.1:\(started.port)\n".utf8).write(to: endpointFile, options: .atomic)
                        logger.info("acquirer service restarted", metadata: ["port": "\(started.port)"])
                        break
                    } catch {
                        logger.error("restarting the acquirer service failed", metadata: ["error": "\(error)"])
                        await ChildProcessHandle.pause(.seconds(1))
                    }
                }
            }
        } onCancelOrGracefulShutdown: {
            self.stop()
        }
        stop()
        guard let child = lock.withLock({ process }) else { return }
        if await !Self.waitForExit(child, upTo: Self.stopGrace) {
            logger.error("the acquirer service did not exit after SIGTERM; killing it", metadata: ["pid": "\(child.processIdentifier)"])
            child.send(SIGKILL)
            await Self.waitForExit(child)
        }
    }

    /// How long a stopping child may drain before it is killed.
    static let stopGrace: Duration = .seconds(15)
    /// How long the service may say nothing while it starts (its replay's progress lines count) before it is given up.
    static let startSilence: TimeInterval = 60

    /// Stops the child (SIGTERM: it drains and exits).
    public func stop() {
        let child = lock.withLock { () -> ChildProcessHandle? in
            stopping = true
            return process
        }
        if let child, child.isRunning { child.terminate() }
    }

    /// Returns once `process` has exited (true) or `limit` has passed (false); polls every 100 ms, in a
    /// cancelled task too.
    @discardableResult
    private static func waitForExit(_ process: ChildProcessHandle, upTo limit: Duration? = nil) async -> Bool {
        await process.exited(within: limit, polling: .milliseconds(100)) != nil
    }

    /// The child's environment: only what a process needs to run (`PATH`, the locale, the time zone, `TMPDIR`, where its
    /// tasks run: `LEDGERD_EVENT_LOOP_EXECUTOR`) and the
    /// acquirer's own `LEDGERD_ACQUIRER_*` settings — never the daemon's keys and URLs (`LEDGERD_OPERATOR_KEYS`,
    /// `LEDGERD_DATABASE_URL`, …), which it inherited whole before (review 3, N16). Everything else it is told comes
    /// by its arguments and its 0600 secrets file.
    /// The acquirer child's URL of the embedded cluster, its socket directory percent-encoded as the `host` query
    /// value: a data directory's path with a space, `&`, `#`, `+` or `%` spliced in raw made the URL unreadable or named
    /// another directory. (A `,` still splits it: libpq's own host-list syntax, which has no escape for one.)
    static func embeddedURL(_ endpoint: EmbeddedPostgres.Endpoint) -> String {
        let allowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&+=#%;"))
        let host = endpoint.socketDirectory.addingPercentEncoding(withAllowedCharacters: allowed) ?? endpoint.socketDirectory
        return "postgres://acquirer_app@localhost:\(endpoint.port)/acquirer?host=\(host)"
    }

    static func childEnvironment(_ environment: [String: String]) -> [String: String] {
        let kept: Set<String> = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LEDGERD_EVENT_LOOP_EXECUTOR"]
        return environment.filter { name, _ in
            kept.contains(name) || (name.hasPrefix("LEDGERD_ACQUIRER_") && name != "LEDGERD_ACQUIRER_API_KEY_FILE")
        }
    }

    /// Starts `ledgerd acquirer serve` and reads its announced port.
    private static func launch(arguments: [String], port: Int, logger: Logger) throws -> (process: ChildProcessHandle, port: Int) {
        let output = try ChildPipe()
        let input = try ChildPipe()
        let process: ChildProcessHandle
        do {
            process = try ChildProcessHandle.launch(
                RunningExecutable.url.path,
                arguments + ["--port", String(port)],
                environment: childEnvironment(ProcessInfo.processInfo.environment),
                standardInput: .descriptor(input.readEnd),
                standardOutput: .descriptor(output.writeEnd),
                standardError: .inherit
            )
        } catch {
            for fd in [output.readEnd, output.writeEnd, input.readEnd, input.writeEnd] { close(fd) }
            throw error
        }
        // The child has its own copies; ours of its ends would keep its output open after it died.
        close(output.writeEnd)
        close(input.readEnd)
        defer { close(output.readEnd) }
        // Keep the write end of stdin open for the child's life (it exits when it closes).
        Keeper.shared.keep(input.writeEnd, for: process.processIdentifier)
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        // 60 s without a line: a replay after a long day takes minutes, and the service says where it is after each
        // chunk of the journal (issue 57: a restart after a day at the maximum gave up at a fixed 60 s, mid-replay).
        var deadline = Date().addingTimeInterval(Self.startSilence)
        while Date() < deadline {
            var ready = pollfd(fd: output.readEnd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 1_000)
            if polled == 0 || (polled == -1 && errno == EINTR) { continue }
            let count = chunk.withUnsafeMutableBytes { read(output.readEnd, $0.baseAddress, $0.count) }
            if count == -1 && errno == EINTR { continue }
            if count <= 0 {
                break  // the child closed its output: it died
            }
            buffer += chunk[0..<count]
            deadline = Date().addingTimeInterval(Self.startSilence)
            if let line = String(decoding: buffer, as: UTF8.self).split(separator: "\n")
                .first(where: { $0.hasPrefix("acquirer listening on port ") }),
                let announced = Int(line.dropFirst("acquirer listening on port ".count))
            {
                return (process, announced)
            }
        }
        if process.isRunning { process.terminate() }
        throw ConfigurationError("the acquirer service did not start: \(String(decoding: buffer, as: UTF8.self))")
    }

    /// Creates the `acquirer` database, migrates it as the superuser and lets `acquirer_app` log in.
    private static func prepareEmbedded(endpoint: EmbeddedPostgres.Endpoint, migrations: URL, fresh: Bool = false, logger: Logger) async throws {
        func socket(_ database: String) -> PostgresClient.Configuration {
            PostgresClient.Configuration(unixSocketPath: endpoint.socketPath, username: endpoint.superuser, password: nil, database: database)
        }
        try await withPostgresClient(configuration: socket("postgres"), logger: logger) { client in
            var exists = false
            for try await count in try await client.query("SELECT count(*) FROM pg_database WHERE datname = 'acquirer'", logger: logger)
                .decode(Int64.self)
            {
                exists = count > 0
            }
            if exists && fresh { try await client.query("DROP DATABASE acquirer WITH (FORCE)", logger: logger) }
            if !exists || fresh { try await client.query("CREATE DATABASE acquirer", logger: logger) }
        }
        let set = try Migrator.load(from: migrations)
        try await withPostgresClient(configuration: socket("acquirer"), logger: logger) { client in
            try await Migrator(migrations: set, schema: "acquirer", logger: logger).migrate(client: client)
            try await client.query("ALTER ROLE acquirer_app LOGIN", logger: logger)
        }
    }
}

/// Holds the stdin pipes of children for their whole life (dropping one would close it and stop the child).
private final class Keeper: @unchecked Sendable {
    static let shared = Keeper()
    private let lock = NSLock()
    private var pipes: [Int32: Int32] = [:]

    func keep(_ writeEnd: Int32, for pid: Int32) { lock.withLock { pipes[pid] = writeEnd } }
}

extension LedgerConfiguration {
    /// What the ledger's settings say about its acquirer account (merchant account, fee schedules, calendar, funding
    /// lag) and the test issuer (credit limit, hold lifetimes, dispute rate): what the child service and the tests'
    /// in-process model are configured from.
    public var supervisedAcquirerSettings: SupervisedAcquirerSettings {
        SupervisedAcquirerSettings(
            merchantAccount: settlement.merchantAccount,
            pricing: settlement.pricing,
            calendar: settlement.calendar,
            fundingLagBusinessDays: settlement.fundingLagBusinessDays,
            defaultCreditLimit: acquirerCreditLimit,
            holdLifetimes: holdLifetimes.sorted { $0.key.rawValue < $1.key.rawValue }.map { NetworkHoldLifetime(network: $0.key, seconds: $0.value) },
            disputeRatePerMille: acquirerDisputeRatePerMille
        )
    }
}

/// How `ledgerd serve` reaches its acquirer: the service at `LEDGERD_ACQUIRER_URL` with the key in
/// `LEDGERD_ACQUIRER_API_KEY_FILE`, or a supervised child with a freshly generated key.
public enum AcquirerConnection {
    public static func open(
        configuration: LedgerConfiguration,
        database: LedgerDatabase,
        clockOffsetMicroseconds: Int64?,
        metrics: LedgerMetrics,
        logger: Logger
    ) async throws -> (HTTPAcquirer, AcquirerSupervisor?) {
        func adapter(_ url: String, _ key: String) -> HTTPAcquirer {
            let acquirer = HTTPAcquirer(
                configuration: HTTPAcquirerConfiguration(
                    baseURL: url,
                    apiKey: key,
                    readTimeout: configuration.acquirerTimeout,
                    attempts: configuration.acquirerAttempts,
                    rememberedReferences: configuration.acquirerReferenceEntries
                ),
                logger: logger,
                metricsFactory: metrics.factory
            )
            metrics.register(cache: "acquirer_references") { acquirer.referenceCacheStatistics }
            return acquirer
        }
        if let url = configuration.acquirerURL, let keyFile = configuration.acquirerAPIKeyFile {
            let key = String(decoding: try SecretFile.read(keyFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !key.isEmpty else { throw ConfigurationError("\(keyFile) is empty") }
            let trimmed = url.hasSuffix("/") ? String(url.dropLast()) : url
            logger.info("acquirer service configured", metadata: ["url": "\(trimmed)"])
            return (adapter(trimmed, key), nil)
        }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let (supervisor, acquirer) = try await AcquirerSupervisor.start(
            configuration: configuration,
            database: database,
            apiKey: key,
            clockOffsetMicroseconds: clockOffsetMicroseconds,
            acquirer: { adapter($0, key) },
            logger: logger
        )
        return (acquirer, supervisor)
    }
}
