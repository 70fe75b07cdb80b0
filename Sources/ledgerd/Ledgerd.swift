import ArgumentParser
import Configuration
import Foundation
import LedgerApp
import LedgerBench
import LedgerPostgres
import LedgerServices
import Logging
import NIOCore
import NIOPosix

@main
struct Ledgerd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledgerd",
        abstract: "OrderLedger: an event-sourced order ledger on PostgreSQL.",
        discussion: "Every option can also be set by its environment variable (see docs/configuration.md); flags win.",
        subcommands: [
            Serve.self, Migrate.self, Catalog.self, Order.self, Disputes.self, Settle.self, Reconcile.self, Audit.self, Privacy.self,
            Rebuild.self, Bench.self, ApplePay.self, AcquirerCommand.self, WitnessCommand.self, Tail.self, Journal.self, Keys.self, Bank.self,
            Simulate.self,
        ],
        defaultSubcommand: Serve.self
    )

    /// Swift Concurrency's jobs run on the event loops that already do the process's I/O (NIO's singleton group, which
    /// the HTTP server, the PostgreSQL connections and the acquirer client use), not on a pool of their own: a
    /// request no longer hops between the two pools at every await on a socket. In the daemon's profile at 200 requests
    /// a second, 14 % of the samples were the kernel switching threads. `LEDGERD_EVENT_LOOP_EXECUTOR=0` keeps
    /// Concurrency's own pool (read here, before any task starts, so not from the configuration files).
    static func main() async {
        if ProcessInfo.processInfo.environment["LEDGERD_EVENT_LOOP_EXECUTOR"] != "0" {
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        await main(nil)
    }
}

/// Options every subcommand takes; each maps to a configuration key (and so to LEDGERD_…).
struct CommonOptions: ParsableArguments {
    @Option(help: "PostgreSQL URL of the app role (LEDGERD_DATABASE_URL). Unset: embedded cluster.")
    var databaseURL: String?
    @Option(help: "Owner's URL for migrations (LEDGERD_MIGRATION_DATABASE_URL).")
    var migrationDatabaseURL: String?
    @Option(help: "Embedded cluster and state directory (LEDGERD_DATA_DIR, default ./.ledgerd).")
    var dataDir: String?
    @Option(help: "Log level (LEDGERD_LOG_LEVEL, default info).")
    var logLevel: String?

    func configuration(_ extra: [AbsoluteConfigKey: ConfigValue] = [:]) throws -> LedgerConfiguration {
        var flags = extra
        if let databaseURL { flags["ledgerd.database.url"] = ConfigValue(.string(databaseURL), isSecret: true) }
        if let migrationDatabaseURL { flags["ledgerd.migration.database.url"] = ConfigValue(.string(migrationDatabaseURL), isSecret: true) }
        if let dataDir { flags["ledgerd.data.dir"] = .init(.string(dataDir), isSecret: false) }
        if let logLevel { flags["ledgerd.log.level"] = .init(.string(logLevel), isSecret: false) }
        return try LedgerConfiguration.load(flags: flags)
    }
}

/// The options of a command that goes through the running daemon (`order`, `settle`, `tail`, `disputes`, …): no
/// database options, since it never opens the database. The local configuration (LEDGERD_* and the data directory)
/// gives only how to reach the daemon (host, port, TLS) and the key to send (the embedded daemon's api-keys.json).
struct ClientOptions: ParsableArguments {
    @Option(help: "The embedded daemon's data directory, where it keeps the API keys it generated (LEDGERD_DATA_DIR, default ./.ledgerd).")
    var dataDir: String?

