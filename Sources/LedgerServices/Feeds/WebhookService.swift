import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import ServiceLifecycle

/// An endpoint as the back office sees it: never its secrets.
public struct WebhookView: Sendable, Hashable {
    public var id: UUID
    public var url: String
    public var types: [String]
    public var state: String
    public var cursor: Int64
    public var head: Int64
    public var attempts: Int
    public var nextAttemptAtMicros: Int64
    public var previousSecretUntilMicros: Int64?
    public var createdAtMicros: Int64

    init(_ stored: StoredWebhook) {
        id = stored.id
        url = Self.withoutCredentials(stored.url)
        types = stored.types
        state = stored.state
        cursor = stored.cursor
        head = stored.head
        attempts = stored.attempts
        nextAttemptAtMicros = stored.nextAttemptAtMicros
        previousSecretUntilMicros = stored.previousSecretUntilMicros
        createdAtMicros = stored.createdAtMicros
    }

    /// An endpoint registered before credentials in URLs were refused is shown without them (review 3, N12).
    static func withoutCredentials(_ url: String) -> String {
        let authority = WebhookDestinations.authority(of: url)
        guard let at = authority.lastIndex(of: "@") else { return url }
        return String(url[..<authority.startIndex]) + String(url[url.index(after: at)...])
    }
}

/// Webhook endpoints: registration, delivery history, redelivery, secret rotation, pausing and deletion. The
/// deliveries themselves are the ``WebhookDispatcher``'s.
public struct WebhookService: Sendable {
    public static let defaultGrace: Duration = .seconds(86_400)

    let store: WebhookStore
    /// The durable head, where a new endpoint starts (``HeadWatcher``).
    let watcher: HeadWatcher
    /// Nil when no secrets key is configured: endpoints cannot be registered.
    let box: WebhookSecretBox?
    let clock: @Sendable () -> Date

    /// Where endpoints may be: checked at registration (and by the transport at every connection).
    let destinations: WebhookDestinations

    public init(
        store: WebhookStore,
        watcher: HeadWatcher,
        box: WebhookSecretBox?,
        destinations: WebhookDestinations = WebhookDestinations(),
        clock: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.watcher = watcher
        self.box = box
        self.destinations = destinations
        self.clock = clock
    }

    /// Registers an endpoint; it receives the events committed after this call, in position order: after the durable
    /// head now (a position beyond it may yet be taken back by a failover, and another event take its place).
    public func register(url: String, secret: String, types: [String]) async throws -> WebhookView {
        do {
            _ = try destinations.check(url: url)
        } catch {
            throw ServiceError.invalid(error.code, error.message, field: "url")
        }
        try Self.checkSecret(secret)
        guard types.allSatisfy({ EventCatalogue.entry(forType: $0) != nil }) else {
            throw ServiceError.invalid("unknown_type", "types must name event types of the catalogue", field: "types")
        }
        let sealed = try sealer().seal(secret)
        let stored = try await store.insert(
            id: UUID.newRandom(),
            url: url,
            types: types,
            sealedSecret: sealed,
            cursor: try await watcher.servable(),
            nowMicros: clock().epochMicroseconds
        )
        return WebhookView(stored)
    }

    public func all() async throws -> [WebhookView] { try await store.all().map(WebhookView.init) }

    public func endpoint(_ id: UUID) async throws -> WebhookView {
        guard let stored = try await store.endpoint(id) else { throw ServiceError.notFound("no webhook \(id.uuidString.lowercased())") }
        return WebhookView(stored)
    }

    /// The endpoint's attempts after attempt `after`, oldest first.
    public func deliveries(_ id: UUID, after: Int64, limit: Int) async throws -> [StoredDelivery] {
        _ = try await endpoint(id)
        return try await store.deliveries(id, after: after, limit: limit)
    }

