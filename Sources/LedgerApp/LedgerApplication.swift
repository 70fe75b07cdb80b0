import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerEngine
import LedgerHTTP
import LedgerHTTPServer
import LedgerPostgres
import LedgerServices
import Logging
import Metrics
import PostgresNIO
import Prometheus
import ServiceLifecycle
import Synchronization

/// The metrics of one daemon: a Prometheus registry and the swift-metrics factory writing to it.
/// Injected (not bootstrapped globally) so that every application and every test has its own.
public struct LedgerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Batch sizes are event counts, not seconds.
        factory.defaultValueHistogramBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
        self.factory = factory
    }

    /// The Prometheus text exposition of everything recorded so far, each metric with its `# HELP`, then the process
    /// metrics and whether the database is up.
    public func exposition(databaseUp: Bool = true) -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        var text = MetricsHelp.withHelp(String(decoding: buffer, as: UTF8.self))
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        return text + MetricsHelp.caches(caches.entries.withLock { $0 }.map { ($0.name, $0.statistics()) })
            + MetricsHelp.processAndDatabase(databaseUp: databaseUp)
    }

    /// The bounded in-memory structures, read at each scrape: `ledger_cache_entries`, `…_limit`, `…_hits_total`,
    /// `…_misses_total`, `…_evictions_total`, labelled `cache="<name>"`.
    private let caches = CacheRegistry()

    /// Shows a bounded structure's size and counts in `/metrics` under `name`.
    package func register(cache name: String, statistics: @escaping @Sendable () -> CacheStatistics) {
        caches.entries.withLock { $0.append((name, statistics)) }
    }
}

/// The bounded caches `/metrics` reads (shared by the copies of ``LedgerMetrics``).
private final class CacheRegistry: Sendable {
    let entries = Mutex<[(name: String, statistics: @Sendable () -> CacheStatistics)]>([])
}

/// The ledger's parts that the HTTP routes and background services share.
public struct ServiceContainer: Sendable {
    public let client: DatabaseClient
    /// `client`, run as the application's first service; what queries at start waits for it.
    public var pool: DatabaseClient { client }
    public let writer: LedgerWriter
    public let store: EventStore
    public let verifier: ChainVerifier
    public let metrics: LedgerMetrics
    public let keyring: APIKeyring
    public let catalog: CatalogService
    public let payments: PaymentService
    public let recovery: RecoveryService
    public let holds: HoldService
    public let expiry: ExpirySweeper
    /// The payout matching between imports (`payout_not_received` when no statement comes).
    public let bankMatching: BankMatchingSweeper
    /// Supervises the acquirer service the daemon runs as its child (nil: an external or injected acquirer).
    public let acquirerSupervisor: AcquirerSupervisor?
    public let settlement: SettlementService
    public let disputes: DisputeService
    /// Records the acquirer's dispute notifications (run as a service when `LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS` > 0).
    public let disputePoller: DisputePoller
    /// Signs checkpoints; nil when no key is configured.
    public let checkpoints: CheckpointService?
    public let checkpointScheduler: CheckpointScheduler?
    /// The transparency log over the events (Merkle tree, C2SP checkpoints, tiles, proofs); nil when `LEDGERD_LOG_TREE`
    /// is false.
    public let transparency: TransparencyLog?
    /// Keeps the tree built and a checkpoint signed (and witnessed) for it.
    public let transparencyBuilder: TransparencyLogBuilder?
    public let privacy: PrivacyService
    /// Bank statements in (issue 53).
    public let bank: BankStatementService
    /// The watched inbox of reports and statements (`LEDGERD_INBOX_DIR`); nil: none configured.
    public let inbox: ReportInbox?
    public let state: StateHistory
    /// Knows the head soon after each commit (LISTEN/NOTIFY, polling as the fallback).
    public let watcher: HeadWatcher
    public let feed: EventFeed
    public let subscriptions: SubscriptionService
    public let webhooks: WebhookService
    public let dispatcher: WebhookDispatcher
    public let journal: JournalService
    /// The replica auditors' reads use (`LEDGERD_READ_DATABASE_URL`); nil: they read the primary.
    public let readClient: DatabaseClient?
    /// What auditors' reads (history, feed and exports, verification, as-of) read: the replica, else the primary.
    public let auditStore: EventStore
    public let auditVerifier: ChainVerifier
    public let auditState: StateHistory
    /// The position those reads reflect, and waiting for one.
    public let positions: LedgerPositions
    /// Writes the inventory snapshots as-of reads start from.
    public let snapshotter: InventorySnapshotter
    /// Records the background jobs' runs (`ledger_job_*`) in ``metrics``.
    public let jobs: JobMetrics
    /// The console's signed-in sessions (in memory: a restart signs everyone out).
    public let consoleSessions: ConsoleSessions
    /// Failed API-key authentications and console sign-ins: logged, counted per source, sign-in throttled.
    public let authenticationFailures: AuthenticationFailures
    let clock: @Sendable () -> Date
    let logger: Logger

