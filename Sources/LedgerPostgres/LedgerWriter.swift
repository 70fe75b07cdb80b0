import Foundation
import LedgerCore
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The group-commit writer: the only way events enter the ledger.
///
/// Many concurrent callers `append`; one loop takes everything queued (up to a cap) and commits it
/// with **one** statement, `ledger.append_batch` (sql/0002), under the ledger-head row lock:
///
/// 1. the loop decides each request in queue order against what it believes — stream versions it
///    has seen committed (cached), idempotency keys it knows are stored: replay a stored result,
///    refuse a reused key or a version conflict, or accept it (later requests in the batch see
///    earlier ones' versions);
/// 2. `append_batch` takes the head lock — every writer of every process serialises there, so
///    positions are gapless and in commit order — and verifies those beliefs set-based: every
///    stream's version is what the loop believed, no key is already stored;
/// 3. if so it chains and inserts the accepted events (`ledger.append_events`) and stores the
///    idempotency records, in the same statement, so the batch commits whole or not at all;
///    if not (another process wrote a stream or used a key) it appends nothing and returns the
///    truth, and the loop decides the batch again.
///
/// One round trip per batch in the common case, and no per-request SQL. While one batch commits,
/// the next one queues up: throughput comes from batching, not from concurrency on the head row.
/// If the server rejects a batch (e.g. a payload that is not JSON), its requests are retried one
/// by one so that one bad request cannot fail its neighbours.
public final class LedgerWriter: Service, Sendable {
    public struct Configuration: Sendable {
        /// Most events committed in one transaction.
        public var maximumBatchEvents: Int

        public init(maximumBatchEvents: Int = 2_000) {
            self.maximumBatchEvents = maximumBatchEvents
        }
    }

    private struct Pending: Sendable {
        let request: AppendRequest
        let continuation: CheckedContinuation<AppendResult, any Error>
        let enqueuedAt: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var queue: [Pending] = []
        var waiter: CheckedContinuation<Void, Never>?
        var stopped = false
    }

    private let client: PostgresClient
    private let configuration: Configuration
    private let logger: Logger
    private let metrics: WriterMetrics
    private let state = Mutex(State())
    /// Touched only by the commit loop; a Mutex keeps the class Sendable at no contention cost.
    private let versionCache = Mutex(VersionCache(limit: 100_000))

    public init(
        client: PostgresClient, configuration: Configuration = .init(), logger: Logger,
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.client = client
        self.configuration = configuration
        self.logger = logger
        self.metrics = WriterMetrics(factory: metricsFactory)
    }

