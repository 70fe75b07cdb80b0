import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The ledger's connection pool: a PostgresNIO `PostgresClient`, run as a service, that fails fast while the
/// database is unreachable and comes back as soon as the database does.
///
/// **Start.** PostgresNIO logs a warning for every connection leased before `PostgresClient.run()` has begun,
/// and a service group starts its services concurrently, so whatever may query at start awaits ``running()``
/// first; ``run()`` lets the waiters go as it starts the pool. (A waiter can still reach the pool a moment before
/// its `run()` has begun; the pool queues that lease, and ``LeaseBeforeRunFilter`` keeps the false alarm out of the log.)
///
/// **Outages** (with a ``Watch``, as the daemon runs it). PostgresNIO's pool queues leases while it cannot
/// connect — up to its 60 s circuit breaker — and then retries with a backoff that grows to a minute, so on its
/// own a request waits about a minute during an outage and the service resumes up to a minute after the
/// database's return. Here a watcher runs `SELECT 1` on a connection of its own every ``Watch/interval``, each
/// with a deadline of ``Watch/timeout``:
/// - when ``Watch/failures`` probes in a row fail, the database is *unavailable*: every statement fails at once with
///   ``DatabaseUnavailableError``, and the pool is replaced by a fresh one — the old one shuts down, which fails
///   the leases it queued and closes its connections (statements in flight on them fail);
/// - when a probe succeeds again, another fresh pool (no backoff history) takes over and statements flow.
///
/// Without a watch (commands, most tests) this is the plain pool.
///
/// **Several hosts** (``DatabaseHosts``: a multi-host URL, `target_session_attrs`). ``run()`` asks the hosts in
/// order — `pg_is_in_recovery()` and `transaction_read_only` — and starts the pool on the first acceptable one.
/// Watched, the probe asks the same question of the host in use: when it stops answering or stops being
/// acceptable (a primary demoted, or dead and its standby promoted), statements fail at once
/// (``DatabaseUnavailableError``) while the watcher asks the hosts in order again, and a fresh pool on the first
/// acceptable one takes over. With `read-write`, the pool thus follows the primary after a failover; it never
/// writes to a standby.
public final class DatabaseClient: Service, Sendable {
    /// How the database is watched: a probe every `interval`, failing after `timeout`; the database is
    /// unreachable after `failures` failed probes in a row. One slow probe is not an outage: on a loaded host
    /// a fresh connection can take longer than `timeout`, and declaring an outage then would fail every
    /// statement in flight (a daemon starting up exits). So an outage is found at the first failed probe when
    /// the host's port refuses connections (a stopped or killed server), and after `failures` probes in a row
    /// otherwise.
    public struct Watch: Sendable {
        public var interval: Duration
        public var timeout: Duration
        public var failures: Int

        public init(interval: Duration = .milliseconds(500), timeout: Duration = .seconds(1), failures: Int = 3) {
            self.interval = interval
            self.timeout = timeout
            self.failures = max(1, failures)
        }
    }

    private struct State {
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        var started = false
        var stopped = false
        /// The pool statements use.
        var current: PostgresClient
        /// Each pool's `run()`, by generation; a retired pool's task is cancelled (its pool shuts down).
        var runs: [Int: Task<Void, Never>] = [:]
        var generation = 0
        var available = true
        /// The host (index into ``DatabaseHosts/candidates``) the pool talks to.
        var host = 0
    }

    private let hosts: DatabaseHosts
    private let watch: Watch?
    /// How long a statement may take to begin answering before it fails as ``DatabaseUnavailableError/timedOut``
    /// (the daemon: its `statement_timeout` and 2 s); nil: as long as PostgresNIO takes. The server's
    /// `statement_timeout` bounds a statement that runs; this bounds one that never reached a server: after a
    /// backend was terminated or the server stopped mid-statement, PostgresNIO has been seen never to answer a
    /// statement sent at that moment (a payment left unanswered, and a daemon that could not stop while it waited;
    /// security review 3, N5).
    public let statementDeadline: Duration?
    private let logger: Logger
    /// The pools' background logger: ``logger`` without PostgresNIO's start-race false alarm (``LeaseBeforeRunFilter``).
    private let poolLogger: Logger
    private let state: Mutex<State>