    /// Delivers every matching event from `position` on again, in order, and resumes a paused endpoint.
    public func redeliver(_ id: UUID, from position: Int64) async throws -> WebhookView {
        let current = try await endpoint(id)
        guard position >= 1, position <= current.head + 1 else {
            throw ServiceError.invalid("invalid_position", "from must be a position 1…\(current.head + 1)", field: "from")
        }
        guard let stored = try await store.redeliver(id, from: position, nowMicros: clock().epochMicroseconds) else {
            throw ServiceError.notFound("no webhook \(id.uuidString.lowercased())")
        }
        return WebhookView(stored)
    }

    /// Pauses, resumes or deletes an endpoint for an operator (``WebhookChange``); a deleted endpoint stays
    /// readable with its history but takes no change: 404 like an unknown one.
    public func apply(_ change: WebhookChange, to id: UUID) async throws -> WebhookView {
        guard let stored = try await store.apply(change, to: id, nowMicros: clock().epochMicroseconds) else {
            throw ServiceError.notFound("no webhook \(id.uuidString.lowercased()) (unknown, or deleted)")
        }
        return WebhookView(stored)
    }

    /// Signs with `secret` from now on; the current secret still signs too (a second `v1`) for `grace`.
    public func rotateSecret(_ id: UUID, secret: String, grace: Duration) async throws -> WebhookView {
        try Self.checkSecret(secret)
        _ = try await endpoint(id)
        let until = clock().epochMicroseconds + grace.components.seconds * 1_000_000
        guard let stored = try await store.rotate(id, sealedSecret: try sealer().seal(secret), previousUntilMicros: until) else {
            throw ServiceError.notFound("no webhook \(id.uuidString.lowercased())")
        }
        return WebhookView(stored)
    }

    func sealer() throws -> WebhookSecretBox {
        guard let box else {
            throw ServiceError.conflict(
                "webhooks_not_configured",
                "webhooks need LEDGERD_WEBHOOK_SECRETS_KEY (or the embedded daemon's generated key) to store secrets"
            )
        }
        return box
    }

    static func checkSecret(_ secret: String) throws {
        guard (16...256).contains(secret.utf8.count) else {
            throw ServiceError.invalid("invalid_secret", "secret must be 16…256 bytes", field: "secret")
        }
    }
}

/// Delivers webhook events: per endpoint in position order, one POST per event, retried with the
/// ``WebhookRetryPolicy``'s backoff, the endpoint paused when an event has failed for its give-up time.
///
/// Exactly one daemon delivers to an endpoint at a time: a delivery runs inside the transaction that
/// holds the endpoint's row lock (``WebhookStore/withDueEndpoint(nowMicros:_:)``, `FOR UPDATE SKIP LOCKED`),
/// and its cursor, attempts and history commit with it. A daemon that dies mid-delivery commits nothing,
/// so the event is delivered again (at least once; receivers deduplicate by `Ledger-Event-Position`).
public final class WebhookDispatcher: Service, Sendable {
    public struct Settings: Sendable {
        public var policy: WebhookRetryPolicy
        /// Endpoints delivered to at once by this daemon (each holds a database connection meanwhile).
        public var concurrency: Int
        public var requestTimeout: Duration
        /// How often an idle worker looks for due endpoints when nothing wakes it.
        public var pollInterval: Duration
        /// Most events delivered to one endpoint per transaction.
        public var batchSize: Int

        public init(
            policy: WebhookRetryPolicy = WebhookRetryPolicy(),
            concurrency: Int = 4,
            requestTimeout: Duration = .seconds(10),
            pollInterval: Duration = .seconds(1),
            batchSize: Int = 100
        ) {
            self.policy = policy
            self.concurrency = concurrency
            self.requestTimeout = requestTimeout
            self.pollInterval = pollInterval
            self.batchSize = batchSize
        }
    }

    let store: WebhookStore
    let watcher: HeadWatcher
    let transport: any WebhookTransport
    let box: WebhookSecretBox?
    let settings: Settings
    let clock: @Sendable () -> Date
    let logger: Logger
    let jobs: JobMetrics
    /// A crash test's fault point (`LEDGERD_FAULT_CRASH_AT=webhook.delivered`).
    let faultCrashAt: FaultPoint?

