import LedgerCore
import LedgerEngine
import LedgerHTTPServer
import Logging
import Metrics

extension LedgerWriter {
    /// The daemon's writer: the engine's batching loop on PostgreSQL (``PostgresEventLog``, today's SQL), its commits
    /// confirmed by `durability`, its `append failed` lines throttled as the 503 warning is (through an outage every
    /// request fails, and a line each was 28,728 lines in 20 s: review 4, L5).
    public convenience init(
        client: DatabaseClient,
        configuration: Configuration = .init(),
        durability: HeadWatcher? = nil,
        logger: Logger,
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        clock: any LedgerClock = SystemClock(),
        ids: any IDSource = RandomIDs()
    ) {
        let metrics = WriterMetrics(factory: metricsFactory)
        let log = PostgresEventLog(
            client: client,
            statementTimeout: configuration.statementTimeout,
            durability: durability,
            logger: logger,
            metrics: metrics
        )
        let throttle = LogThrottle()
        self.init(
            log: log,
            configuration: configuration,
            durability: durability,
            logger: logger,
            metrics: metrics,
            clock: clock,
            ids: ids,
            appendFailed: { metadata in throttle.log(.error, "append failed", metadata: metadata, to: logger) }
        )
    }
}

/// The synchronous standby's confirmations are the writer's durable head.
extension HeadWatcher: DurableHead, HeadWatch {}
