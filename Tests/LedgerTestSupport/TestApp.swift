import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerAcquirerService
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO

/// The application under test: `ledgerd`'s real router and services (pool, writer, sweepers) on a fresh
/// test database, driven through HummingbirdTesting's router client, with two back-office keys.
public enum TestApp {
    /// The operator key every harness app accepts (`Authorization: Bearer …`): reads and changes.
    public static let operatorKey = "test-operator-key"
    /// The auditor key every harness app accepts: reads only.
    public static let auditorKey = "test-auditor-key"

    /// Runs `body` with a client of a running application and its services.
    ///
    /// - Parameters:
    ///   - seed: seed the demo catalog (12 products, 3 shipping methods) before the first request.
    ///   - imagesDirectory: `LEDGERD_PRODUCT_IMAGES_DIR`; nil: the default.
    ///   - database: the database to run on (two apps on one database are two daemons); nil: a fresh one.
    ///   - acquirer: the acquirer to authorize against; nil: the deterministic model of the configuration.
    ///   - clock: the application's clock.
    ///   - extra: more `LEDGERD_*` configuration, over the harness's.
    ///   - logger: the application's logger; by default the quiet ``TestCluster/logger``.
    ///   - poolLogger: the PostgreSQL pool's background logger; by default the quiet ``TestCluster/logger``.
    ///   - checkpointKey: signs checkpoints; nil: none.
    ///   - webhookTransport: how webhook deliveries leave the app (by default AsyncHTTPClient behind the configured
    ///     destinations rule; the harness allows 127.0.0.1, where its receivers listen, with
    ///     `LEDGERD_WEBHOOK_ALLOWED_ADDRESSES`, which `environment` may override).
    ///   - live: serve on a real port (`client.port`) instead of the in-memory router, for streamed replies.
    ///   - readDatabase: a streaming replica of `database` for auditors' reads (`LEDGERD_READ_DATABASE_URL`); nil: none.
    ///   - tls: serve HTTPS with this certificate (with `live`; the harness's own client then cannot talk to it).
    ///   - ids: where the app's new ids come from; by default the daemon's (random, time-ordered).
    public static func withApp(
        seed: Bool = false,
        imagesDirectory: String? = nil,
        database: TestDatabase? = nil,
        readDatabase: TestDatabase? = nil,
        acquirer: (any Acquirer)? = nil,
        clock: @escaping @Sendable () -> Date = { Date() },
        environment extra: [String: String] = [:],
        logger: Logger = TestCluster.logger,
        poolLogger: Logger = TestCluster.logger,
        checkpointKey: CheckpointKey? = nil,
        webhookTransport: (any WebhookTransport)? = nil,
        live: Bool = false,
        tls: TLSCertificateStore? = nil,
        ids: any IDSource = RandomIDs(),
        _ body: @escaping @Sendable (any TestClientProtocol, ServiceContainer) async throws -> Void
    ) async throws {
        let db: TestDatabase
        if let database { db = database } else { db = try await TestDatabase.fresh() }
        var environment = [
            "LEDGERD_OPERATOR_KEYS": operatorKey, "LEDGERD_AUDITOR_KEYS": "other-auditor, \(auditorKey)",
            "LEDGERD_SEED_DEMO_CATALOG": seed ? "true" : "false",
            "LEDGERD_WEBHOOK_SECRETS_KEY": webhookSecretsKey, "LEDGERD_FEED_POLL_MS": "200",
            // The test receivers listen on the loopback, which the webhook rule refuses unless the operator allows it.
            "LEDGERD_WEBHOOK_ALLOWED_ADDRESSES": "127.0.0.1",
            // Tests sweep expired holds themselves (`services.holds.expireDue()`, on their simulated clocks); the
            // daemon's own sweep every 30 s raced them when a loaded machine made a test last longer than that.
            "LEDGERD_EXPIRY_INTERVAL_SECONDS": "86400",
            // Likewise the dispute poller: tests poll (`services.disputePoller.pollOnce()`) or turn it on.
            "LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS": "0",
        ]
        environment["LEDGERD_PRODUCT_IMAGES_DIR"] = imagesDirectory
        environment.merge(extra) { $1 }
        let configuration = try LedgerConfiguration.load(environment: environment)
        // The daemon's statement deadline, as `ledgerd serve` sets it.
        let client = DatabaseClient(
            configuration: TestCluster.configuration(endpoint: db.endpoint, database: db.name, user: "ledger_app"),
            backgroundLogger: poolLogger,
            statementDeadline: configuration.databaseDeadline
        )
        let readClient = readDatabase.map {
            DatabaseClient(
                configuration: TestCluster.configuration(endpoint: $0.endpoint, database: $0.name, user: "ledger_app"),
                backgroundLogger: poolLogger,
                statementDeadline: configuration.databaseDeadline
            )
        }
        let services = try ServiceContainer(
            client: client,
            readClient: readClient,
            configuration: configuration,
            metrics: LedgerMetrics(),
            keyring: try APIKeys.keyring(for: configuration, logger: logger),
            acquirer: acquirer
                ?? AcquirerModel(
                    seed: configuration.acquirerSeed,
                    configuration: AcquirerModelConfiguration(supervised: configuration.supervisedAcquirerSettings),
                    clock: clock
                ),
            clock: clock,
            checkpointKey: checkpointKey,
            webhookTransport: webhookTransport,
            ids: ids,
            logger: logger
        )
        // The application runs the pool first and serves only once it runs (see `buildApplication`).
        let app = try buildApplication(configuration: configuration, services: services, tls: tls, logger: logger)
        try await app.test(live ? .live : .router) { testClient in try await body(testClient, services) }
    }

    /// The key that seals webhook secrets in every harness app (base64 of 32 bytes).
    public static let webhookSecretsKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

    /// `Authorization: Bearer <key>`.
    public static func bearer(_ key: String) -> HTTPFields { [.authorization: "Bearer \(key)"] }

    /// An instant written in RFC 3339 / ISO 8601 (`2026-06-19T10:00:00Z`), for simulated clocks.
    public static func instant(_ text: String) -> Date {
        guard let date = ISO8601DateFormatter().date(from: text) else { preconditionFailure("not an instant: \(text)") }
        return date
    }
}

extension Data {
    /// The readable bytes of a response body.
    public init(buffer: ByteBuffer) { self.init(buffer.readableBytesView) }
}

extension ServiceContainer {
    /// How many events of `type` the log holds.
    public func eventCount(type: String) async throws -> Int {
        try await store.read(from: 1, limit: 100_000).filter { $0.type == type }.count
    }

    /// How many shipping contacts the ledger keeps (outside the log, erasable).
    public func shippingContactCount() async throws -> Int64 {
        for try await count in try await client.query("SELECT count(*) FROM ledger.shipping_contacts").decode(Int64.self) {
            return count
        }
        return -1
    }
}