    /// Appends one request atomically and returns its positions and stream versions.
    ///
    /// Throws ``AppendError``: `.versionConflict` (retryable after reloading the stream),
    /// `.idempotencyConflict`, `.invalidAppend`, `.writerStopped` or `.storageFailure`.
    public func append(_ request: AppendRequest) async throws -> AppendResult {
        try request.validate()
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.queue.append(Pending(request: request, continuation: continuation, enqueuedAt: .now))
                if let waiter = state.waiter {
                    state.waiter = nil
                    waiter.resume()
                }
                return true
            }
            if !accepted { continuation.resume(throwing: AppendError.writerStopped) }
        }
    }

    /// Runs the commit loop until graceful shutdown or cancellation; requests already queued are
    /// committed before it returns.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                while let batch = await nextBatch() {
                    await commit(batch)
                }
            } onCancel: {
                self.stop()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    /// Stops taking appends; the loop drains what is queued and ends.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            if let waiter = state.waiter {
                state.waiter = nil
                waiter.resume()
            }
        }
    }

    /// The next batch, or nil once stopped with nothing left to commit.
    private func nextBatch() async -> [Pending]? {
        while true {
            enum Take { case batch([Pending]), finished, wait }
            let take = state.withLock { state -> Take in
                if !state.queue.isEmpty {
                    var events = 0
                    var count = 0
                    for pending in state.queue {
                        let n = pending.request.eventCount
                        if count > 0 && events + n > configuration.maximumBatchEvents { break }
                        events += n
                        count += 1
                    }
                    let batch = Array(state.queue.prefix(count))
                    state.queue.removeFirst(count)
                    return .batch(batch)
                }
                return state.stopped ? .finished : .wait
            }
            switch take {
            case .batch(let batch): return batch
            case .finished: return nil
            case .wait:
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.queue.isEmpty || state.stopped { return true }
                        state.waiter = waiter
                        return false
                    }
                    if resumeNow { waiter.resume() }
                }
            }
        }
    }

    private func commit(_ batch: [Pending]) async {
        let started = ContinuousClock.now
        do {
            let outcomes = try await commitTransaction(batch.map(\.request))
            let finished = ContinuousClock.now
            metrics.commitDuration.recordNanoseconds((finished - started).nanoseconds)
            metrics.batchSize.record(batch.reduce(0) { $0 + $1.request.eventCount })
            for (pending, outcome) in zip(batch, outcomes) {
                metrics.appendLatency.recordNanoseconds((finished - pending.enqueuedAt).nanoseconds)
                switch outcome {
                case .success(let result):
                    if !result.replayed { metrics.appendedEvents.increment(by: pending.request.eventCount) }
                    metrics.outcome(result.replayed ? "replayed" : "appended").increment()
                case .failure(let error):
                    metrics.outcome(error == .versionConflict ? "version_conflict" : "idempotency_conflict").increment()
                }
                pending.continuation.resume(with: outcome)
            }
        } catch {
            if batch.count > 1 && PostgresErrorMapping.isStatementRejected(error) {
                logger.warning("batch rejected by the database; retrying its requests one by one",
                               metadata: ["requests": "\(batch.count)", "error": "\(String(reflecting: error))"])
                for pending in batch { await commit([pending]) }
                return
            }
            let mapped = PostgresErrorMapping.appendError(from: error)
            logger.error("append failed", metadata: ["error": "\(String(reflecting: error))"])
            metrics.outcome("failed").increment()
            for pending in batch { pending.continuation.resume(throwing: mapped) }
        }
    }

    private enum Plan {
        case append(firstOrdinal: Int, eventCount: Int, streams: [StreamVersion])
        case replay(AppendResult)
        case sameAs(Int)
        case refuse(AppendError)
    }

    /// Decides the batch against what the writer believes (cached stream versions, known keys),
    /// then asks `ledger.append_batch` (sql/0002) to verify those beliefs under the head lock and
    /// append — one round trip, one statement, so all of it commits or none of it does. When a
    /// belief was wrong (another process wrote a stream, or a key was already used), nothing is
    /// appended: the writer learns the truth from the answer and decides the batch again.
    private func commitTransaction(_ requests: [AppendRequest]) async throws -> [Result<AppendResult, AppendError>] {
        var storedKeys: [String: (hash: [UInt8], result: String)] = [:]
        for _ in 0..<Self.maximumAttempts {
            // 1. Beliefs: the version of every stream before this batch.
            var believed: [String: Int64] = [:]
            var unknown: [String] = []
            let cached = versionCache.withLock { cache in
                requests.flatMap(\.streams).compactMap { stream in cache[stream.streamID.rawValue].map { (stream.streamID.rawValue, $0) } }
            }
            for (stream, version) in cached { believed[stream] = version }
            for stream in requests.flatMap(\.streams) where believed[stream.streamID.rawValue] == nil {
                // Not cached: trust the caller's expectation (the database checks it); load only for `any`.
                switch stream.expectedVersion {
                case .noStream: believed[stream.streamID.rawValue] = 0
                case .exact(let version): believed[stream.streamID.rawValue] = version
                case .any: unknown.append(stream.streamID.rawValue)
                }
            }
            if !unknown.isEmpty {
                for (stream, version) in try await loadVersions(Array(Set(unknown))) { believed[stream] = version }
            }

            // 2. Decide every request in queue order; later requests see earlier ones' versions.
            var current = believed
            var plans: [Plan] = []
            plans.reserveCapacity(requests.count)
            var firstIndexForKey: [String: Int] = [:]
            var columns = EventColumns()
            var keyColumns = KeyColumns()
            // One row per (projection, key): the newest wins, since one statement cannot update a row twice.
            var rows: [String: (row: ProjectionRow, ordinal: Int)] = [:]
            var rowOrder: [String] = []
            requestLoop: for (index, request) in requests.enumerated() {
                if let idempotency = request.idempotency {
                    if let record = storedKeys[idempotency.key] {
                        if record.hash == idempotency.requestHash {
                            var result = try JSONDecoder().decode(AppendResult.self, from: Data(record.result.utf8))
                            result.replayed = true
                            plans.append(.replay(result))
                        } else {
                            plans.append(.refuse(.idempotencyConflict(key: idempotency.key)))
                        }
                        continue
                    }
                    if let first = firstIndexForKey[idempotency.key] {
                        let sameRequest = requests[first].idempotency?.requestHash == idempotency.requestHash
                        plans.append(sameRequest ? .sameAs(first) : .refuse(.idempotencyConflict(key: idempotency.key)))
                        continue
                    }
                }
                for stream in request.streams {
                    let version = current[stream.streamID.rawValue] ?? 0
                    if !stream.expectedVersion.accepts(current: version) {
                        plans.append(.refuse(.versionConflict(
                            stream: stream.streamID, expected: stream.expectedVersion, actual: version)))
                        continue requestLoop
                    }
                }
                let firstOrdinal = columns.count + 1
                let metadata = try columns.encodeMetadata(request)
                var versions: [StreamVersion] = []
                var streamFirstOrdinal: [StreamID: Int] = [:]
                for stream in request.streams {
                    streamFirstOrdinal[stream.streamID] = columns.count + 1
                    var version = current[stream.streamID.rawValue] ?? 0
                    for event in stream.events {
                        version += 1
                        columns.append(stream: stream.streamID, version: version, event: event, metadata: metadata)
                    }
                    current[stream.streamID.rawValue] = version
                    versions.append(StreamVersion(streamID: stream.streamID, version: version))
                }
                if let idempotency = request.idempotency {
                    firstIndexForKey[idempotency.key] = index
                    try keyColumns.append(idempotency, first: firstOrdinal, last: columns.count, streams: versions)
                }
                for row in request.projections {
                    let id = row.projection + "\u{0}" + row.key
                    if let earlier = rows[id] {
                        rows[id] = (row, earlier.ordinal)  // newest row, first creation point
                    } else {
                        rowOrder.append(id)
                        rows[id] = (row, streamFirstOrdinal[row.stream] ?? firstOrdinal)
                    }
                }
                plans.append(.append(firstOrdinal: firstOrdinal, eventCount: columns.count - firstOrdinal + 1, streams: versions))
            }

            // 3. Verify and append in the database.
            let checkStreams = Array(believed.keys)
            let checkVersions = checkStreams.map { believed[$0]! }
            let probeKeys = Array(Set(requests.compactMap(\.idempotency?.key).filter { storedKeys[$0] == nil }))
            let projectionRows = rowOrder.compactMap { rows[$0] }
            let answer = try await client.query(
                """
                SELECT kind, name, version, request_hash, result, first_position FROM ledger.append_batch(
                    \(checkStreams)::text[], \(checkVersions)::bigint[], \(probeKeys)::text[],
                    \(keyColumns.keys)::text[], \(keyColumns.hashes)::bytea[], \(keyColumns.first)::integer[],
                    \(keyColumns.last)::integer[], \(keyColumns.streams)::text[],
                    \(columns.streamIDs)::text[], \(columns.versions)::bigint[], \(columns.eventIDs)::uuid[],
                    \(columns.types)::text[], \(columns.schemaVersions)::integer[], \(columns.data)::text[],
                    \(columns.metadata)::text[], \(columns.effectiveMicros)::bigint[],
                    \(projectionRows.map(\.row.projection))::text[], \(projectionRows.map(\.row.key))::text[],
                    \(projectionRows.map(\.row.version))::bigint[], \(projectionRows.map(\.row.json))::text[],
                    \(projectionRows.map { Int32($0.ordinal) })::integer[])
                """, logger: logger)
            var firstPosition: Int64?
            var beliefsWereWrong = false
            for try await (kind, name, version, hash, result, first) in answer.decode(
                (String, String?, Int64?, ByteBuffer?, String?, Int64?).self)
            {
                switch kind {
                case "stale":
                    beliefsWereWrong = true
                    if let name, let version { versionCache.withLock { $0.store(name, version) } }
                case "key_exists":
                    beliefsWereWrong = true
                    if let name, let hash, let result { storedKeys[name] = (Array(hash.readableBytesView), result) }
                case "appended":
                    firstPosition = first
                default:
                    throw AppendError.storageFailure("ledger.append_batch answered \(kind)")
                }
            }
            if beliefsWereWrong {
                metrics.outcome("redecided").increment()
                continue
            }
            guard columns.count == 0 || firstPosition != nil else {
                throw AppendError.storageFailure("ledger.append_batch did not append")
            }

            // 4. Answers, and what the writer now knows.
            versionCache.withLock { cache in for (stream, version) in current { cache.store(stream, version) } }
            var results: [Result<AppendResult, AppendError>] = []
            results.reserveCapacity(requests.count)
            for plan in plans {
                switch plan {
                case .append(let firstOrdinal, let count, let streams):
                    let first = (firstPosition ?? 0) + Int64(firstOrdinal - 1)
                    results.append(.success(AppendResult(firstPosition: first, lastPosition: first + Int64(count - 1), streams: streams)))
                case .replay(let result):
                    results.append(.success(result))
                case .sameAs(let index):
                    var result = try results[index].get()
                    result.replayed = true
                    results.append(.success(result))
                case .refuse(let error):
                    results.append(.failure(error))
                }
            }
            return results
        }
        throw AppendError.storageFailure("the ledger is too contended: \(Self.maximumAttempts) attempts found other writers first")
    }

    /// A batch whose beliefs keep being overtaken by other processes gives up after this many tries.
    static let maximumAttempts = 8

    /// Current versions of streams, read without the lock (append_batch re-checks them under it).
    private func loadVersions(_ streams: [String]) async throws -> [(String, Int64)] {
        let rows = try await client.query(
            """
            SELECT s.id, coalesce((SELECT max(e.stream_version) FROM ledger.events e WHERE e.stream_id = s.id), 0)
            FROM unnest(\(streams)::text[]) AS s(id)
            """, logger: logger)
        var versions: [(String, Int64)] = []
        for try await (stream, version) in rows.decode((String, Int64).self) {
            versions.append((stream, version))
            versionCache.withLock { $0.store(stream, version) }
        }
        return versions
    }
}