    /// - Parameters:
    ///   - acquirer: the acquirer to authorize against: the daemon passes its ``HTTPAcquirer``, the tests and
    ///     benchmarks an in-process model configured from ``LedgerConfiguration/supervisedAcquirerSettings``.
    ///   - acquirerSupervisor: the child acquirer service, run first and stopped last.
    ///   - checkpointKey: signs checkpoints (the daemon reads it from `LEDGERD_CHECKPOINT_KEY`); nil: none.
    ///   - readClient: a streaming replica for auditors' reads (run as a service by the application); nil: the primary.
    ///   - ids: where every new id comes from (the writer's, read by the services); the daemon's are random and
    ///     time-ordered, a test's may be seeded to make a run's ids repeatable.
    public init(
        client: DatabaseClient,
        readClient: DatabaseClient? = nil,
        configuration: LedgerConfiguration,
        metrics: LedgerMetrics,
        keyring: APIKeyring,
        acquirer: any Acquirer,
        clock: @escaping @Sendable () -> Date = { Date() },
        checkpointKey: CheckpointKey? = nil,
        acquirerSupervisor: AcquirerSupervisor? = nil,
        webhookSecretsKey: [UInt8]? = nil,
        webhookTransport: (any WebhookTransport)? = nil,
        ids: any IDSource = RandomIDs(),
        logger: Logger
    ) throws {
        self.client = client
        self.acquirerSupervisor = acquirerSupervisor
        self.metrics = metrics
        self.keyring = keyring
        let jobs = JobMetrics(factory: metrics.factory)
        self.jobs = jobs
        // The durable head: what the writer confirms and every consumer is served up to (HeadWatcher).
        let watcher = HeadWatcher(
            client: client,
            pollInterval: configuration.feedPollInterval,
            wakeInterval: configuration.feedWakeInterval,
            logger: logger
        )
        self.watcher = watcher
        let writer = LedgerWriter(
            client: client,
            configuration: .init(
                maximumBatchEvents: configuration.writerMaximumBatchEvents,
                transactionDeadline: configuration.databaseDeadline,
                statementTimeout: configuration.databaseStatementTimeout,
                versionCacheEntries: configuration.versionCacheEntries
            ),
            durability: watcher,
            logger: logger,
            metricsFactory: metrics.factory,
            ids: ids
        )
        let store = EventStore(client: client, logger: logger)
        self.writer = writer
        self.store = store
        self.verifier = ChainVerifier(client: client, logger: logger)
        self.catalog = CatalogService(writer: writer, store: store, logger: logger)
        let aggregates = AggregateStore(writer: writer, store: store, cacheLimit: configuration.stateCacheEntries)
        metrics.register(cache: "aggregate_states") { aggregates.cacheStatistics }
        metrics.register(cache: "stream_versions") { writer.versionCacheStatistics }
        let holds = HoldService(
            aggregates: aggregates,
            idempotency: IdempotencyStore(client: client, logger: logger),
            intents: HoldIntentLog(store: HoldIntentStore(client: client, logger: logger)),
            dueHolds: ProjectionHoldReader(client: client, logger: logger),
            acquirer: acquirer,
            clock: clock,
            logger: logger,
            faultCrashAt: configuration.faultCrashAt
        )
        self.holds = holds
        let disputes = DisputeService(
            aggregates: aggregates,
            index: DisputeReader(client: client, logger: logger),
            clock: clock,
            logger: logger
        )
        self.disputes = disputes
        self.disputePoller = DisputePoller(
            disputes: disputes,
            acquirer: acquirer,
            cursors: AcquirerFeedCursorStore(client: client, logger: logger),
            clock: clock,
            logger: logger,
            interval: configuration.disputePollInterval ?? .seconds(60),
            jobs: jobs
        )
        self.expiry = ExpirySweeper(
            holds: holds,
            interval: configuration.expiryInterval,
            pageHolds: configuration.expiryPageHolds,
            logger: logger,
            jobs: jobs
        )
        let payments = PaymentService(
            aggregates: aggregates,
            orders: ProjectionOrderReader(client: client, clock: clock, logger: logger),
            catalog: ProjectionStorefrontReader(client: client, clock: clock, logger: logger),
            acquirer: acquirer,
            clock: clock,
            taxPolicy: configuration.taxPolicy,
            capturePolicy: configuration.capturePolicy,
            holds: holds,
            idempotency: IdempotencyStore(client: client, logger: logger),
            logger: logger,
            applePay: configuration.applePay.map {
                ApplePayProcessor(configuration: $0.merchantConfiguration, metricsFactory: metrics.factory)
            }
        )
        self.payments = payments
        let settlement = SettlementService(
            writer: writer,
            store: store,
            client: client,
            acquirer: acquirer,
            settings: configuration.settlement,
            clock: clock,
            logger: logger,
            faultCrashAt: configuration.faultCrashAt
        )
        self.settlement = settlement
        self.recovery = RecoveryService(payments: payments, interval: configuration.recoveryInterval, policy: .standard, logger: logger)
        let checkpoints = checkpointKey.map {
            CheckpointService(
                key: $0,
                writer: writer,
                store: store,
                head: StoreServableHead(watcher: watcher, store: store),
                directory: configuration.checkpointsDirectoryURL,
                clock: clock,
                logger: logger
            )
        }
        self.checkpoints = checkpoints
        self.checkpointScheduler = checkpoints.map {
            CheckpointScheduler(
                service: $0,
                time: configuration.checkpointTime,
                timeZone: configuration.checkpointTimeZone,
                logger: logger,
                jobs: jobs
            )
        }
        let transparency =
            configuration.logTree
            ? try TransparencyLog(
                client: client,
                origin: configuration.logOrigin,
                key: checkpointKey,
                watcher: watcher,
                logger: logger,
                faultCrashAt: configuration.faultCrashAt
            ) : nil
        self.transparency = transparency
        let witnesses: [any WitnessSubmitter] = try configuration.logWitnesses.map { try HTTPWitness(url: $0.url, verifierKey: $0.key) }
        self.transparencyBuilder = transparency.map {
            TransparencyLogBuilder(log: $0, witnesses: witnesses, interval: configuration.logInterval, logger: logger)
        }
        self.privacy = PrivacyService(client: client, writer: writer, clock: clock, logger: logger)
        let bank = BankStatementService(
            client: client,
            writer: writer,
            clock: clock,
            logger: logger,
            calendar: configuration.settlement.calendar,
            fundingWindowBusinessDays: configuration.bankFundingWindowDays
        )
        self.bank = bank
        self.bankMatching = BankMatchingSweeper(bank: bank, interval: configuration.bankMatchingInterval, logger: logger, jobs: jobs)
        // Prepared now: an inbox that cannot be used (world-writable, another user's) stops the daemon at start.
        self.inbox = try configuration.inbox.map { settings in
            try ReportInbox(settings: settings, settlement: settlement, bank: bank, clock: clock, logger: logger)
        }
        let state = StateHistory(
            client: client,
            clock: clock,
            snapshotEvery: configuration.snapshotEveryEvents,
            snapshotBytesPerEvent: configuration.snapshotBytesPerEvent,
            logger: logger
        )
        self.state = state
        self.readClient = readClient
        let reads = readClient ?? client
        self.auditStore = EventStore(client: reads, logger: logger)
        self.auditVerifier = ChainVerifier(client: reads, logger: logger)
        self.auditState =
            readClient.map {
                StateHistory(
                    client: $0,
                    clock: clock,
                    snapshotEvery: configuration.snapshotEveryEvents,
                    snapshotBytesPerEvent: configuration.snapshotBytesPerEvent,
                    logger: logger
                )
            } ?? state
        self.positions = LedgerPositions(store: auditStore, isReplica: readClient != nil, wait: configuration.readWait)
        let feed = EventFeed(store: auditStore, watcher: watcher, storeIsWatched: readClient == nil)
        self.feed = feed
        self.subscriptions = SubscriptionService(store: SubscriptionStore(client: client, logger: logger), feed: feed)
        let box = try (webhookSecretsKey ?? configuration.webhookSecretsKey).map { try WebhookSecretBox(keyBytes: $0) }
        let webhookStore = WebhookStore(client: client, logger: logger)
        self.webhooks = WebhookService(store: webhookStore, watcher: watcher, box: box, destinations: configuration.webhookDestinations, clock: clock)
        self.dispatcher = WebhookDispatcher(
            store: webhookStore,
            watcher: watcher,
            transport: webhookTransport ?? HTTPWebhookTransport(destinations: configuration.webhookDestinations),
            box: box,
            settings: configuration.webhooks,
            clock: clock,
            logger: logger,
            jobs: jobs,
            faultCrashAt: configuration.faultCrashAt
        )
        self.journal = JournalService(store: auditStore)
        self.snapshotter = InventorySnapshotter(snapshots: state.snapshots, interval: configuration.snapshotInterval, logger: logger, jobs: jobs)
        self.consoleSessions = ConsoleSessions(now: clock)
        self.authenticationFailures = AuthenticationFailures(logger: logger, factory: metrics.factory)
        self.clock = clock
        self.logger = logger
    }
}

