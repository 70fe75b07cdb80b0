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
/// as **one** PostgreSQL transaction under the ledger-head row lock:
///
/// 1. lock the head row (`FOR UPDATE`) — every writer of every process serialises here, so
///    positions are gapless and in commit order;
/// 2. look up the batch's idempotency keys and its streams' current versions;
/// 3. decide each request in queue order: replay a stored result, refuse a reused key or a version
///    conflict, or accept it (later requests in the batch see earlier ones' versions);
/// 4. append all accepted events with `ledger.append_events` (positions + hash chain) and store
///    the idempotency records, then commit and answer every caller.
///
/// While one batch commits, the next one queues up: throughput comes from batching, not from
/// concurrency on the head row. If a batch's transaction is rejected by the server, its requests
/// are retried one by one so that one bad request cannot fail its neighbours.
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
        case append(eventOffset: Int, eventCount: Int, streams: [StreamVersion])
        case replay(AppendResult)
        case sameAs(Int)
        case refuse(AppendError)
    }

    /// One transaction for the whole batch. Returns one outcome per request, in order.
    private func commitTransaction(_ requests: [AppendRequest]) async throws -> [Result<AppendResult, AppendError>] {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            // 1. The head lock: from here to commit no other appender can run.
            try await connection.query("SELECT position FROM ledger.head WHERE singleton FOR UPDATE", logger: logger)
                .collect()

            // 2. Stored idempotency records for the batch's keys.
            let keys = Array(Set(requests.compactMap { $0.idempotency?.key }))
            var stored: [String: (hash: [UInt8], result: String)] = [:]
            if !keys.isEmpty {
                let rows = try await connection.query(
                    "SELECT key, request_hash, result::text FROM ledger.idempotency_keys WHERE key = ANY(\(keys))",
                    logger: logger)
                for try await (key, hash, result) in rows.decode((String, ByteBuffer, String).self) {
                    stored[key] = (Array(hash.readableBytesView), result)
                }
            }

            // 3. Current versions of the batch's streams.
            let streamIDs = Array(Set(requests.flatMap { $0.streams.map(\.streamID.rawValue) }))
            var current: [String: Int64] = [:]
            let versionRows = try await connection.query(
                """
                SELECT s.id, coalesce((SELECT max(e.stream_version) FROM ledger.events e WHERE e.stream_id = s.id), 0)
                FROM unnest(\(streamIDs)::text[]) AS s(id)
                """, logger: logger)
            for try await (id, version) in versionRows.decode((String, Int64).self) {
                current[id] = version
            }

            // 4. Decide every request in queue order.
            var plans: [Plan] = []
            plans.reserveCapacity(requests.count)
            var firstIndexForKey: [String: Int] = [:]
            var columns = EventColumns()
            let decoder = JSONDecoder()
            requestLoop: for (index, request) in requests.enumerated() {
                if let idempotency = request.idempotency {
                    if let record = stored[idempotency.key] {
                        if record.hash == idempotency.requestHash {
                            var result = try decoder.decode(AppendResult.self, from: Data(record.result.utf8))
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
                if let idempotency = request.idempotency { firstIndexForKey[idempotency.key] = index }
                let offset = columns.count
                let metadata = try columns.encodeMetadata(request)
                var versions: [StreamVersion] = []
                for stream in request.streams {
                    var version = current[stream.streamID.rawValue] ?? 0
                    for event in stream.events {
                        version += 1
                        columns.append(stream: stream.streamID, version: version, event: event, metadata: metadata)
                    }
                    current[stream.streamID.rawValue] = version
                    versions.append(StreamVersion(streamID: stream.streamID, version: version))
                }
                plans.append(.append(eventOffset: offset, eventCount: columns.count - offset, streams: versions))
            }

            // 5. Append the accepted events: positions and chain links assigned in SQL.
            var firstPosition: Int64 = 0
            if columns.count > 0 {
                let rows = try await connection.query(
                    """
                    SELECT first_position FROM ledger.append_events(
                        \(columns.streamIDs)::text[], \(columns.versions)::bigint[], \(columns.eventIDs)::uuid[],
                        \(columns.types)::text[], \(columns.schemaVersions)::integer[], \(columns.data)::text[],
                        \(columns.metadata)::text[], \(columns.effectiveMicros)::bigint[])
                    """, logger: logger)
                for try await position in rows.decode(Int64.self) { firstPosition = position }
            }

            // 6. Results, and idempotency records in the same transaction.
            var results: [Result<AppendResult, AppendError>] = []
            results.reserveCapacity(requests.count)
            var keyColumns: (keys: [String], hashes: [ByteBuffer], first: [Int64], last: [Int64], results: [String]) =
                ([], [], [], [], [])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            for (index, plan) in plans.enumerated() {
                switch plan {
                case .append(let offset, let count, let streams):
                    let result = AppendResult(
                        firstPosition: firstPosition + Int64(offset),
                        lastPosition: firstPosition + Int64(offset + count - 1),
                        streams: streams)
                    results.append(.success(result))
                    if let idempotency = requests[index].idempotency {
                        keyColumns.keys.append(idempotency.key)
                        keyColumns.hashes.append(ByteBuffer(bytes: idempotency.requestHash))
                        keyColumns.first.append(result.firstPosition)
                        keyColumns.last.append(result.lastPosition)
                        keyColumns.results.append(String(decoding: try encoder.encode(result), as: UTF8.self))
                    }
                case .replay(let result):
                    results.append(.success(result))
                case .sameAs(let first):
                    var result = try results[first].get()
                    result.replayed = true
                    results.append(.success(result))
                case .refuse(let error):
                    results.append(.failure(error))
                }
            }
            if !keyColumns.keys.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO ledger.idempotency_keys (key, request_hash, first_position, last_position, result, recorded_at)
                    SELECT k, h, f, l, r::jsonb, now()
                    FROM unnest(\(keyColumns.keys)::text[], \(keyColumns.hashes)::bytea[], \(keyColumns.first)::bigint[],
                                \(keyColumns.last)::bigint[], \(keyColumns.results)::text[]) AS u(k, h, f, l, r)
                    """, logger: logger)
            }
            return results
        }
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

    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func encodeMetadata(_ request: AppendRequest) throws -> String {
        var metadata = request.metadata
        if let idempotency = request.idempotency { metadata.idempotencyKey = idempotency.key }
        return String(decoding: try encoder.encode(metadata), as: UTF8.self)
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