    /// A pool for `configuration`; with `watch`, it also watches the database (see the type's notes).
    public convenience init(
        configuration: PostgresClient.Configuration,
        backgroundLogger: Logger,
        watch: Watch? = nil,
        statementDeadline: Duration? = nil
    ) {
        self.init(hosts: DatabaseHosts(configuration), backgroundLogger: backgroundLogger, watch: watch, statementDeadline: statementDeadline)
    }

    /// A pool on the first acceptable host of `hosts` (see the type's notes); with `watch`, it also watches it.
    public init(hosts: DatabaseHosts, backgroundLogger: Logger, watch: Watch? = nil, statementDeadline: Duration? = nil) {
        self.hosts = hosts
        self.watch = watch
        self.statementDeadline = statementDeadline
        self.logger = backgroundLogger
        let poolLogger = LeaseBeforeRunFilter.wrapping(backgroundLogger)
        self.poolLogger = poolLogger
        self.state = Mutex(State(current: PostgresClient(configuration: hosts.first, backgroundLogger: poolLogger)))
    }

    /// The index of the host in use, in the URL's order.
    public var currentHost: Int { state.withLock { $0.host } }

    /// False while the watcher finds the database unreachable.
    public var isAvailable: Bool { state.withLock { $0.available } }

    /// True when a watcher runs (the daemon's pool).
    public var isWatched: Bool { watch != nil }

    // MARK: - Statements

    /// The pool to use now; throws ``DatabaseUnavailableError`` while the database is unreachable.
    private func pool() throws -> PostgresClient {
        try state.withLock { state in
            guard state.available else { throw DatabaseUnavailableError.unreachable }
            return state.current
        }
    }

    /// Runs one statement (PostgresNIO's `PostgresClient.query`); with a ``statementDeadline``, throws
    /// ``DatabaseUnavailableError/timedOut`` when its answer has not begun by then.
    @discardableResult
    public func query(
        _ query: PostgresQuery,
        logger: Logger? = nil,
        file: String = #fileID,
        line: Int = #line
    ) async throws -> PostgresRowSequence {
        let pool = try pool()
        if let plans = StatementPlans.recording { try await plans.explain(query, on: pool, logger: logger) }
        guard let statementDeadline else { return try await pool.query(query, logger: logger, file: file, line: line) }
        return try await withDeadline(statementDeadline) { try await pool.query(query, logger: logger, file: file, line: line) }
    }