/// The router: middleware (errors outermost, so metrics see final statuses) and every route.
public func buildRouter(services: ServiceContainer, configuration: LedgerConfiguration) -> Router<LedgerRequestContext> {
    let router = Router(context: LedgerRequestContext.self)
    router.add(middleware: RequestMetricsMiddleware(factory: services.metrics.factory))
    // Outside the error mapping: console replies (errors too, and unknown console paths) as HTML with its headers.
    router.add(middleware: ConsoleMiddleware())
    router.add(middleware: ErrorMiddleware())
    // Expensive routes are limited after their authentication (review 4, M4), in the groups below: an anonymous
    // request never takes a slot.
    let expensive = ExpensiveRequestLimit(limit: configuration.expensiveRequestLimit, exportsPerKey: configuration.exportsPerKey)
    let authenticatedLimit = ExpensiveRequestLimitMiddleware<LedgerRequestContext>(expensive) { _, context in context.principal?.keyID }
    let metrics = services.metrics
    let database = services.client
    // The daemon's watched pool answers at once during an outage; the deadline covers the moment before it notices.
    let probe = EventStoreHealthProbe(store: services.store, deadline: database.isWatched ? .milliseconds(1900) : nil)
    let systemRoutes = SystemRoutes<LedgerRequestContext>(probe: probe, metricsText: { metrics.exposition(databaseUp: database.isAvailable) })
    systemRoutes.register(on: router)
    OpenAPIRoutes().register(on: router)
    ProductImageRoutes(directory: configuration.productImagesDirectoryURL).register(on: router)
    // The live inventory is open; its as-of read needs a key, which the route checks itself.
    let keyring = services.keyring
    let storefront = router.group().add(
        middleware: ExpensiveRequestLimitMiddleware(expensive) { request, _ in
            (try? BackOfficeAuthMiddleware.principal(for: request, keyring: keyring, access: .read))?.keyID
        }
    )
    StorefrontRoutes(
        reader: ProjectionStorefrontReader(client: services.client, clock: services.clock, logger: services.logger),
        history: (services.state, services.keyring),
        failures: services.authenticationFailures
    ).register(on: storefront)
    PaymentRoutes(payments: services.payments).register(on: router)
    // Back office: reads need an operator or auditor key.
    let reads = router.group().add(
        middleware: BackOfficeAuthMiddleware(keyring: services.keyring, access: .read, failures: services.authenticationFailures)
    )
    .add(middleware: authenticatedLimit)
    systemRoutes.registerMetrics(on: reads)
    let ledgerReader = EventStoreReader(store: services.store, verifier: services.verifier, watcher: services.watcher)
    // Auditors' reads — history, the feed and exports, verification, as-of — on the replica when there is one; each
    // reply says the position it reflects and `min_position` waits for one.
    let audited = reads.group().add(middleware: LedgerPositionMiddleware(positions: services.positions))
    AuditRoutes(reader: EventStoreReader(store: services.auditStore, verifier: services.auditVerifier, watcher: services.watcher)).register(
        on: audited
    )
    OrderRoutes(
        reader: ProjectionOrderReader(client: services.client, clock: services.clock, logger: services.logger),
        statuses: Set(OrderStatus.allCases.map(\.rawValue)),
        state: services.state
    ).register(on: reads)
    StateRoutes(reader: services.auditState).register(on: audited)
    let checkpointRoutes = CheckpointRoutes(signer: services.checkpoints, reader: ledgerReader)
    checkpointRoutes.registerReads(on: reads)
    let holdRoutes = HoldRoutes(operator: services.holds, reader: ProjectionHoldReader(client: services.client, logger: services.logger))
    holdRoutes.registerReads(on: reads)
    // Changes need an operator key.
    let changes = router.group().add(
        middleware: BackOfficeAuthMiddleware(keyring: services.keyring, access: .change, failures: services.authenticationFailures)
    )
    .add(middleware: authenticatedLimit)
    holdRoutes.registerChanges(on: changes)
    let settlementRoutes = SettlementRoutes(settlement: services.settlement, state: services.state, reportLimit: configuration.reportMaxBytes)
    settlementRoutes.registerReads(on: reads)
    settlementRoutes.registerChanges(on: changes)
    let disputeRoutes = DisputeRoutes(disputes: services.disputes)
    disputeRoutes.registerReads(on: reads)
    disputeRoutes.registerChanges(on: changes)
    checkpointRoutes.registerChanges(on: changes)
    PrivacyRoutes(privacy: services.privacy).register(on: changes)
    BankStatementRoutes(importer: services.bank, matching: services.bank, limit: configuration.reportMaxBytes).registerChanges(on: changes)
    let feedRoutes = FeedRoutes(
        follower: services.feed,
        subscriptions: services.subscriptions,
        webhooks: services.webhooks,
        journal: services.journal,
        streamsPerKey: configuration.feedStreamsPerKey
    )
    feedRoutes.registerReads(on: reads)
    feedRoutes.registerChanges(on: changes)
    // The back-office console (`/console/`): pages over the same readers and services, behind its own sign-in.
    ConsoleRoutes(
        keyring: services.keyring,
        sessions: services.consoleSessions,
        orders: ProjectionOrderReader(client: services.client, clock: services.clock, logger: services.logger),
        ledger: EventStoreReader(store: services.auditStore, verifier: services.auditVerifier, watcher: services.watcher),
        holdOperator: services.holds,
        holds: ProjectionHoldReader(client: services.client, logger: services.logger),
        disputes: services.disputes,
        settlement: services.settlement,
        privacy: services.privacy,
        journal: services.journal,
        subscriptions: services.subscriptions,
        webhooks: services.webhooks,
        state: services.auditState,
        checkpoints: services.checkpoints,
        reportLimit: configuration.reportMaxBytes,
        bank: services.bank,
        secureCookies: configuration.tlsCertificatePath != nil,
        clock: services.clock,
        failures: services.authenticationFailures,
        matching: services.bank
    ).register(on: router, expensive: expensive)
    if let transparency = services.transparency {
        let routes = TransparencyRoutes(log: transparency, isPublic: configuration.logPublic)
        if configuration.logPublic { routes.register(on: router) } else { routes.register(on: reads) }
    }
    return router
}

