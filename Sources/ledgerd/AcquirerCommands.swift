import ArgumentParser
import Foundation
import LedgerAcquirerService
import LedgerApp
import LedgerCore
import Logging

/// `ledgerd acquirer …`: the acquirer model as its own service.
struct AcquirerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "acquirer",
        abstract: "The acquirer service (the deterministic acquirer model, durable in PostgreSQL, over HTTP).",
        subcommands: [Serve.self]
    )

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve the acquirer's wire API (see docs/acquirer-service.md).",
            discussion: """
                Secrets come from a file readable by this OS user only (--secrets-file, LEDGERD_ACQUIRER_SECRETS_FILE): \
                {"apiKey": "...", "databaseURL": "postgres://acquirer_app:...@host/acquirer", "migrationDatabaseURL": "..."}.
                """
        )
        @Option(help: "JSON file with apiKey, databaseURL and optionally migrationDatabaseURL, mode 0600 (LEDGERD_ACQUIRER_SECRETS_FILE).")
        var secretsFile: String?
        @Option(help: "JSON AcquirerModelConfiguration (default: the standard model).") var modelConfiguration: String?
        @Option(
            help:
                "JSON SupervisedAcquirerSettings: the supervising ledger's merchant account, fees, calendar and test issuer (instead of --model-configuration)."
        )
        var supervisedSettings: String?
        @Option(help: "Seed of the model (LEDGERD_ACQUIRER_SEED, default 1).") var seed: UInt64?
        @Option(
            help:
                "Chargebacks per mille of settled Visa/Mastercard captures, seeded (LEDGERD_ACQUIRER_DISPUTE_RATE; default: the model configuration's)."
        )
        var disputeRate: Int?
        @Option(help: "Bind address (LEDGERD_ACQUIRER_HOST, default 127.0.0.1).") var host: String?
        @Option(help: "Port; 0 = any free one (LEDGERD_ACQUIRER_PORT, default 12346).") var port: Int?
        @Option(help: "Directory of the acquirer's migrations (default: sql/acquirer).") var migrationsDir: String?
        @Option(help: "Log level (default info).") var logLevel: String = "info"
        @Option(help: "Seeded wire faults, JSON WireFaults (LEDGERD_ACQUIRER_WIRE_FAULTS; tests only).") var wireFaults: String?
        @Option(help: "Microseconds added to the wall clock (rehearsals; the supervising ledger sets it).") var clockOffsetMicroseconds: Int64?
        @Option(help: "Journal growth (commands) after which a snapshot of the model is stored, so a start replays only the tail; 0 = never.")
        var snapshotEvery: Int64 = 100_000
        @Option(help: "Most milliseconds one statement of the journal's pool may take before it fails (the supervising ledger passes its own).")
        var databaseDeadlineMilliseconds: Int64 = 32_000
        @Flag(help: "Print the port once serving (for a supervising ledger).") var announce = false
        @Flag(help: "Exit when standard input closes (the supervising ledger died).") var exitWithStdin = false

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            var logger = Logger(label: "ledgerd-acquirer")
            logger.logLevel = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
            guard let secretsPath = secretsFile ?? environment["LEDGERD_ACQUIRER_SECRETS_FILE"] else {
                throw ValidationError("--secrets-file (or LEDGERD_ACQUIRER_SECRETS_FILE) is required")
            }
            let model = try AcquirerServiceConfiguration.model(
                modelFile: modelConfiguration,
                supervisedSettingsFile: supervisedSettings,
                disputeRatePerMille: disputeRate ?? environment["LEDGERD_ACQUIRER_DISPUTE_RATE"].flatMap { Int($0) }
            )
            let faults =
                try (wireFaults ?? environment["LEDGERD_ACQUIRER_WIRE_FAULTS"]).map {
                    try LedgerJSON.decode(WireFaults.self, from: Data($0.utf8))
                } ?? .none
            let migrations: URL
            if let migrationsDir {
                migrations = URL(fileURLWithPath: migrationsDir)
            } else {
                migrations = try LedgerConfiguration.load().resolvedMigrationsDirectory().appendingPathComponent("acquirer")
            }
            let configuration = AcquirerServiceConfiguration(
                secrets: try AcquirerSecrets.read(from: secretsPath),
                host: host ?? environment["LEDGERD_ACQUIRER_HOST"] ?? "127.0.0.1",
                port: port ?? environment["LEDGERD_ACQUIRER_PORT"].flatMap { Int($0) } ?? 12346,
                seed: seed ?? environment["LEDGERD_ACQUIRER_SEED"].flatMap { UInt64($0) } ?? 1,
                model: model,
                faults: faults,
                clockOffsetMicroseconds: clockOffsetMicroseconds,
                migrationsDirectory: migrations,
                announce: announce,
                exitWithStandardInput: exitWithStdin,
                snapshotEvery: snapshotEvery,
                databaseDeadline: .milliseconds(max(databaseDeadlineMilliseconds, 1))
            )
            try await AcquirerServer.run(configuration, logger: logger)
        }
    }
}
