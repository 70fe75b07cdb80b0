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
/// All four steps run in the database as one statement, `ledger.append_batch` (sql/0002): one
/// round trip per batch, so the head lock is held for the work itself, not for network chatter.
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

    /// The whole batch in one statement, `ledger.append_batch` (sql/0002): head lock, idempotency
    /// and version checks in queue order, chain, idempotency records. One round trip, and a single
    /// statement is its own transaction: all of it commits or none of it does.
    private func commitTransaction(_ requests: [AppendRequest]) async throws -> [Result<AppendResult, AppendError>] {
        var keys: [String] = [], hashes: [ByteBuffer] = []
        var appendRequests: [Int32] = [], appendStreams: [String] = [], appendExpected: [Int64] = [], appendCounts: [Int32] = []
        var columns = EventColumns()
        for (index, request) in requests.enumerated() {
            keys.append(request.idempotency?.key ?? "")
            hashes.append(ByteBuffer(bytes: request.idempotency?.requestHash ?? []))
            let metadata = try columns.encodeMetadata(request)
            for stream in request.streams {
                appendRequests.append(Int32(index + 1))
                appendStreams.append(stream.streamID.rawValue)
                switch stream.expectedVersion {
                case .any: appendExpected.append(-1)
                case .noStream: appendExpected.append(0)
                case .exact(let version): appendExpected.append(version)
                }
                appendCounts.append(Int32(stream.events.count))
                for event in stream.events { columns.append(event: event, metadata: metadata) }
            }
        }

        let rows = try await client.query(
            """
            SELECT request, outcome, first_position, last_position, versions, conflict_stream, conflict_version, same_as, result
            FROM ledger.append_batch(
                \(keys)::text[], \(hashes)::bytea[], \(appendRequests)::integer[], \(appendStreams)::text[],
                \(appendExpected)::bigint[], \(appendCounts)::integer[], \(columns.eventIDs)::uuid[], \(columns.types)::text[],
                \(columns.schemaVersions)::integer[], \(columns.data)::text[], \(columns.metadata)::text[],
                \(columns.effectiveMicros)::bigint[])
            """, logger: logger)

        var results = [Result<AppendResult, AppendError>](repeating: .failure(.storageFailure), count: requests.count)
        var sameAs: [(index: Int, first: Int)] = []
        let decoder = JSONDecoder()
        for try await (request, outcome, first, last, versions, conflictStream, conflictVersion, sameAsRequest, stored) in rows.decode(
            (Int32, String, Int64?, Int64?, [Int64]?, String?, Int64?, Int32?, String?).self)
        {
            let index = Int(request) - 1
            guard requests.indices.contains(index) else { continue }
            let original = requests[index]
            switch outcome {
            case "appended":
                guard let first, let last, let versions, versions.count == original.streams.count else {
                    throw AppendError.storageFailure("ledger.append_batch returned an incomplete result")
                }
                results[index] = .success(AppendResult(
                    firstPosition: first, lastPosition: last,
                    streams: zip(original.streams, versions).map { StreamVersion(streamID: $0.streamID, version: $1) }))
            case "replayed":
                guard let stored else { throw AppendError.storageFailure("stored idempotency result missing") }
                var result = try decoder.decode(AppendResult.self, from: Data(stored.utf8))
                result.replayed = true
                results[index] = .success(result)
            case "same_as":
                sameAs.append((index, Int(sameAsRequest ?? 0) - 1))
            case "idempotency_conflict":
                results[index] = .failure(.idempotencyConflict(key: original.idempotency?.key ?? ""))
            case "version_conflict":
                let stream = original.streams.first { $0.streamID.rawValue == conflictStream } ?? original.streams[0]
                results[index] = .failure(.versionConflict(
                    stream: stream.streamID, expected: stream.expectedVersion, actual: conflictVersion ?? 0))
            default:
                throw AppendError.storageFailure("ledger.append_batch returned outcome \(outcome)")
            }
        }
        for (index, first) in sameAs {
            guard results.indices.contains(first), var result = try? results[first].get() else {
                throw AppendError.storageFailure("ledger.append_batch returned an invalid same_as")
            }
            result.replayed = true
            results[index] = .success(result)
        }
        return results
    }
}

/// The batch's events as parallel arrays, the shape `ledger.append_events` takes.
private struct EventColumns {
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

    mutating func append(event: NewEvent, metadata: String) {
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