/// Stream versions the writer has seen committed, so that a batch can be decided without reading
/// first. Bounded: past the limit it starts afresh (a miss costs one read, never a wrong answer,
/// because the database verifies every belief).
struct VersionCache: Sendable {
    private var versions: [String: Int64] = [:]
    let limit: Int

    init(limit: Int) { self.limit = limit }

    subscript(stream: String) -> Int64? { versions[stream] }

    mutating func store(_ stream: String, _ version: Int64) {
        if versions.count >= limit && versions[stream] == nil { versions.removeAll(keepingCapacity: true) }
        versions[stream] = version
    }
}

/// Idempotency records of the accepted requests, as parallel arrays.
private struct KeyColumns {
    var keys: [String] = []
    var hashes: [ByteBuffer] = []
    var first: [Int32] = []
    var last: [Int32] = []
    var streams: [String] = []

    mutating func append(_ idempotency: IdempotencyKey, first: Int, last: Int, streams: [StreamVersion]) throws {
        keys.append(idempotency.key)
        hashes.append(ByteBuffer(bytes: idempotency.requestHash))
        self.first.append(Int32(first))
        self.last.append(Int32(last))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        self.streams.append(String(decoding: try encoder.encode(streams), as: UTF8.self))
    }
}

/// The batch's events as parallel arrays, the shape `ledger.append_events` takes.
private struct EventColumns {
    var streamIDs: [String] = []
    var versions: [Int64] = []
    var eventIDs: [UUID] = []
    var types: [String] = []
    var schemaVersions: [Int32] = []
    var data: [String] = []
    var metadata: [String] = []
    var effectiveMicros: [Int64] = []