    public init(
        store: WebhookStore,
        watcher: HeadWatcher,
        transport: any WebhookTransport,
        box: WebhookSecretBox?,
        settings: Settings,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        jobs: JobMetrics = JobMetrics(),
        faultCrashAt: FaultPoint? = nil
    ) {
        self.jobs = jobs
        self.faultCrashAt = faultCrashAt
        self.store = store
        self.watcher = watcher
        self.transport = transport
        self.box = box
        self.settings = settings
        self.clock = clock
        self.logger = logger
    }

    /// The workers, until the daemon shuts down: a worker finishes the endpoint it is delivering to
    /// (and commits) before it stops; an idle one stops at once.
    public func run() async throws {
        guard box != nil else {
            try await gracefulShutdown()
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<max(1, settings.concurrency) { group.addTask { await self.work(index) } }
        }
    }

    /// Worker `index` delivers while endpoints are due. Idle, it follows the ledger's head (a commit makes
    /// a caught-up endpoint due) only while more than `index` endpoints are active: an endpoint is served by
    /// one worker at a time, so worker `index` has nothing to do otherwise, and a daemon with no endpoints
    /// (most of them) costs one small query per worker per poll interval, not a transaction per commit.
    private func work(_ index: Int) async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            var idle = settings.pollInterval
            var followHead = false
            var through = watcher.head
            do {
                // The schedule first (one statement, bounded by the pool's deadline); a transaction only when an endpoint
                // is due. A daemon with no endpoint due (most polls, and every poll of most daemons) opens none: after an
                // outage, a transaction's statement sent as its connection died can wait for ever (security review 3,
                // N5), and a worker stuck in one delivers nothing and holds the stop until the watchdog ends it.
                typealias Pass = (schedule: (active: Int, nextDueMicros: Int64?), through: Int64, delivered: Bool)
                let pass = try await jobs.run(.webhookDispatch) { () async throws -> Pass in
                    // Only durable events are delivered (HeadWatcher): an endpoint is due for them, not for the rest.
                    let head = try await self.watcher.servableKnown()
                    let schedule = try await store.schedule(through: head)
                    guard let due = schedule.nextDueMicros, due <= clock().epochMicroseconds else { return (schedule, head, false) }
                    let delivered = try await deliverDue(through: head)
                    return (try await store.schedule(through: head), head, delivered)
                }
                // Still due through the head just served (a full page, another endpoint): at once. Otherwise the next
                // wait is for events beyond it, which the watcher wakes for at most once per its wake interval: a
                // worker that looped straight back after each delivery served each commit on its own (issue 57: at 120
                // requests a second, 60 deliveries a second of a few events each, five statements apiece).
                if pass.delivered, let due = pass.schedule.nextDueMicros, due <= clock().epochMicroseconds { continue }
                through = pass.through
                followHead = pass.schedule.active > index
                if followHead, let due = pass.schedule.nextDueMicros {
                    let wait = max(0, due - clock().epochMicroseconds)
                    idle = max(.milliseconds(20), min(idle, .microseconds(wait)))
                }
            } catch {
                if Task.isCancelled { return }
                // An outage is reported once by the database watcher, not by every worker every poll.
                let level: Logger.Level = DatabaseFailure.isUnavailable(error) ? .debug : .warning
                logger.log(level: level, "webhook delivery failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            let (watcher, head, wait, follow) = (watcher, through, idle, followHead)
            _ = await cancelWhenGracefulShutdown {
                if follow {
                    await watcher.wait(beyond: head, timeout: wait)
                } else {
                    try? await Task.sleep(for: wait)
                }
            }
        }
    }

    /// Claims one due endpoint and delivers its next events through `head` (nil: the durable head now); false when
    /// none was due.
    @discardableResult
    public func deliverDue(through head: Int64? = nil) async throws -> Bool {
        guard let box else { return false }
        let bound: Int64
        if let head { bound = head } else { bound = try await watcher.servable() }
        let result: Bool? = try await store.withDueEndpoint(nowMicros: clock().epochMicroseconds, through: bound) { endpoint, transaction in
            try await self.deliver(endpoint, box: box, transaction)
            return true
        }
        return result ?? false
    }

