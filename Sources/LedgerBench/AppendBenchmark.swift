import Foundation
import Histogram
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO

/// `ledgerd bench append`: how fast the ledger appends, and how that compares with the raw
/// ingest ceiling of the same PostgreSQL.
///
/// Phase 1 (ledger): N producers each append one small JSON event at a time through the
/// group-commit writer (head lock, version checks, hash chain, durable commit) for a fixed time.
/// Batch sizes are read back from the log itself (every batch shares one `recorded_at`).
/// Phase 2 (raw ceiling): the same N producers insert the same kind of rows into a scratch table
/// with no chain, no checks and no triggers, by plain multi-row INSERTs over the same pool.
/// Runs on a durable (fsync on) cluster of its own under `--data-dir` (default `./.ledgerd-bench`),
/// in a database it drops and recreates each run: never against a real ledger.
@MemberwiseInit
public struct AppendBenchmark: Sendable {
    public struct Options: Sendable {
        public var producers: Int = 64
        public var seconds: Int = 10
        public var streams: Int = 1_000
        public var rawRowsPerInsert: Int = 100
        public var poolSize: Int = 20
        /// Run the ledger phase a second time with the transparency log's builder extending the Merkle tree and signing
        /// a checkpoint every `treeInterval` (after building the tree of the first phase's events, timed).
        public var tree: Bool = false
        public var treeInterval: Duration = .milliseconds(250)
        public init() {}
    }

    public struct PhaseResult: Sendable {
        public var rows: Int
        public var seconds: Double
        public var p50Micros: UInt64
        public var p99Micros: UInt64
        public var ratePerSecond: Double { Double(rows) / seconds }
    }

    public struct Report: Sendable {
        public var ledger: PhaseResult
        public var raw: PhaseResult
        public var batches: Int
        public var batchP50: Int
        public var batchP90: Int
        public var batchP99: Int
        public var batchMax: Int
        public var chainVerified: Bool
        /// With `tree`: the ledger phase with the builder running, the time to build the tree of the first phase's
        /// events, and the builder's cycles (extend + sign) in that phase.
        public var withTree: PhaseResult? = nil
        public var treeBuild: (leaves: UInt64, seconds: Double)? = nil
        public var treeCycles: (count: Int, p50Millis: Double, p99Millis: Double, maxMillis: Double, interval: Duration)? = nil

        public var treeText: String {
            guard let withTree, let treeBuild, let treeCycles else { return "" }
            let ratio = withTree.ratePerSecond / ledger.ratePerSecond * 100
            let interval = Double(treeCycles.interval.components.attoseconds) / 1e15 + Double(treeCycles.interval.components.seconds) * 1e3
            return """

                tree build:    \(treeBuild.leaves) leaves of the first phase in \(String(format: "%.2f", treeBuild.seconds)) s \
                = \(String(format: "%.0f", Double(treeBuild.leaves) / max(treeBuild.seconds, 1e-9))) leaves/s
                with the tree: \(withTree.rows) events in \(String(format: "%.1f", withTree.seconds)) s = \
                \(String(format: "%.0f", withTree.ratePerSecond)) events/s; append latency p50 \(withTree.p50Micros) µs, p99 \(withTree.p99Micros) µs
                tree on / off: \(String(format: "%.1f", ratio)) %
                checkpoints:   \(treeCycles.count) cycles (extend + sign) every \(String(format: "%.0f", interval)) ms, \
                cycle p50 \(String(format: "%.1f", treeCycles.p50Millis)) ms, p99 \(String(format: "%.1f", treeCycles.p99Millis)) ms, \
                max \(String(format: "%.1f", treeCycles.maxMillis)) ms: an acknowledged event is in a signed checkpoint within \
                interval + 2 × cycle ≤ \(String(format: "%.0f", interval + 2 * treeCycles.p99Millis)) ms (p99; the pass under way \
                when it was acknowledged may have read the head before it, then the wait, then the pass that signs it)
                """
        }

        public var text: String {
            func f(_ rate: Double) -> String { String(format: "%.0f", rate) }
            let ratio = ledger.ratePerSecond / raw.ratePerSecond * 100
            return """
                ledger append: \(ledger.rows) events in \(String(format: "%.1f", ledger.seconds)) s = \(f(ledger.ratePerSecond)) events/s; \
                append latency p50 \(ledger.p50Micros) µs, p99 \(ledger.p99Micros) µs
                  batches: \(batches), events per batch p50 \(batchP50), p90 \(batchP90), p99 \(batchP99), max \(batchMax); \
                chain verified: \(chainVerified)
                raw ceiling:   \(raw.rows) rows in \(String(format: "%.1f", raw.seconds)) s = \(f(raw.ratePerSecond)) rows/s; \
                INSERT latency p50 \(raw.p50Micros) µs, p99 \(raw.p99Micros) µs
                ledger / raw:  \(String(format: "%.1f", ratio)) %
                """
        }
    }

    public let options: Options
    public let dataDirectory: URL
    public let logger: Logger

