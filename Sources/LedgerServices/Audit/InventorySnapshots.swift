import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import ServiceLifecycle

/// The inventory's history at any position, from the nearest sound snapshot and the events after
/// it; the writing of snapshots as the log grows; and their audit (each rebuilt from the log).
///
/// **Spacing.** A snapshot holds every open reservation, so it grows with the unshipped orders (a
/// day's load that ships nothing: 161 KB at position 10,000, 9.6 MB at 1,720,000). Written at a fixed
/// stride its cost per event would grow all day. So the next snapshot comes ``spacing(afterSnapshotOf:)``
/// events after the last: at least `every`, and at least the last one's bytes divided by
/// `bytesPerEvent`. Writing snapshots then costs at most `bytesPerEvent` bytes per event (plus one
/// snapshot per `every` events while they are small), and an as-of read, which already decodes the
/// snapshot's bytes, folds at most as many events as those bytes buy. `bytesPerEvent` 0: a fixed
/// stride of `every`.
///
/// A snapshot is used only when its bytes hash to its stored digest and it names the log's event at
/// its position (``InventorySnapshotStore/Stored/defect``); otherwise the read goes on from an
/// earlier one (or from position 1) and logs why. A forged snapshot with a recomputed digest passes
/// that check; ``verify()`` (`ledgerd audit snapshots`) finds it by rebuilding.
public struct InventorySnapshots: Sendable {
    public let store: InventorySnapshotStore
    /// The fewest events between snapshots.
    public let every: Int64
    /// Snapshot bytes written per event at most, once snapshots outgrow `every` (0: a fixed stride).
    public let bytesPerEvent: Int64
    let events: EventStore
    let logger: Logger

    public init(client: DatabaseClient, every: Int64, bytesPerEvent: Int64 = Self.defaultBytesPerEvent, logger: Logger) {
        self.store = InventorySnapshotStore(client: client, logger: logger)
        self.events = EventStore(client: client, logger: logger)
        self.every = max(1, every)
        self.bytesPerEvent = max(0, bytesPerEvent)
        self.logger = logger
    }

    /// `LEDGERD_SNAPSHOT_BYTES_PER_EVENT`'s default.
    public static let defaultBytesPerEvent: Int64 = 64

    /// Events from a snapshot of `bytes` bytes to the next one: `every`, or the bytes amortized at
    /// `bytesPerEvent` (rounded up) when that is more.
    public func spacing(afterSnapshotOf bytes: Int) -> Int64 {
        guard bytesPerEvent > 0 else { return every }
        return max(every, (Int64(bytes) + bytesPerEvent - 1) / bytesPerEvent)
    }

    /// How many defective snapshots a read skips before it folds from position 1.
    static let skipLimit = 8

    /// The inventory's history after the event at `position`. With `lapsingBy`, a read's instant: only
    /// the reservations that can lapse by then are restored from the snapshot (a partial history,
    /// ``InventoryHistory/init(snapshot:reservationsExpiringBy:)``), which is all a read needs.
    public func history(through position: Int64, lapsingBy micros: Int64? = nil) async throws -> InventoryHistory {
        var history = try await start(atOrBefore: position, lapsingBy: micros)
        try await fold(&history, through: position)
        return history
    }

    /// The nearest sound snapshot at or before `position`, restored (an empty history when none is).
    func start(atOrBefore position: Int64, lapsingBy micros: Int64?) async throws -> InventoryHistory {
        var below = position
        for _ in 0..<Self.skipLimit {
            // One at a time: a snapshot can be megabytes, and the nearest is almost always sound.
            guard let stored = try await store.snapshots(atOrBefore: below, limit: 1).first else { break }
            below = stored.position - 1
            if let defect = stored.defect {
                logger.error("inventory snapshot skipped", metadata: ["position": "\(stored.position)", "reason": "\(defect)"])
                continue
            }
            do {
                let history = try InventoryHistory(snapshot: stored.state, reservationsExpiringBy: micros)
                guard history.position == stored.position else {
                    logger.error(
                        "inventory snapshot skipped",
                        metadata: ["position": "\(stored.position)", "reason": "it says position \(history.position)"]
                    )
                    continue
                }
                return history
            } catch {
                logger.error("inventory snapshot skipped", metadata: ["position": "\(stored.position)", "reason": "\(error)"])
            }
        }
        return InventoryHistory()
    }

