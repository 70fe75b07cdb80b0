import Foundation
import Histogram
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import Logging
import PostgresNIO

/// `ledgerd bench asof`: the inventory and a product as of points spread over a large ledger, read
/// from the inventory snapshots (sql/0013).
///
/// 1. Builds (or reuses) a ledger of `events` events in the embedded cluster of its own data
///    directory (default `./.ledgerd-bench-asof`) with ``AuditBenchmark``'s generator (12 products,
///    orders opened, captured 5,000 orders later and shipped 20,000 orders later: 20,000 open
///    reservations at any point). Holds are authorized at the generation's start and expire 7 days
///    later, after every measured instant, as in a ledger whose expiry sweeper runs.
/// 2. Writes the snapshots every `every` events (``InventorySnapshots/catchUp()``, as the daemon's
///    snapshotter does) and reports the time and the table's size.
/// 3. Times `GET /inventory?as_of=<position>`, `?as_of=<time>` and `GET /products/{id}?as_of=<position>`
///    in process (the snapshot, the fold after it, the rows) at random points.
/// 4. Compares `check` of those answers with the fold from position 1 (slow on a large ledger).
public struct AsOfBenchmark: Sendable {
    public struct Options: Sendable {
        public var events = 10_000_000
        public var every: Int64 = 10_000
        public var samples = 100
        public var check = 2
        public var batchEvents = 2_000
        public init() {}
    }

    public let options: Options
    public let configuration: LedgerConfiguration
    public let logger: Logger

    public init(options: Options, configuration: LedgerConfiguration, logger: Logger) {
        self.options = options
        self.configuration = configuration
        self.logger = logger
    }

    public func run(output: @Sendable (String) -> Void) async throws {
        let database = try await LedgerDatabase.prepare(configuration, logger: logger)
        defer { database.stop() }
        let options = self.options
        let logger = self.logger
        var generator = AuditBenchmark.Options()
        generator.batchEvents = options.batchEvents
        let audit = AuditBenchmark(options: generator, configuration: configuration, logger: logger)
        try await withPostgresClient(hosts: database.appConfiguration, logger: logger) { client in
            let store = EventStore(client: client, logger: logger)
            var head = try await store.head().position
            if head == 0 {
                try await audit.seedCatalog(client: client)
                head = try await store.head().position
            }
            if head < Int64(options.events) {
                output("generating \(Int64(options.events) - head) events (head \(head)) …")
                let started = ContinuousClock.now
                let generated = try await audit.generate(
                    client: client,
                    store: store,
                    until: Int64(options.events),
                    authorizedAt: Date(),
                    output: output
                )
                let seconds = AuditBenchmark.seconds(ContinuousClock.now - started)
                output(String(format: "generated %d events in %.0f s (%.0f events/s)", generated, seconds, Double(generated) / seconds))
                _ = try await withPostgresClient(hosts: database.ownerConfiguration, logger: logger) { owner in
                    try await owner.query("ANALYZE ledger.events", logger: logger)
                }
            }
            head = try await store.head().position
            output("ledger: \(head) events; \(ProcessInfo.processInfo.activeProcessorCount) cores")

            let state = StateHistory(client: client, snapshotEvery: options.every, logger: logger)
            var started = ContinuousClock.now
            let written = try await state.snapshots.catchUp()
            var seconds = AuditBenchmark.seconds(ContinuousClock.now - started)
            let (count, bytes) = try await Self.snapshotTable(client, logger: logger)
            output(
                String(
                    format: "snapshots: wrote %d in %.1f s; the table holds %d (every %d events), %.1f MiB",
                    written,
                    seconds,
                    count,
                    options.every,
                    Double(bytes) / 1_048_576
                )
            )

            var rng = SystemRandomNumberGenerator()
            let points = (0..<options.samples).map { _ in Int64.random(in: 1...head, using: &rng) }
            // Warm the connections once.
            _ = try await state.inventory(asOf: .position(points[0]))

            var byPosition = Histogram<UInt64>(highestTrackableValue: 600_000_000)
            var byTime = Histogram<UInt64>(highestTrackableValue: 600_000_000)
            var product = Histogram<UInt64>(highestTrackableValue: 600_000_000)
            var times: [Int64] = []
            let hot = DemoCatalog.products[0].id.rawValue
            for position in points {
                var t0 = ContinuousClock.now
                let answer = try await state.inventory(asOf: .position(position))
                _ = byPosition.record(AuditBenchmark.micros(ContinuousClock.now - t0))
                times.append(try require(answer.asOf).micros)
                t0 = ContinuousClock.now
                _ = try await state.product(hot, asOf: .position(position))
                _ = product.record(AuditBenchmark.micros(ContinuousClock.now - t0))
            }
            // Where the time goes, at the same points: reading and decoding the nearest snapshot, and
            // the whole history (that plus the fold of the events after it).
            var snapshotRead = Histogram<UInt64>(highestTrackableValue: 600_000_000)
            var historyFold = Histogram<UInt64>(highestTrackableValue: 600_000_000)
            var snapshotBytes = 0
            for position in points {
                var t0 = ContinuousClock.now
                if let stored = try await state.snapshots.store.snapshots(atOrBefore: position, limit: 1).first {
                    _ = try InventoryHistory(snapshot: stored.state)
                    snapshotBytes = max(snapshotBytes, stored.state.count)
                }
                _ = snapshotRead.record(AuditBenchmark.micros(ContinuousClock.now - t0))
                t0 = ContinuousClock.now
                _ = try await state.snapshots.history(through: position)
                _ = historyFold.record(AuditBenchmark.micros(ContinuousClock.now - t0))
            }
            for micros in times {
                let t0 = ContinuousClock.now
                _ = try await state.inventory(asOf: .time(micros: micros))
                _ = byTime.record(AuditBenchmark.micros(ContinuousClock.now - t0))
            }
            output(
                AuditBenchmark.line("GET /inventory?as_of=<position> (snapshot + fold, in process)", byPosition) + ", \(points.count) random points"
            )
            output(AuditBenchmark.line("GET /inventory?as_of=<time>     (snapshot + fold, in process)", byTime))
            output(AuditBenchmark.line("GET /products/\(hot)?as_of=<position>", product))
            output(AuditBenchmark.line("  of which: the nearest snapshot read and decoded", snapshotRead) + ", largest \(snapshotBytes) bytes")
            output(AuditBenchmark.line("  of which: snapshot + fold of the events after it", historyFold))

            for position in points.prefix(options.check) {
                started = ContinuousClock.now
                let full = try await state.inventoryByFullFold(asOf: .position(position))
                seconds = AuditBenchmark.seconds(ContinuousClock.now - started)
                let snapshot = try await state.inventory(asOf: .position(position))
                guard full.json == snapshot.json else {
                    output("MISMATCH at position \(position): the snapshot answer differs from the fold from position 1")
                    throw BenchmarkFailure("as-of by snapshot differs from the full fold at position \(position)")
                }
                output(String(format: "position %d: snapshot answer = fold from position 1 (which took %.1f s)", position, seconds))
            }
        }
    }

    static func snapshotTable(_ client: DatabaseClient, logger: Logger) async throws -> (Int64, Int64) {
        let rows = try await client.query(
            "SELECT count(*), pg_total_relation_size('ledger.inventory_snapshots') FROM ledger.inventory_snapshots",
            logger: logger
        )
        for try await (count, bytes) in rows.decode((Int64, Int64).self) { return (count, bytes) }
        return (0, 0)
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw BenchmarkFailure("missing value") }
    return value
}