    func configuration() throws -> LedgerConfiguration {
        var flags: [AbsoluteConfigKey: ConfigValue] = [:]
        if let dataDir { flags["ledgerd.data.dir"] = .init(.string(dataDir), isSecret: false) }
        return try LedgerConfiguration.load(flags: flags)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the daemon (HTTP on port 12345 by default).")
    @OptionGroup var common: CommonOptions
    @Option(help: "HTTP bind address (LEDGERD_HOST; default 127.0.0.1, or 0.0.0.0 with LEDGERD_TLS_CERTIFICATE).") var host: String?
    @Option(help: "HTTP port (LEDGERD_PORT, default 12345).") var port: Int?

    func run() async throws {
        var extra: [AbsoluteConfigKey: ConfigValue] = [:]
        if let host { extra["ledgerd.host"] = .init(.string(host), isSecret: false) }
        if let port { extra["ledgerd.port"] = .init(.int(port), isSecret: false) }
        let configuration = try common.configuration(extra)
        try await Daemon.serve(configuration: configuration, logger: makeLogger(configuration))
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations from sql/ and exit.")
    @OptionGroup var common: CommonOptions

    func run() async throws {
        let configuration = try common.configuration()
        let logger = makeLogger(configuration)
        // prepare() migrates; this command only reports.
        let database = try await LedgerDatabase.prepare(configuration, logger: logger)
        database.stop()
        print("migrations up to date (\(database.location))")
    }
}

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Auditor tools.",
        subcommands: [Verify.self, History.self, Export.self, AsOfState.self, Checkpoint.self, Keygen.self, Prove.self, VerifyProof.self]
    )

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Recompute the hash chain in Swift and report the first position that does not verify.",
            discussion: """
                With --checkpoint FILE --public-key KEY: check the checkpoint's signature with the auditor's key, then \
                prove that the log still contains the signed prefix unaltered (catches edits, deletions, a truncated tail \
                and rewritten hashes, even by a database superuser).
                """
        )
        @OptionGroup var common: CommonOptions
        @Option(help: "First position to verify.") var from: Int64 = 1
        @Option(help: "Last position to verify (default: the last stored event; events beyond the head are tampering).") var to: Int64?
        @Flag(help: "Also run the database's own verifier (ledger.verify_chain / verify_prefix) and compare.") var sql = false
        @Option(help: "Verify this many parts of the range at once, each on its own connection (default: the cores, at most 4).")
        var parallel = min(4, ProcessInfo.processInfo.activeProcessorCount)
        @Option(help: "A signed checkpoint file (from POST /audit/checkpoints or <data dir>/checkpoints/).") var checkpoint: String?
        @Option(help: "The Ed25519 public key the checkpoint must be signed with (PEM, raw, hex or base64).") var publicKey: String?
        @Flag(help: "Also check every closed settlement batch's items (ledger.settlement_items) against its closed event.")
        var settlements = false
        @Flag(help: "Also rebuild every inventory snapshot (ledger.inventory_snapshots) from the log and compare its bytes.")
        var snapshots = false

        func validate() throws {
            if (checkpoint == nil) != (publicKey == nil) { throw ValidationError("--checkpoint and --public-key go together") }
        }

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            if let checkpoint, let publicKey {
                let (sql, parallel) = (sql, parallel)
                let outcome = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                    try await CheckpointVerification.run(
                        client: client,
                        checkpointFile: checkpoint,
                        publicKeyFile: publicKey,
                        sql: sql,
                        parallelism: parallel,
                        logger: logger
                    )
                }
                for line in outcome.lines { print(line) }
                if !outcome.ok { throw ExitCode(1) }
                return
            }
            let (from, to, sql, parallel, settlements, snapshots) = (from, to, sql, parallel, settlements, snapshots)
            let reports = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                let verifier = ChainVerifier(client: client, logger: logger)
                let swift = try await verifier.verify(from: from, to: to, parallelism: parallel)
                return (
                    swift, sql ? try await verifier.verifyInDatabase(from: from, to: to) : nil,
                    settlements ? try await SettlementService.auditItems(client: client, logger: logger) : nil,
                    snapshots ? try await InventorySnapshots(client: client, every: 1, logger: logger).verify() : nil
                )
            }
            if let snapshotReport = reports.3 { print("snapshots:      \(snapshotReport)") }
            print("swift verifier: \(reports.0)")
            if let database = reports.1 { print("sql verifier:   \(database)") }
            if let items = reports.2 {
                print(
                    "settlements:    \(items.batches) closed batches, \(items.items) items: "
                        + (items.ok ? "every batch's items agree with its closed event" : "\(items.problems.count) DISAGREE")
                )
                for problem in items.problems { print("  " + problem) }
            }
            if !reports.0.ok || reports.1?.ok == false || reports.2?.ok == false || reports.3?.ok == false { throw ExitCode(1) }
        }
    }
}

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks.",
        subcommands: [
            Append.self, Expiry.self, AuditReads.self, AsOfBench.self, SettleBench.self, SDRBench.self, DayLoadCommand.self, BankBench.self,
        ]
    )

    struct DayLoadCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "day-load",
            abstract: "An open-loop mix of a business day at a fixed offered rate against a running daemon (bench/day.sh).",
            discussion: "Latency counts from each request's due time, so a stall shows in p99. One line per window."
        )
        @Option(help: "The daemon's base URL.") var url = "http://127.0.0.1:8080"
        @Option(help: "Operations offered per second.") var rate = 200.0
        @Option(help: "Seconds to run.") var seconds = 60
        @Option(help: "Seconds per reported window.") var reportSeconds = 60
        @Option(help: "Products in the catalogue (\"Item 1\" …, 10.00 each).") var products = 240
        @Option(help: "Hot products (\"Item 1\" … take half the payments).") var hot = 3
        @Option(help: "Connections to the daemon.") var connections = 64
        @Option(help: "Name of the phase, printed on each line.") var phase = "day"

        func run() async throws {
            guard let key = ProcessInfo.processInfo.environment["LEDGERD_API_KEY"] else {
                throw ValidationError("LEDGERD_API_KEY must hold an operator key")
            }
            var options = DayLoad.Options()
            options.url = url
            options.apiKey = key
            options.rate = rate
            options.seconds = seconds
            options.reportSeconds = reportSeconds
            options.products = products
            options.hotProducts = hot
            options.connections = connections
            options.phase = phase
            try await DayLoad(options: options).run()
        }
    }

    struct AuditReads: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "audit",
            abstract: "Order history and as-of latency, and chain verification throughput, on a ledger of N events.",
            discussion: """
                Builds the ledger once in its own durable embedded cluster (default ./.ledgerd-bench-audit; later runs reuse \
                it and only add what is missing), then measures in process. bench/audit.sh serves the same data directory \
                and measures the history endpoint over HTTP with wrk. Never run it on a real ledger's data directory.
                """
        )
        @Option(help: "Events in the ledger.") var events = 10_000_000
        @Option(help: "Random orders to time.") var samples = 2_000
        @Option(help: "Events per ledger.append_events call while generating.") var batch = 2_000
        @Flag(help: "Skip the full-chain verification timings.") var skipVerify = false
        @Option(help: "Connections for the parallel Swift verification run (a sequential run is always timed).") var verifyParallel = 2
        @Option(help: "Data directory of the benchmark ledger.") var dataDir = "./.ledgerd-bench-audit"
        @Option(help: "Log level.") var logLevel = "warning"

        func run() async throws {
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "LEDGERD_DATABASE_URL")
            environment.removeValue(forKey: "LEDGERD_MIGRATION_DATABASE_URL")
            environment["LEDGERD_DATA_DIR"] = dataDir
            environment["LEDGERD_LOG_LEVEL"] = logLevel
            let configuration = try LedgerConfiguration.load(environment: environment)
            var options = AuditBenchmark.Options()
            options.events = events
            options.samples = samples
            options.batchEvents = batch
            options.skipVerify = skipVerify
            options.verifyParallelism = verifyParallel
            print("bench audit: \(events) events, \(samples) samples, data dir \(configuration.dataDirectoryURL.path)")
            try await AuditBenchmark(options: options, configuration: configuration, logger: makeLogger(configuration))
                .run(output: { print($0) })
        }
    }

    struct AsOfBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "asof",
            abstract: "Inventory and product as-of latency from the inventory snapshots, on a ledger of N events.",
            discussion: """
                Builds the ledger once in its own durable embedded cluster (default ./.ledgerd-bench-asof; later runs reuse \
                it and only add what is missing), writes the snapshots the daemon would, then measures in process and \
                compares some answers with the fold from position 1. Never run it on a real ledger's data directory.
                """
        )
        @Option(help: "Events in the ledger.") var events = 10_000_000
        @Option(help: "Events between snapshots (LEDGERD_SNAPSHOT_EVERY_EVENTS).") var every: Int64 = 10_000
        @Option(help: "Random points to time.") var samples = 100
        @Option(help: "Points whose answer is compared with the fold from position 1.") var check = 2
        @Option(help: "Events per ledger.append_events call while generating.") var batch = 2_000
        @Option(help: "Data directory of the benchmark ledger.") var dataDir = "./.ledgerd-bench-asof"
        @Option(help: "Log level.") var logLevel = "warning"

        func run() async throws {
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "LEDGERD_DATABASE_URL")
            environment.removeValue(forKey: "LEDGERD_MIGRATION_DATABASE_URL")
            environment["LEDGERD_DATA_DIR"] = dataDir
            environment["LEDGERD_LOG_LEVEL"] = logLevel
            let configuration = try LedgerConfiguration.load(environment: environment)
            var options = AsOfBenchmark.Options()
            options.events = events
            options.every = every
            options.samples = samples
            options.check = check
            options.batchEvents = batch
            print("bench asof: \(events) events, snapshots every \(every), \(samples) points, data dir \(configuration.dataDirectoryURL.path)")
            try await AsOfBenchmark(options: options, configuration: configuration, logger: makeLogger(configuration))
                .run(output: { print($0) })
        }
    }

    struct SettleBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "settle",
            abstract: "Time settling and reconciling one business day of N captures with the acquirer service, and both processes' memory.",
            discussion: "Runs on its own durable embedded cluster (default ./.ledgerd-bench); never on a real ledger."
        )
        @Option(help: "Captures to settle (every 100th also refunded in part).") var captures = 1_000_000
        @OptionGroup var cluster: BenchCluster

        func run() async throws {
            let (configuration, directory, migrations) = try cluster.prepare()
            print("bench settle: \(captures) captures, \(ProcessInfo.processInfo.activeProcessorCount) cores")
            print(
                try await SettlementBenchmark(
                    captures: captures,
                    dataDirectory: directory,
                    acquirerMigrations: try configuration.resolvedMigrationsDirectory().appendingPathComponent("acquirer"),
                    logLevel: cluster.logLevel,
                    logger: makeLogger(configuration)
                )
                .run(migrations: migrations)
            )
        }
    }

    struct SDRBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sdr",
            abstract: "Time importing and reconciling an Adyen Settlement Details Report of one batch (N captures), and the peak memory.",
            discussion: "Runs on its own durable embedded cluster (default ./.ledgerd-bench); never on a real ledger."
        )
        @Option(help: "Captures in the batch (every 100th also refunded in part); the report has about 1.01 N + 1 lines.")
        var captures = 990_000
        @OptionGroup var cluster: BenchCluster

        func run() async throws {
            let (configuration, directory, migrations) = try cluster.prepare()
            print("bench sdr: \(captures) captures, \(ProcessInfo.processInfo.activeProcessorCount) cores")
            print(
                try await ReportImportBenchmark(captures: captures, dataDirectory: directory, logger: makeLogger(configuration))
                    .run(migrations: migrations)
            )
        }
    }

    struct BankBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bank",
            abstract: "Time importing and matching a bank statement of N credits (MT940) paying announced payouts: wall and CPU time.",
            discussion: "Runs on its own durable embedded cluster (default ./.ledgerd-bench); never on a real ledger."
        )
        @Option(help: "Credits in the statement (payouts announced for all but every 1000th).") var entries = 100_000
        @OptionGroup var cluster: BenchCluster

        func run() async throws {
            let (configuration, directory, migrations) = try cluster.prepare()
            print("bench bank: \(entries) entries, \(ProcessInfo.processInfo.activeProcessorCount) cores")
            print(
                try await BankImportBenchmark(entries: entries, dataDirectory: directory, logger: makeLogger(configuration))
                    .run(migrations: migrations)
            )
        }
    }

    struct Expiry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Time the sweeper expiring N holds that all pass their expiry at once.",
            discussion: "Runs on its own durable embedded cluster (default ./.ledgerd-bench); never on a real ledger."
        )
        @Option(help: "Holds to create and expire.") var holds = 100_000
        @Option(help: "Holds per sweeper append.") var sweepBatch = 500
        @OptionGroup var cluster: BenchCluster

        func run() async throws {
            let (configuration, directory, migrations) = try cluster.prepare()
            print("bench expiry: \(holds) holds, sweep batch \(sweepBatch), \(ProcessInfo.processInfo.activeProcessorCount) cores")
            print(
                try await ExpiryBenchmark(holds: holds, sweepBatch: sweepBatch, dataDirectory: directory, logger: makeLogger(configuration))
                    .run(migrations: migrations)
            )
        }
    }

    struct Append: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Append throughput through the group-commit writer vs. the raw multi-row INSERT ceiling.",
            discussion: "Runs on its own durable embedded cluster (default ./.ledgerd-bench); never on a real ledger."
        )
        @Option(help: "Concurrent producers.") var producers = 64
        @Option(help: "Seconds per phase.") var seconds = 10
        @Option(help: "Distinct streams the events spread over.") var streams = 1_000
        @Option(help: "Rows per INSERT in the raw phase.") var rawRowsPerInsert = 100
        @Option(help: "Connection pool size.") var poolSize = 20
        @Flag(help: "Also run the ledger phase with the transparency log's tree kept and checkpoints signed (tree on vs off).")
        var tree = false
        @Option(help: "With --tree: milliseconds between two extensions of the tree and checkpoints.") var treeIntervalMs = 250
        @Option(help: "Data directory of the benchmark cluster.") var dataDir = "./.ledgerd-bench"
        @Option(help: "Log level.") var logLevel = "warning"

        func run() async throws {
            var options = AppendBenchmark.Options()
            options.producers = producers
            options.seconds = seconds
            options.streams = streams
            options.rawRowsPerInsert = rawRowsPerInsert
            options.poolSize = poolSize
            options.tree = tree
            options.treeInterval = .milliseconds(treeIntervalMs)
            let configuration = try LedgerConfiguration.load(flags: ["ledgerd.log.level": .init(.string(logLevel), isSecret: false)])
            let logger = makeLogger(configuration)
            let directory = URL(fileURLWithPath: dataDir, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
                .standardizedFileURL
            let migrations = try Migrator.load(from: configuration.resolvedMigrationsDirectory())
            print(
                "bench append: \(producers) producers, \(seconds) s per phase, \(streams) streams, raw \(rawRowsPerInsert) rows/INSERT, pool \(poolSize), \(ProcessInfo.processInfo.activeProcessorCount) cores"
            )
            let report = try await AppendBenchmark(options: options, dataDirectory: directory, logger: logger).run(migrations: migrations)
            print(report.text + report.treeText)
        }
    }
}