    var count: Int { eventIDs.count }

    func encodeMetadata(_ request: AppendRequest) throws -> String {
        var metadata = request.metadata
        if let idempotency = request.idempotency { metadata.idempotencyKey = idempotency.key }
        return try LedgerJSON.string(metadata)
    }

    mutating func append(stream: StreamID, version: Int64, event: NewEvent, metadata: String) {
        streamIDs.append(stream.rawValue)
        versions.append(version)
        eventIDs.append(event.eventID)
        types.append(event.type)
        schemaVersions.append(event.schemaVersion)
        data.append(event.data)
        self.metadata.append(metadata)
        effectiveMicros.append(event.effectiveAt.epochMicroseconds)
    }
}

/// The writer's metrics: appended events, outcomes, batch sizes, commit and append latency.
struct WriterMetrics: Sendable {
    let appendedEvents: Counter
    let batchSize: Recorder
    let commitDuration: Metrics.Timer
    let appendLatency: Metrics.Timer
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
        appendedEvents = Counter(label: "ledger_appended_events_total", factory: factory)
        batchSize = Recorder(label: "ledger_batch_events", aggregate: true, factory: factory)
        commitDuration = Metrics.Timer(label: "ledger_commit_duration_seconds", factory: factory)
        appendLatency = Metrics.Timer(label: "ledger_append_latency_seconds", factory: factory)
    }

    func outcome(_ outcome: String) -> Counter {
        Counter(label: "ledger_append_requests_total", dimensions: [("outcome", outcome)], factory: factory)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