    private func deliver(_ endpoint: StoredWebhook, box: WebhookSecretBox, _ transaction: WebhookTransaction) async throws {
        var secrets = [try box.open(endpoint.sealedSecret)]
        if let previous = endpoint.sealedPreviousSecret, let until = endpoint.previousSecretUntilMicros, until > clock().epochMicroseconds {
            secrets.append(try box.open(previous))
        }
        let endpointKey = endpoint.id.uuidString.lowercased()
        var progress = WebhookProgress(
            cursor: endpoint.cursor,
            attempts: endpoint.attempts,
            firstFailedAtMicros: endpoint.firstFailedAtMicros,
            nextAttemptAtMicros: clock().epochMicroseconds,
            paused: false
        )
        let page = try await transaction.page(after: endpoint.cursor, types: endpoint.types, limit: settings.batchSize)
        var attempts: [WebhookAttempt] = []
        var finished = true
        let started = ContinuousClock.now
        for event in page.events {
            if ContinuousClock.now - started > .seconds(2) {
                finished = false
                break
            }
            let body = Array(EventJSON.render(event).utf8)
            let attemptedAt = clock().epochMicroseconds
            let headers = [
                ("Content-Type", "application/json"),
                (WebhookSignature.header, WebhookSignature.value(timestamp: attemptedAt / 1_000_000, body: body, secrets: secrets)),
                (WebhookSignature.positionHeader, String(event.position)),
                ("Ledger-Event-Type", event.type),
            ]
            let sent = ContinuousClock.now
            let result = await transport.post(url: endpoint.url, body: body, headers: headers, timeout: settings.requestTimeout)
            jobs.webhookDelivery(delivered: result.delivered)
            let elapsed = ContinuousClock.now - sent
            let latency = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
            let attempt = progress.attempts + 1
            if result.delivered {
                attempts.append(
                    WebhookAttempt(
                        position: event.position,
                        attempt: attempt,
                        attemptedAtMicros: attemptedAt,
                        statusCode: result.statusCode,
                        error: nil,
                        latencyMicros: latency,
                        delivered: true,
                        retryAtMicros: nil
                    )
                )
                progress = WebhookProgress(
                    cursor: event.position,
                    attempts: 0,
                    firstFailedAtMicros: nil,
                    nextAttemptAtMicros: attemptedAt,
                    paused: false
                )
                FaultPoint.webhookDelivered.crashIfConfigured(faultCrashAt, logger: logger)
                continue
            }
            let firstFailure = progress.firstFailedAtMicros ?? attemptedAt
            let pause = settings.policy.givesUp(firstFailureMicros: firstFailure, nowMicros: attemptedAt)
            let retryAt =
                pause
                ? nil
                : attemptedAt + settings.policy.delayMicros(afterFailedAttempts: attempt, endpoint: endpointKey, position: event.position)
            attempts.append(
                WebhookAttempt(
                    position: event.position,
                    attempt: attempt,
                    attemptedAtMicros: attemptedAt,
                    statusCode: result.statusCode,
                    error: result.error ?? "status \(result.statusCode ?? 0)",
                    latencyMicros: latency,
                    delivered: false,
                    retryAtMicros: retryAt
                )
            )
            progress = WebhookProgress(
                cursor: progress.cursor,
                attempts: attempt,
                firstFailedAtMicros: firstFailure,
                nextAttemptAtMicros: retryAt ?? attemptedAt,
                paused: pause
            )
            if pause {
                logger.warning(
                    "webhook endpoint paused: its event failed for the give-up time",
                    metadata: ["webhook": "\(endpointKey)", "position": "\(event.position)"]
                )
            }
            finished = false
            break
        }
        if finished { progress.cursor = max(progress.cursor, page.through) }
        try await transaction.finish(endpoint.id, attempts: attempts, progress: progress)
    }
}