struct Rebuild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay the whole log into the read models (inventory, shipping methods, orders) and swap them in."
    )
    @OptionGroup var common: CommonOptions

    func run() async throws {
        let configuration = try common.configuration()
        let logger = makeLogger(configuration)
        let count = try await Daemon.withLedgerClient(configuration: configuration, logger: logger, asOwner: true) { client in
            try await ProjectionRebuilder.rebuild(client: client, logger: logger)
        }
        print("read models rebuilt: \(count) rows")
    }
}

struct Catalog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The product catalog.", subcommands: [Import.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a JSON or CSV catalog: new products and shipping methods are listed, price and stock changes become events."
        )
        @OptionGroup var common: CommonOptions
        @Argument(help: "The catalog file (.json or .csv).") var file: String
        @Option(help: "json or csv (default: from the file's extension).") var format: String?

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            let text = try String(contentsOfFile: file, encoding: .utf8)
            let catalog = try CatalogImport.parse(text, format: format ?? URL(fileURLWithPath: file).pathExtension)
            let report = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                try await catalog.run(client: client, now: Date(), logger: logger)
            }
            print(report)
        }
    }
}

/// Where a benchmark runs: its own durable embedded cluster in `--data-dir`, never a real ledger.
struct BenchCluster: ParsableArguments {
    @Option(help: "Data directory of the benchmark cluster.") var dataDir = "./.ledgerd-bench"
    @Option(help: "Log level.") var logLevel = "warning"

    /// The configuration (log level only), the cluster's directory and the migrations to apply there.
    func prepare() throws -> (LedgerConfiguration, URL, [Migration]) {
        let configuration = try LedgerConfiguration.load(flags: ["ledgerd.log.level": .init(.string(logLevel), isSecret: false)])
        let directory = URL(fileURLWithPath: dataDir, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL
        return (configuration, directory, try Migrator.load(from: configuration.resolvedMigrationsDirectory()))
    }
}