/// The daemon as a Hummingbird application. Services start in order (pool, then writer) and
/// stop in reverse after the HTTP server has drained, so in-flight appends still commit.
///
/// A service group starts its services concurrently, so each one that uses the database (and the
/// work before the server starts: seeding, then the server itself) first waits for the pool to run.
///
/// `tls`: serve HTTPS with this certificate (reloaded on SIGHUP); nil: plain HTTP. `onServerRunning`: called with
/// the bound port once the server listens.
public func buildApplication(
    configuration: LedgerConfiguration,
    services: ServiceContainer,
    tls: TLSCertificateStore? = nil,
    logger: Logger,
    onServerRunning: @escaping @Sendable (Int) -> Void = { _ in }
) throws -> some ApplicationProtocol {
    var app = Application(
        router: MethodCheckedRouter(buildRouter(services: services, configuration: configuration)) { message, request, context in
            try APIError(status: .methodNotAllowed, code: "method_not_allowed", message: message).response(from: request, context: context)
        },
        server: try httpServer(configuration: configuration, tls: tls, logger: logger),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "ledgerd"),
        onServerRunning: { channel in onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
    if let tls { app.addServices(CertificateReloader(store: tls, logger: logger)) }
    if let url = APIKeys.keyringURL(for: configuration) { app.addServices(APIKeys.Watcher(keyring: services.keyring, url: url, logger: logger)) }
    let pool = services.pool
    func afterPool(_ service: any Service) -> any Service { StartsAfterPool(pool: pool, service: service) }
    // The child acquirer first, so that it stops last (after the server drained and the services stopped).
    if let supervisor = services.acquirerSupervisor { app.addServices(supervisor) }
    app.addServices(pool, afterPool(services.writer), afterPool(services.recovery), afterPool(services.expiry), afterPool(services.snapshotter))
    app.addServices(afterPool(services.watcher), afterPool(services.dispatcher))
    app.addServices(afterPool(services.bankMatching))
    if let builder = services.transparencyBuilder { app.addServices(afterPool(builder)) }
    if let replica = services.readClient {
        app.addServices(replica)
        app.beforeServerStarts { await replica.running() }
    }
    if configuration.settlement.runAtCutOff {
        app.addServices(afterPool(SettlementScheduler(settlement: services.settlement, logger: logger, jobs: services.jobs)))
    }
    if configuration.disputePollInterval != nil { app.addServices(afterPool(services.disputePoller)) }
    if let interval = configuration.memoryTrimInterval { app.addServices(MemoryTrimmer(interval: interval, logger: logger, jobs: services.jobs)) }
    if let scheduler = services.checkpointScheduler { app.addServices(afterPool(scheduler)) }
    if let inbox = services.inbox { app.addServices(afterPool(inbox)) }
    app.beforeServerStarts { await pool.running() }
    if configuration.seedDemoCatalog {
        // Runs once the pool and the writer are up, before the server accepts requests.
        let pictures = configuration.productImagesDirectoryURL
        app.beforeServerStarts {
            try CatalogService.writeDemoPictures(to: pictures)
            try await services.catalog.seedDemoCatalogIfEmpty(now: Date())
        }
    }
    return app
}

/// Runs `service` once the pool has started, so that its first query does not race the pool's start.
/// Graceful shutdown and cancellation reach `service` as if it ran alone.
struct StartsAfterPool: Service, CustomStringConvertible {
    let pool: DatabaseClient
    let service: any Service

    func run() async throws {
        await pool.running()
        try await service.run()
    }

    var description: String { String(describing: service) }
}