    static let database = "ledger_bench"

    /// Starts (or reuses) the durable benchmark cluster under `dataDirectory`, recreates the
    /// benchmark database with every migration, and lets `ledger_app` log in. Returns the cluster
    /// (stop it when `alreadyRunning` is false) and client configurations by user.
    static func prepareCluster(
        dataDirectory: URL,
        migrations: [Migration],
        poolSize: Int,
        logger: Logger
    ) async throws -> (EmbeddedPostgres, alreadyRunning: Bool, @Sendable (String) -> PostgresClient.Configuration) {
        let embedded = EmbeddedPostgres(configuration: .init(dataDirectory: dataDirectory, durable: true), logger: logger)
        let (endpoint, alreadyRunning) = try embedded.start()
        let config: @Sendable (String, String) -> PostgresClient.Configuration = { user, database in
            var configuration = PostgresClient.Configuration(
                unixSocketPath: endpoint.socketPath,
                username: user,
                password: nil,
                database: database
            )
            configuration.options.maximumConnections = poolSize
            return configuration
        }
        do {
            try await withPostgresClient(configuration: config(endpoint.superuser, "postgres"), logger: logger) { client in
                try await client.query("DROP DATABASE IF EXISTS \(unescaped: Self.database) WITH (FORCE)", logger: logger)
                try await client.query("CREATE DATABASE \(unescaped: Self.database)", logger: logger)
            }
            try await withPostgresClient(configuration: config(endpoint.superuser, Self.database), logger: logger) { client in
                try await Migrator(migrations: migrations, logger: logger).migrate(client: client)
                try await client.query("ALTER ROLE ledger_app LOGIN", logger: logger)
            }
        } catch {
            if !alreadyRunning { try? embedded.stop() }
            throw error
        }
        return (embedded, alreadyRunning, { config($0, Self.database) })
    }

    public func run(migrations: [Migration]) async throws -> Report {
        let (embedded, alreadyRunning, configFor) = try await Self.prepareCluster(
            dataDirectory: dataDirectory,
            migrations: migrations,
            poolSize: options.poolSize,
            logger: logger
        )
        defer { if !alreadyRunning { try? embedded.stop() } }
        let options = self.options
        let superuser = embedded.endpoint.superuser
        func config(_ user: String, _ database: String) -> PostgresClient.Configuration { configFor(user) }
        let logger = self.logger
        _ = try await withPostgresClient(configuration: config(superuser, Self.database), logger: logger) { client in
            try await client.query(
                """
                CREATE TABLE public.bench_raw (
                    position bigserial PRIMARY KEY, stream_id text NOT NULL, stream_version bigint NOT NULL,
                    event_id uuid NOT NULL, type text NOT NULL, schema_version integer NOT NULL, data jsonb NOT NULL,
                    metadata jsonb NOT NULL, effective_at timestamptz NOT NULL, recorded_at timestamptz NOT NULL)
                """,
                logger: logger
            )
        }

        // Phase 1: the ledger.
        let ledger = try await withPostgresClient(configuration: config("ledger_app", Self.database), logger: logger) { client in
            let writer = LedgerWriter(client: client, logger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await writer.run() }
                defer { group.cancelAll() }
                return try await Self.drive(producers: options.producers, seconds: options.seconds) { producer, i in
                    let stream = StreamID("bench-\((producer * 7919 + i) % options.streams)")!
                    _ = try await writer.append(
                        AppendRequest(
                            stream: stream,
                            expectedVersion: .any,
                            events: [NewEvent(type: "BenchEventRecorded", data: Self.payload(producer, i), effectiveAt: Date())]
                        )
                    )
                    return 1
                }
            }
        }
        logger.info("ledger phase done; verifying the chain and reading batch sizes")
        let (batches, verified) = try await withPostgresClient(configuration: config(superuser, Self.database), logger: logger) { client in
            var sizes: [Int] = []
            for try await size in try await client.query(
                "SELECT count(*) FROM ledger.events GROUP BY recorded_at ORDER BY 1",
                logger: logger
            ).decode(Int64.self) {
                sizes.append(Int(size))
            }
            let report = try await ChainVerifier(client: client, logger: logger).verifyInDatabase()
            return (sizes, report.ok)
        }

        // Phase 2: the raw ceiling.
        let raw = try await withPostgresClient(configuration: config(superuser, Self.database), logger: logger) { client in
            try await Self.drive(producers: options.producers, seconds: options.seconds) { producer, i in
                let n = options.rawRowsPerInsert
                var streams: [String] = []
                var versions: [Int64] = []
                var ids: [UUID] = []
                var data: [String] = []
                for k in 0..<n {
                    streams.append("bench-\((producer * 7919 + i * n + k) % options.streams)")
                    versions.append(Int64(i * n + k + 1))
                    ids.append(UUID.newRandom())
                    data.append(Self.payload(producer, i * n + k))
                }
                try await client.query(
                    """
                    INSERT INTO public.bench_raw (stream_id, stream_version, event_id, type, schema_version, data, metadata, effective_at, recorded_at)
                    SELECT s, v, e, 'BenchEventRecorded', 1, d::jsonb, '{}'::jsonb, now(), now()
                    FROM unnest(\(streams)::text[], \(versions)::bigint[], \(ids)::uuid[], \(data)::text[]) AS u(s, v, e, d)
                    """,
                    logger: logger
                )
                return n
            }
        }