    /// Leases a connection for `closure`'s lifetime (PostgresNIO's `PostgresClient.withConnection`).
    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await pool().withConnection(isolation: isolation, closure)
    }

    /// Runs `closure` in a transaction and returns once its COMMIT has returned (PostgresNIO's
    /// `PostgresClient.withTransaction`).
    public func withTransaction<Result>(
        logger: Logger,
        file: String = #file,
        line: Int = #line,
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await pool().withTransaction(logger: logger, file: file, line: line, isolation: isolation, closure)
    }

    /// Runs `body` in an explicit transaction, bounded by the ``statementDeadline``, and returns once its COMMIT has
    /// returned: the way to write what the caller then acknowledges to someone (an HTTP reply, the acquirer's answer).
    /// Not one statement on its own (``query(_:logger:file:line:)``, an implicit transaction): when its backend is
    /// terminated while the commit waits for the synchronous standby (a demotion, a pool reset, an operator), the
    /// statement's completion, sent before the commit at the protocol's Sync, still reaches the client, which takes it as
    /// success though only the primary has the commit and a failover takes it back. A COMMIT statement is answered only
    /// after its wait, and a terminated one not at all (`DurableHeadTests`, `AcquirerDurabilityTests`).
    public func committed<Result: Sendable>(
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let work: @Sendable () async throws -> Result = {
            try await self.withTransaction(logger: logger) { connection in try await body(connection) }
        }
        guard let statementDeadline else { return try await work() }
        return try await withDeadline(statementDeadline, work)
    }

    /// One data-changing statement, acknowledged only once committed (``committed(logger:_:)``); its rows.
    @discardableResult
    public func committed(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await committed(logger: logger) { connection in try await connection.query(query, logger: logger).collect() }
    }

    // MARK: - Running

    /// Runs the pool (and the watcher) until graceful shutdown or cancellation.
    public func run() async {
        if hosts.needsSelection {
            // The first acceptable host; none: the first host (unwatched — its statements say what is wrong), or
            // unavailable until the watcher finds one.
            let timeout = watch?.timeout ?? hosts.first.options.connectTimeout
            let chosen = await firstAcceptableHost(timeout: timeout)
            if chosen == nil {
                logger.warning(
                    "no database host is acceptable yet",
                    metadata: ["target_session_attrs": "\(hosts.sessionAttributes.rawValue)", "hosts": "\(hosts.candidates.count)"]
                )
            }
            state.withLock { state in
                let index = chosen ?? 0
                if index != 0 { state.current = PostgresClient(configuration: hosts.candidates[index], backgroundLogger: poolLogger) }
                state.host = index
                if chosen == nil && watch != nil { state.available = false }
            }
        }
        let first = state.withLock { $0.current }
        startGeneration(first, becomeAvailable: false)
        if let watch {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.watchDatabase(watch) }
                try? await gracefulShutdown()
                group.cancelAll()
            }
        } else {
            try? await gracefulShutdown()
        }
        let runs = state.withLock { state -> [Task<Void, Never>] in
            state.stopped = true
            return Array(state.runs.values)
        }
        for run in runs { run.cancel() }
        for run in runs { await run.value }
    }

    /// Returns once ``run()`` has started the pool (at once if it has), or when the task is cancelled.
    public func running() async {
        let id = state.withLock { state -> Int? in
            guard !state.started else { return nil }
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard !state.started, !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Runs `client` as the pool statements use from now on; the pools before it shut down. With
    /// `becomeAvailable`, statements flow again once it is in place.
    private func startGeneration(_ client: PostgresClient, becomeAvailable: Bool) {
        let generation = state.withLock { state -> Int in
            state.generation += 1
            return state.generation
        }
        let run = Task {
            let (retired, waiters, stopped) = state.withLock { state in
                guard !state.stopped else { return ([Task<Void, Never>](), [CheckedContinuation<Void, Never>](), true) }
                state.current = client
                if becomeAvailable { state.available = true }
                state.started = true
                let waiters = Array(state.waiters.values)
                state.waiters = [:]
                return (state.runs.filter { $0.key < generation }.map(\.value), waiters, false)
            }
            for task in retired { task.cancel() }
            for waiter in waiters { waiter.resume() }
            if !stopped { await client.run() }
            state.withLock { _ = $0.runs.removeValue(forKey: generation) }
        }
        // (If it already finished — only when stopped — the entry is a finished task: harmless.)
        state.withLock { $0.runs[generation] = run }
    }

    /// Probes the database every ``Watch/interval``; replaces the pool when it goes, when it comes back, and when
    /// another host has become the acceptable one.
    private func watchDatabase(_ watch: Watch) async {
        var failedInARow = 0
        var probes: [Int: (client: PostgresClient, run: Task<Void, Never>)] = [:]
        defer { for probe in probes.values { probe.run.cancel() } }
        func acceptable(_ index: Int) async -> Bool {
            let probe: PostgresClient
            if let existing = probes[index] {
                probe = existing.client
            } else {
                var options = hosts.candidates[index]
                options.options.maximumConnections = 1
                options.options.connectTimeout = watch.timeout
                options.options.keepAliveBehavior = nil
                let client = PostgresClient(configuration: options, backgroundLogger: Self.quiet)
                probes[index] = (client, Task { await client.run() })
                probe = client
            }
            if await accepts(probe, timeout: watch.timeout) { return true }
            probes.removeValue(forKey: index)?.run.cancel()
            return false
        }
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: watch.interval)
            } catch {
                return
            }
            let (wasAvailable, current) = state.withLock { ($0.available, $0.host) }
            var chosen: Int?
            if wasAvailable {
                if await acceptable(current) {
                    chosen = current
                    failedInARow = 0
                } else {
                    failedInARow += 1
                    // Statements keep going to the host in use until it has failed enough probes in a row, or
                    // refuses connections (its server is down: no reason to wait for more probes).
                    if failedInARow < watch.failures, await !Self.refuses(hosts.candidates[current], timeout: watch.timeout) { continue }
                }
            }
            if chosen == nil {
                // Unavailable: the hosts in their order, as at the start.
                for index in hosts.candidates.indices {
                    if await acceptable(index) {
                        chosen = index
                        break
                    }
                }
            }
            if chosen != nil { failedInARow = 0 }
            if wasAvailable && chosen != current {
                logger.warning(
                    hosts.candidates.count > 1
                        ? "the database host in use is unreachable or no longer acceptable; statements fail at once until one is"
                        : "the database is unreachable; statements fail at once until it is back",
                    metadata: ["host": "\(current)"]
                )
                state.withLock { $0.available = false }
                if chosen == nil {
                    startGeneration(
                        PostgresClient(configuration: hosts.candidates[current], backgroundLogger: poolLogger),
                        becomeAvailable: false
                    )
                }
            }
            if let chosen, !wasAvailable || chosen != current {
                logger.notice(
                    chosen == current ? "the database is back; statements flow again" : "switched to another database host; statements flow again",
                    metadata: ["host": "\(chosen)"]
                )
                state.withLock { $0.host = chosen }
                startGeneration(PostgresClient(configuration: hosts.candidates[chosen], backgroundLogger: poolLogger), becomeAvailable: true)
            }
        }
    }

    /// True when `client`'s server answers the probe within `timeout` and its state is acceptable.
    private func accepts(_ client: PostgresClient, timeout: Duration) async -> Bool {
        let attributes = hosts.sessionAttributes
        do {
            return try await withDeadline(timeout) {
                let rows = try await client.query(attributes == .any ? "SELECT false, false" : DatabaseHosts.probeQuery)
                for try await (inRecovery, readOnly) in rows.decode((Bool, Bool).self) {
                    return attributes.accepts(inRecovery: inRecovery, readOnly: readOnly)
                }
                return false
            }
        } catch {
            return false
        }
    }

    /// The index of the first host, in order, that answers and is acceptable; nil when none is.
    private func firstAcceptableHost(timeout: Duration) async -> Int? {
        for index in hosts.candidates.indices {
            var options = hosts.candidates[index]
            options.options.maximumConnections = 1
            options.options.connectTimeout = timeout
            let client = PostgresClient(configuration: options, backgroundLogger: Self.quiet)
            let run = Task { await client.run() }
            let accepted = await accepts(client, timeout: timeout)
            run.cancel()
            if accepted { return index }
        }
        return nil
    }

    /// True when `configuration`'s address (TCP or Unix socket) refuses a connection (or cannot be reached) before `timeout`:
    /// no server listens there. A server that accepts the connection, however slow to answer, is not refused;
    /// neither is a connect that times out (a loaded or partitioned host: the probes in a row decide).
    static func refuses(_ configuration: PostgresClient.Configuration, timeout: Duration) async -> Bool {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(Int64(timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)))
        do {
            let channel: any Channel
            if let path = configuration.unixSocketPath {
                channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
            } else if let host = configuration.host, let port = configuration.port {
                channel = try await bootstrap.connect(host: host, port: port).get()
            } else {
                return false
            }
            try? await channel.close()
            return false
        } catch ChannelError.connectTimeout {
            return false
        } catch {
            return true
        }
    }

    /// The probe's pool logs nothing: the watcher says what matters once per transition.
    private static let quiet = Logger(label: "ledger.database.probe", factory: { _ in SwiftLogNoOpLogHandler() })
}
