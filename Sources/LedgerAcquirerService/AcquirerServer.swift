import Crypto
import Foundation
import Hummingbird
import LedgerAcquirer
import LedgerAcquirerClient
import LedgerCore
import LedgerHTTPServer
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO
import ServiceLifecycle

/// What the acquirer service's secrets file holds (mode 0600, never in an environment or a command line).
public struct AcquirerSecrets: Hashable, Sendable, Codable {
    /// The API key clients must send as `X-API-Key`.
    public var apiKey: String
    /// The PostgreSQL URL of the service's own role and database.
    public var databaseURL: String
    /// The URL migrations run with (the schema owner); nil: `databaseURL`.
    public var migrationDatabaseURL: String?

    public init(apiKey: String, databaseURL: String, migrationDatabaseURL: String? = nil) {
        self.apiKey = apiKey
        self.databaseURL = databaseURL
        self.migrationDatabaseURL = migrationDatabaseURL
    }

    /// Reads the file, refusing one that other OS users could read.
    public static func read(from path: String) throws -> AcquirerSecrets {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        if let mode = attributes[.posixPermissions] as? NSNumber, mode.intValue & 0o077 != 0 {
            throw JournalError("\(path) must not be readable by group or others (chmod 600)")
        }
        return try LedgerJSON.decode(AcquirerSecrets.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Writes the file as every secret file is written (``SecretFile/write(_:to:overwrite:)``): mode 0600 from its first
    /// byte whatever the umask, then moved into place. (Foundation's `createFile` wrote a temporary file with the umask's
    /// mode and changed the mode after the rename: security review 4.)
    public func write(to path: String) throws {
        try SecretFile.write(try LedgerJSON.encode(self), to: URL(fileURLWithPath: path), overwrite: true)
    }
}

/// Everything `ledgerd acquirer serve` is told (see docs/acquirer-service.md).
public struct AcquirerServiceConfiguration: Sendable {
    public var secrets: AcquirerSecrets
    public var host: String
    /// 0: any free port (announced on standard output).
    public var port: Int
    public var seed: UInt64
    public var model: AcquirerModelConfiguration
    public var faults: WireFaults
    /// Added to the wall clock (rehearsals: the supervising ledger passes its own `LEDGERD_CLOCK_START` offset).
    public var clockOffsetMicroseconds: Int64?
    /// Directory of the acquirer's migrations (sql/acquirer).
    public var migrationsDirectory: URL
    /// Print `acquirer listening on port N` on standard output once serving (the supervising ledger reads it), and
    /// before it, while the journal is replayed, `acquirer replaying its journal: after SEQ` after each chunk of commands
    /// and each page of a settlement.
    public var announce: Bool
    /// Exit when standard input reaches its end (the supervising ledger died: no orphan keeps serving).
    public var exitWithStandardInput: Bool
    /// Journal growth (commands) after which a snapshot of the model is stored (0: never); see
    /// ``DurableAcquirerModel/open(client:seed:configuration:clock:logger:snapshotEvery:useSnapshots:residentPayments:)``.
    public var snapshotEvery: Int64
    /// Closed payments kept in memory before they are stored and taken out (issue 57); see
    /// ``DurableAcquirerModel/defaultResidentPayments``.
    public var residentPayments: Int
    /// Most time one statement of the journal's pool may take before it fails (the model then rebuilds from the
    /// journal); the supervising ledger passes its own (`statement_timeout` + 2 s). A statement sent as its connection
    /// died is otherwise never answered (PostgresNIO), and the model, which journals one batch at a time, would wait
    /// for it forever: the failover drill saw the acquirer stop answering after a PostgreSQL SIGKILL.
    public var databaseDeadline: Duration

    public init(
        secrets: AcquirerSecrets,
        host: String = "127.0.0.1",
        port: Int = 12346,
        seed: UInt64 = 1,
        model: AcquirerModelConfiguration = AcquirerModelConfiguration(),
        faults: WireFaults = .none,
        clockOffsetMicroseconds: Int64? = nil,
        migrationsDirectory: URL,
        announce: Bool = false,
        exitWithStandardInput: Bool = false,
        snapshotEvery: Int64 = 100_000,
        residentPayments: Int = DurableAcquirerModel.defaultResidentPayments,
        databaseDeadline: Duration = .seconds(32)
    ) {
        self.secrets = secrets
        self.host = host
        self.port = port
        self.seed = seed
        self.model = model
        self.faults = faults
        self.clockOffsetMicroseconds = clockOffsetMicroseconds
        self.migrationsDirectory = migrationsDirectory
        self.announce = announce
        self.exitWithStandardInput = exitWithStandardInput
        self.snapshotEvery = snapshotEvery
        self.residentPayments = residentPayments
        self.databaseDeadline = databaseDeadline
    }
}

/// `ledgerd acquirer serve`: migrates the acquirer's schema, loads its newest snapshot and replays the
/// journal after it, serves the wire API
/// until SIGINT/SIGTERM.
public enum AcquirerServer {
    public static func run(_ configuration: AcquirerServiceConfiguration, logger: Logger) async throws {
        if configuration.exitWithStandardInput {
            Thread.detachNewThread {
                _ = FileHandle.standardInput.readDataToEndOfFile()
                exit(0)  // every answer given was committed first: nothing is lost by stopping here
            }
        }
        let migrations = try Migrator.load(from: configuration.migrationsDirectory)
        let owner = try DatabaseURL(configuration.secrets.migrationDatabaseURL ?? configuration.secrets.databaseURL)
        try await withPostgresClient(hosts: owner.hosts, logger: logger) { client in
            let report = try await Migrator(migrations: migrations, schema: "acquirer", logger: logger).migrate(client: client)
            if !report.applied.isEmpty { logger.info("acquirer migrations applied", metadata: ["applied": "\(report.applied)"]) }
        }
        let database = try DatabaseURL(configuration.secrets.databaseURL).hosts.updating { $0.options.maximumConnections = 8 }
        // Bounded as the ledger's pool is (a statement on a connection that died fails at its deadline); with several
        // hosts (a failover pair) also watched, so that it follows the primary as the ledger's does. One host is not
        // watched: the watch would make the service answer "unavailable" for up to a probe after its database is back,
        // while the ledger, whose own watch saw it first, already calls (DatabaseOutageTests).
        let client = DatabaseClient(
            hosts: database,
            backgroundLogger: logger,
            watch: database.candidates.count > 1 ? .init() : nil,
            statementDeadline: configuration.databaseDeadline
        )
        var clock: @Sendable () -> Date = { Date() }
        if let micros = configuration.clockOffsetMicroseconds {
            let offset = Double(micros) / 1_000_000
            clock = { Date().addingTimeInterval(offset) }
            logger.warning("the acquirer's clock is offset (rehearsal)", metadata: ["seconds": "\(offset)"])
        }
        let clientTask = Task { await client.run() }
        await client.running()
        defer { clientTask.cancel() }
        let model = try await DurableAcquirerModel.open(
            client: client,
            seed: configuration.seed,
            configuration: configuration.model,
            clock: clock,
            logger: logger,
            snapshotEvery: configuration.snapshotEvery,
            residentPayments: configuration.residentPayments,
            // Progress for the supervising ledger, whose wait for the announcement counts from the last line it read.
            replayed: { [announce = configuration.announce] seq in
                if announce { FileHandle.standardOutput.write(Data("acquirer replaying its journal: after \(seq)\n".utf8)) }
            }
        )
        if !configuration.faults.isOff {
            logger.warning("wire faults are armed on the acquirer service", metadata: ["faults": "\(configuration.faults)"])
        }
        // Plain HTTP carries the X-API-Key in clear (review 3, N7): the service listens on the loopback only.
        guard Self.isLoopback(configuration.host) else {
            throw JournalError(
                "the acquirer service speaks plain HTTP and binds a loopback address only (127.0.0.1, ::1), not \(configuration.host): "
                    + "run it on the ledger's host, or reach it through a TLS tunnel or proxy"
            )
        }
        let announce = configuration.announce
        let app = application(
            model: model,
            client: client,
            apiKey: configuration.secrets.apiKey,
            faults: configuration.faults,
            host: configuration.host,
            port: configuration.port,
            onServerRunning: { port in
                if announce { FileHandle.standardOutput.write(Data("acquirer listening on port \(port)\n".utf8)) }
            },
            logger: logger
        )
        try await app.runService()
    }

    /// Whether `host` is a loopback address (or `localhost`), the only kind the plain-HTTP service binds.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.split(separator: ".").first == "127" && host.split(separator: ".").count == 4
    }

    /// The service's router: every route of its wire API (`Sources/LedgerAcquirerAPI/openapi.yaml` describes them; a
    /// test compares the two).
    public static func router(
        model: DurableAcquirerModel,
        client: DatabaseClient,
        apiKey: String,
        faults: WireFaults,
        injected: InjectedFaults = InjectedFaults(),
        logger: Logger
    ) -> Router<AcquirerRequestContext> {
        let router = Router(context: AcquirerRequestContext.self)
        AcquirerRoutes(
            model: model,
            journal: AcquirerJournal(client: client, logger: logger),
            apiKeyDigest: Data(SHA256.hash(data: Data(apiKey.utf8))),
            faults: FaultDecider(faults),
            injected: injected
        ).register(on: router)
        return router
    }

    /// The service's HTTP application on an opened model (the daemon's `run` and the tests use it);
    /// `injected` counts the wire faults it injects. Its server has the ledger's bounds (``HTTPConnectionPolicy``:
    /// idle, head and body deadlines, connection limits in all and per client), which it lacked (review 3, N7).
    public static func application(
        model: DurableAcquirerModel,
        client: DatabaseClient,
        apiKey: String,
        faults: WireFaults,
        injected: InjectedFaults = InjectedFaults(),
        host: String = "127.0.0.1",
        port: Int = 0,
        policy: HTTPConnectionPolicy = HTTPConnectionPolicy(),
        onServerRunning: @escaping @Sendable (Int) -> Void = { _ in },
        logger: Logger
    ) -> some ApplicationProtocol {
        Application(
            router: MethodCheckedRouter(
                router(model: model, client: client, apiKey: apiKey, faults: faults, injected: injected, logger: logger),
                refusal: AcquirerRoutes.methodNotAllowed
            ),
            server: .http1(configuration: policy.http1Configuration(logger: logger)),
            configuration: .init(address: .hostname(host, port: port), serverName: "ledgerd-acquirer"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("acquirer serving", metadata: ["port": "\(port)"])
                onServerRunning(port)
            },
            logger: logger
        )
    }
}