        // Phase 1b: the ledger again, with the transparency log kept (the tree of phase 1 built first, timed).
        var withTree: PhaseResult?
        var treeBuild: (leaves: UInt64, seconds: Double)?
        var treeCycles: (count: Int, p50Millis: Double, p99Millis: Double, maxMillis: Double, interval: Duration)?
        if options.tree {
            let interval = options.treeInterval
            (withTree, treeBuild, treeCycles) = try await withPostgresClient(configuration: config("ledger_app", Self.database), logger: logger) {
                client in
                let log = try TransparencyLog(
                    client: client,
                    origin: "bench.ledgerd/log",
                    key: CheckpointKey.generate(),
                    watcher: HeadWatcher(client: client, pollInterval: .seconds(1), logger: logger),
                    logger: logger
                )
                let clock = ContinuousClock()
                let started = clock.now
                let leaves = try await log.build()
                let built = (leaves, Self.seconds(clock.now - started))
                let writer = LedgerWriter(client: client, logger: logger)
                return try await withThrowingTaskGroup(of: [Double].self) { group in
                    group.addTask {
                        try? await writer.run()
                        return []
                    }
                    group.addTask {
                        // The builder's loop (TransparencyLogBuilder), timed cycle by cycle.
                        var cycles: [Double] = []
                        while !Task.isCancelled {
                            let began = clock.now
                            do { _ = try await log.checkpoint() } catch { break }
                            cycles.append(Self.seconds(clock.now - began) * 1_000)
                            try? await Task.sleep(for: interval)
                        }
                        return cycles
                    }
                    let phase = try await Self.drive(producers: options.producers, seconds: options.seconds) { producer, i in
                        let stream = StreamID("bench-tree-\((producer * 7919 + i) % options.streams)")!
                        _ = try await writer.append(
                            AppendRequest(
                                stream: stream,
                                expectedVersion: .any,
                                events: [NewEvent(type: "BenchEventRecorded", data: Self.payload(producer, i), effectiveAt: Date())]
                            )
                        )
                        return 1
                    }
                    group.cancelAll()
                    var cycles: [Double] = []
                    for try await result in group { cycles += result }
                    let sorted = cycles.sorted()
                    func pct(_ p: Int) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * p / 100)] }
                    return (phase, built, (sorted.count, pct(50), pct(99), sorted.last ?? 0, interval))
                }
            }
        }

        let sorted = batches.sorted()
        func pct(_ p: Int) -> Int { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * p / 100)] }
        return Report(
            ledger: ledger,
            raw: raw,
            batches: sorted.count,
            batchP50: pct(50),
            batchP90: pct(90),
            batchP99: pct(99),
            batchMax: sorted.last ?? 0,
            chainVerified: verified,
            withTree: withTree,
            treeBuild: treeBuild,
            treeCycles: treeCycles
        )
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func payload(_ producer: Int, _ i: Int) -> String {
        #"{"order_id": "bench-\#(producer)-\#(i)", "sku": "pen", "quantity": 1, "amount": "25.00", "currency": "USD"}"#
    }

    /// Runs `producers` concurrent loops of `operation` for `seconds`; counts rows and times each call.
    static func drive(
        producers: Int,
        seconds: Int,
        _ operation: @escaping @Sendable (Int, Int) async throws -> Int
    ) async throws -> PhaseResult {
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .seconds(seconds)
        let (rows, histogram) = try await withThrowingTaskGroup(of: (Int, Histogram<UInt64>).self) { group in
            for producer in 0..<producers {
                group.addTask {
                    var histogram = Histogram<UInt64>(highestTrackableValue: 120_000_000)
                    var rows = 0
                    var i = 0
                    while clock.now < deadline {
                        let began = clock.now
                        rows += try await operation(producer, i)
                        let (s, atto) = (clock.now - began).components
                        _ = histogram.record(UInt64(s * 1_000_000 + atto / 1_000_000_000_000))
                        i += 1
                    }
                    return (rows, histogram)
                }
            }
            var total = 0
            var merged = Histogram<UInt64>(highestTrackableValue: 120_000_000)
            for try await (rows, histogram) in group {
                total += rows
                merged.add(histogram)
            }
            return (total, merged)
        }
        let (s, atto) = (clock.now - start).components
        let elapsedSeconds = Double(s) + Double(atto) / 1e18
        return PhaseResult(
            rows: rows,
            seconds: elapsedSeconds,
            p50Micros: histogram.valueAtPercentile(50),
            p99Micros: histogram.valueAtPercentile(99)
        )
    }
}