    /// Folds the history's events after its position, through `position`, one window of `every` at a time.
    func fold(_ history: inout InventoryHistory, through position: Int64) async throws {
        while history.position < position {
            let upper = min(position, history.position + max(every, 10_000))
            for (at, event) in try await store.historyEvents(after: history.position, through: upper) { history.apply(event, at: at) }
            history.advance(to: upper)
        }
    }

    /// The history folded from position 1, ignoring every snapshot (what an auditor rebuilds).
    public func fullFold(through position: Int64) async throws -> InventoryHistory {
        var history = InventoryHistory()
        try await fold(&history, through: position)
        return history
    }

    /// Writes the snapshots missing up to the head, each ``spacing(afterSnapshotOf:)`` events after
    /// the one before (the first at `every`). Returns how many it wrote.
    @discardableResult
    public func catchUp() async throws -> Int {
        let head = try await events.head().position
        let last = try await store.last()
        var next = last.map { $0.position + spacing(afterSnapshotOf: $0.bytes) } ?? every
        guard next <= head else { return 0 }
        var history = try await history(through: last?.position ?? 0)
        var written = 0
        while next <= head {
            for (at, event) in try await store.historyEvents(after: history.position, through: next) { history.apply(event, at: at) }
            history.advance(to: next)
            let bytes = try history.snapshotBytes()
            if try await store.insert(position: next, state: bytes) { written += 1 }
            history = history.asSnapshot
            next += spacing(afterSnapshotOf: bytes.count)
        }
        return written
    }

    /// Every stored snapshot rebuilt from the log, in order, and compared byte for byte.
    public struct Report: Sendable, CustomStringConvertible {
        public var checked = 0
        /// Positions whose stored snapshot differs from the rebuild, or fails its own checks, with why.
        public var bad: [(position: Int64, reason: String)] = []
        public var ok: Bool { bad.isEmpty }
        public var description: String {
            ok
                ? "ok: \(checked) inventory snapshots rebuilt from the log and identical"
                : "NOT OK: \(bad.count) of \(checked) inventory snapshots differ from the log: "
                    + bad.prefix(10).map { "\($0.position) (\($0.reason))" }.joined(separator: ", ")
        }
    }

    public func verify() async throws -> Report {
        var report = Report()
        var history = InventoryHistory()
        for position in try await store.positions() {
            try await fold(&history, through: position)
            report.checked += 1
            let rebuilt = try history.snapshotBytes()
            guard let stored = try await store.snapshots(atOrBefore: position, limit: 1).first, stored.position == position else {
                report.bad.append((position, "missing"))
                continue
            }
            if let defect = stored.defect {
                report.bad.append((position, defect))
            } else if stored.state != rebuilt {
                report.bad.append((position, "its state is not the log's"))
            }
            history = history.asSnapshot
        }
        return report
    }
}

/// Writes inventory snapshots as the log grows: at start and then every `interval`.
public struct InventorySnapshotter: Service {
    public init(snapshots: InventorySnapshots, interval: Duration, logger: Logger, jobs: JobMetrics = JobMetrics()) {
        self.snapshots = snapshots
        self.interval = interval
        self.logger = logger
        self.jobs = jobs
    }

    let snapshots: InventorySnapshots
    let interval: Duration
    let logger: Logger
    let jobs: JobMetrics

    public func run() async throws {
        let (snapshots, logger) = (snapshots, logger)
        await PeriodicJob("inventory snapshot", metric: .inventorySnapshot, wait: .afterEachPass(interval), jobs: jobs, logger: logger).run {
            let written = try await snapshots.catchUp()
            if written > 0 { logger.debug("inventory snapshots written", metadata: ["count": "\(written)"]) }
        }
    }
}
