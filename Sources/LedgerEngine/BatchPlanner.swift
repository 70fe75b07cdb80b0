import Foundation
import LedgerCore
import LedgerMacros

/// The group-commit writer's decisions for one batch, as a pure state machine: requests and the
/// database's answers in, actions out, no I/O.
///
/// ``LedgerWriter`` performs the actions (reads, the `ledger.append_batch` statement, version-cache
/// updates) and feeds back what happened; everything it decides lives here, so that every branch
/// can be tested without PostgreSQL (`BatchPlannerTests`). One planner serves one batch:
///
/// 1. ``startAttempt(cached:)``: beliefs about every stream's version before the batch, from the
///    version cache, else from the caller's expectation (the database checks it anyway); a stream
///    appended with `.any` that the cache does not know has to be read: ``Action/loadVersions(_:)``,
///    answered by ``versionsLoaded(_:)``;
/// 2. the requests are decided in queue order against those beliefs (later requests see earlier
///    ones' versions) into a ``BatchPlan``: ``Action/execute(_:)``;
/// 3. ``batchAnswered(_:)`` interprets the statement's rows: when a belief was wrong nothing was
///    appended and the batch is decided again with what was learned (``Action/redecide(learned:)``,
///    then ``startAttempt(cached:)`` again, at most ``maximumAttempts`` times); otherwise every
///    request gets its result (``Action/complete(_:committed:)``).
package struct BatchPlanner: Sendable {
    /// A batch whose beliefs keep being overtaken by other processes gives up after this many tries.
    package static let maximumAttempts = 8

    /// What the writer has to do next.
    package enum Action: Equatable, Sendable {
        /// Read the current versions of these streams (nobody knows them), then call ``versionsLoaded(_:)``.
        case loadVersions([String])
        /// Run `ledger.append_batch` with the plan's statement, then call ``batchAnswered(_:)`` with its rows.
        case execute(BatchPlan)
        /// Some beliefs were wrong, so nothing was appended: store `learned` (stream → actual version)
        /// in the version cache, then call ``startAttempt(cached:)`` to decide the batch again.
        case redecide(learned: [String: Int64])
        /// The batch is done: one result per request, in queue order. `committed` is every stream's
        /// version after the batch, for the version cache.
        case complete([Result<AppendResult, AppendError>], committed: [String: Int64])
        /// The batch failed as a whole; every request gets this error.
        case fail(AppendError)
    }

    private enum State: Sendable {
        /// Waiting for the version cache's contents to start the next attempt.
        case waitingForCache(attemptsMade: Int)
        /// Waiting for the versions of the `.any` streams the cache did not know.
        case loadingVersions(attempt: Int, believed: [String: Int64])
        /// The statement is out; waiting for its rows.
        case executing(attempt: Int, BatchPlan)
        case finished
    }

    /// An idempotency record the database reported as already stored.
    private struct StoredKey: Sendable {
        var hash: [UInt8]
        var result: String
    }

    private var requests: [AppendRequest]
    /// Every stream the batch touches, once each, in queue order: the streams whose versions are
    /// believed, checked, and cached.
    package private(set) var streams: [String]
    private var state = State.waitingForCache(attemptsMade: 0)
    /// Survives re-decisions: once the database said a key is stored, its record decides the key.
    private var storedKeys: [String: StoredKey] = [:]

    package init(requests: [AppendRequest]) {
        self.requests = requests
        streams = Self.streams(of: requests)
    }

    /// Replaces the batch's requests before the next attempt (after ``Action/redecide(learned:)``): the writer's
    /// commands, decided again on what was learned. What the database said about keys still holds.
    package mutating func restart(with requests: [AppendRequest]) {
        guard case .waitingForCache = state else { preconditionFailure("BatchPlanner.restart(with:) in state \(state)") }
        self.requests = requests
        streams = Self.streams(of: requests)
    }

    /// Every stream `requests` append to or expect unchanged, once each, in queue order.
    private static func streams(of requests: [AppendRequest]) -> [String] {
        var seen = Set<String>()
        var streams: [String] = []
        for request in requests {
            for id in request.streams.map(\.streamID) + request.unchanged.map(\.streamID) where seen.insert(id.rawValue).inserted {
                streams.append(id.rawValue)
            }
        }
        return streams
    }

    /// Starts an attempt with what the version cache holds for ``streams``.
    package mutating func startAttempt(cached: [String: Int64]) -> Action {
        guard case .waitingForCache(let attemptsMade) = state else {
            preconditionFailure("BatchPlanner.startAttempt(cached:) in state \(state)")
        }
        guard attemptsMade < Self.maximumAttempts else {
            state = .finished
            return .fail(.contended(attempts: Self.maximumAttempts))
        }
        var believed: [String: Int64] = [:]
        var unknown: [String] = []
        for stream in requests.flatMap(\.streams) {
            let id = stream.streamID.rawValue
            guard believed[id] == nil else { continue }
            if let version = cached[id] {
                believed[id] = version
                continue
            }
            // Not cached: trust the caller's expectation (the database checks it); read only for `any`.
            switch stream.expectedVersion {
            case .noStream: believed[id] = 0
            case .exact(let version): believed[id] = version
            case .any: if !unknown.contains(id) { unknown.append(id) }
            }
        }
        // A stream expected unchanged: the cache's version, else the one the decision read (the database checks it).
        for request in requests {
            for stream in request.unchanged where believed[stream.streamID.rawValue] == nil {
                believed[stream.streamID.rawValue] = cached[stream.streamID.rawValue] ?? stream.version
            }
        }
        if !unknown.isEmpty {
            state = .loadingVersions(attempt: attemptsMade + 1, believed: believed)
            return .loadVersions(unknown)
        }
        return decide(attempt: attemptsMade + 1, believed: believed)
    }

    /// The current versions of the streams asked for by ``Action/loadVersions(_:)``.
    package mutating func versionsLoaded(_ versions: [String: Int64]) -> Action {
        guard case .loadingVersions(let attempt, var believed) = state else {
            preconditionFailure("BatchPlanner.versionsLoaded(_:) in state \(state)")
        }
        // A stream read here may also have had an exact expectation later in the batch: the read wins.
        believed.merge(versions) { _, loaded in loaded }
        return decide(attempt: attempt, believed: believed)
    }

    /// The rows `ledger.append_batch` answered for the plan of ``Action/execute(_:)``.
    package mutating func batchAnswered(_ rows: [BatchAnswerRow]) -> Action {
        guard case .executing(let attempt, let plan) = state else {
            preconditionFailure("BatchPlanner.batchAnswered(_:) in state \(state)")
        }
        var learned: [String: Int64] = [:]
        var beliefsWereWrong = false
        var firstPosition: Int64?
        for row in rows {
            switch row.kind {
            case "stale":
                beliefsWereWrong = true
                if let name = row.name, let version = row.version { learned[name] = version }
            case "key_exists":
                beliefsWereWrong = true
                if let name = row.name, let hash = row.requestHash, let result = row.result {
                    storedKeys[name] = StoredKey(hash: hash, result: result)
                }
            case "appended":
                firstPosition = row.firstPosition
            default:
                state = .finished
                return .fail(.storageFailure("ledger.append_batch answered \(row.kind)"))
            }
        }
        if beliefsWereWrong {
            state = .waitingForCache(attemptsMade: attempt)
            return .redecide(learned: learned)
        }
        state = .finished
        guard plan.statement.events.count == 0 || firstPosition != nil else {
            return .fail(.storageFailure("ledger.append_batch did not append"))
        }
        var results: [Result<AppendResult, AppendError>] = []
        results.reserveCapacity(plan.requests.count)
        for request in plan.requests {
            switch request {
            case .append(let firstOrdinal, let count, let streams):
                let first = (firstPosition ?? 0) + Int64(firstOrdinal - 1)
                results.append(.success(AppendResult(firstPosition: first, lastPosition: first + Int64(count - 1), streams: streams)))
            case .replay(let result):
                results.append(.success(result))
            case .sameAs(let index):
                // `index` is an accepted request earlier in this batch: its result, as a replay.
                results.append(
                    results[index].map { result in
                        var result = result
                        result.replayed = true
                        return result
                    }
                )
            case .refuse(let error):
                results.append(.failure(error))
            }
        }
        return .complete(results, committed: plan.versionsAfter)
    }

    private mutating func decide(attempt: Int, believed: [String: Int64]) -> Action {
        do {
            let plan = try plan(believed: believed)
            state = .executing(attempt: attempt, plan)
            return .execute(plan)
        } catch {
            // Only a stored result that does not decode can get here (the encoders take strings
            // and integers), and it fails the batch, as a storage failure would.
            state = .finished
            return .fail(error as? AppendError ?? .storageFailure("the batch could not be encoded"))
        }
    }

    /// Decides every request in queue order; later requests see earlier ones' versions.
    private func plan(believed: [String: Int64]) throws -> BatchPlan {
        var current = believed
        var plans: [RequestPlan] = []
        plans.reserveCapacity(requests.count)
        var firstIndexForKey: [String: Int] = [:]
        var events = BatchStatement.EventColumns()
        var keys = BatchStatement.KeyColumns()
        // One row per (projection, key): the newest wins, since one statement cannot update a row twice.
        var rows: [ProjectionRowID: (row: ProjectionRow, ordinal: Int)] = [:]
        var rowOrder: [ProjectionRowID] = []
        var statementContacts = BatchStatement.ContactColumns()

        requestLoop: for (index, request) in requests.enumerated() {
            if let idempotency = request.idempotency {
                if let record = storedKeys[idempotency.key] {
                    if record.hash == idempotency.requestHash {
                        plans.append(.replay(try Self.replay(record, key: idempotency.key)))
                    } else {
                        plans.append(.refuse(.idempotencyConflict(key: idempotency.key)))
                    }
                    continue
                }
                // Only accepted requests claim a key: a refused one appends nothing and stores no result.
                if let first = firstIndexForKey[idempotency.key] {
                    let sameRequest = requests[first].idempotency?.requestHash == idempotency.requestHash
                    plans.append(sameRequest ? .sameAs(first) : .refuse(.idempotencyConflict(key: idempotency.key)))
                    continue
                }
            }
            for stream in request.unchanged {
                let version = current[stream.streamID.rawValue] ?? 0
                if version != stream.version {
                    let expected: ExpectedVersion = stream.version == 0 ? .noStream : .exact(stream.version)
                    plans.append(.refuse(.versionConflict(stream: stream.streamID, expected: expected, actual: version)))
                    continue requestLoop
                }
            }
            for stream in request.streams {
                let version = current[stream.streamID.rawValue] ?? 0
                if !stream.expectedVersion.accepts(current: version) {
                    plans.append(.refuse(.versionConflict(stream: stream.streamID, expected: stream.expectedVersion, actual: version)))
                    continue requestLoop
                }
            }
            let firstOrdinal = events.count + 1
            var metadata = request.metadata
            if let idempotency = request.idempotency { metadata.idempotencyKey = idempotency.key }
            let metadataJSON = try LedgerJSON.string(metadata)  // the events' one JSON form
            var versions: [StreamVersion] = []
            var streamFirstOrdinal: [StreamID: Int] = [:]
            for stream in request.streams {
                streamFirstOrdinal[stream.streamID] = events.count + 1
                var version = current[stream.streamID.rawValue] ?? 0
                for event in stream.events {
                    version += 1
                    events.append(stream: stream.streamID, version: version, event: event, metadata: metadataJSON)
                }
                current[stream.streamID.rawValue] = version
                versions.append(StreamVersion(streamID: stream.streamID, version: version))
            }
            if let idempotency = request.idempotency {
                firstIndexForKey[idempotency.key] = index
                keys.keys.append(idempotency.key)
                keys.hashes.append(idempotency.requestHash)
                keys.first.append(Int32(firstOrdinal))
                keys.last.append(Int32(events.count))
                keys.streams.append(try LedgerJSON.string(versions))
            }
            for row in request.projections {
                let id = ProjectionRowID(projection: row.projection, key: row.key)
                if let earlier = rows[id] {
                    rows[id] = (row, earlier.ordinal)  // newest row, first creation point
                } else {
                    rowOrder.append(id)
                    rows[id] = (row, streamFirstOrdinal[row.stream] ?? firstOrdinal)
                }
            }
            for contact in request.contacts {
                statementContacts.refs.append(contact.ref)
                statementContacts.json.append(contact.json)
            }
            plans.append(.append(firstOrdinal: firstOrdinal, eventCount: events.count - firstOrdinal + 1, streams: versions))
        }

        var statement = BatchStatement()
        statement.keys = keys
        statement.events = events
        statement.contacts = statementContacts
        let checks = streams.compactMap { stream in believed[stream].map { (stream, $0) } }
        statement.checkStreams = checks.map(\.0)
        statement.checkVersions = checks.map(\.1)
        var probed = Set<String>()
        statement.probeKeys = requests.compactMap(\.idempotency?.key).filter { storedKeys[$0] == nil && probed.insert($0).inserted }
        for (row, ordinal) in rowOrder.compactMap({ rows[$0] }) {
            statement.rows.projections.append(row.projection)
            statement.rows.keys.append(row.key)
            statement.rows.versions.append(row.version)
            statement.rows.json.append(row.json)
            statement.rows.ordinals.append(Int32(ordinal))
        }
        return BatchPlan(requests: plans, statement: statement, versionsAfter: current)
    }

    /// The stored result of an earlier request with the same key, as this request's answer.
    private static func replay(_ record: StoredKey, key: String) throws(AppendError) -> AppendResult {
        try AppendResult.replaying(stored: record.result, key: key)
    }

    private struct ProjectionRowID: Hashable {
        var projection: String
        var key: String
    }
}

/// What the planner decided for one request of a batch.
package enum RequestPlan: Equatable, Sendable {
    /// Accepted: its events are ordinals `firstOrdinal ..< firstOrdinal + eventCount` of the batch,
    /// and its streams end at these versions.
    case append(firstOrdinal: Int, eventCount: Int, streams: [StreamVersion])
    /// Its idempotency key is stored with the same request hash: the stored result, replayed.
    case replay(AppendResult)
    /// Same key and hash as the accepted request at this index of the batch: that one's result, replayed.
    case sameAs(Int)
    /// Refused; nothing of it is appended.
    case refuse(AppendError)
}

/// One attempt's decisions: a plan per request, the statement that verifies and appends them, and
/// the streams' versions once it has committed.
package struct BatchPlan: Equatable, Sendable {
    package var requests: [RequestPlan]
    package var statement: BatchStatement
    /// Every stream of the batch (refused requests' streams too) → its version after the append.
    package var versionsAfter: [String: Int64]
}

/// The arguments of one `ledger.append_batch` call (sql/0002), array by array, in bind order.
package struct BatchStatement: Equatable, Sendable {
    /// Every stream the batch touched, with the version it was decided against.
    package var checkStreams: [String] = []
    package var checkVersions: [Int64] = []
    /// The batch's idempotency keys not known to be stored yet, once each.
    package var probeKeys: [String] = []
    package var keys = KeyColumns()
    package var events = EventColumns()
    package var rows = RowColumns()
    package var contacts = ContactColumns()

    package init() {}

    /// Idempotency records of the accepted requests: key, request hash, first and last event
    /// ordinal, and the stream versions as JSON (the stored result is built from them).
    package struct KeyColumns: Equatable, Sendable {
        package var keys: [String] = []
        package var hashes: [[UInt8]] = []
        package var first: [Int32] = []
        package var last: [Int32] = []
        package var streams: [String] = []

        package init() {}
    }

    /// The accepted events, the shape `ledger.append_events` takes.
    package struct EventColumns: Equatable, Sendable {
        package var streamIDs: [String] = []
        package var versions: [Int64] = []
        package var eventIDs: [UUID] = []
        package var types: [String] = []
        package var schemaVersions: [Int32] = []
        package var data: [String] = []
        package var metadata: [String] = []
        package var effectiveMicros: [Int64] = []

        package init() {}

        package var count: Int { eventIDs.count }

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

    /// Projection rows, one per (projection, key), with the ordinal of the event that created them.
    package struct RowColumns: Equatable, Sendable {
        package var projections: [String] = []
        package var keys: [String] = []
        package var versions: [Int64] = []
        package var json: [String] = []
        package var ordinals: [Int32] = []

        package init() {}
    }

    /// The shipping contacts of the accepted requests (sql/0023).
    package struct ContactColumns: Equatable, Sendable {
        package var refs: [String] = []
        package var json: [String] = []

        package init() {}
    }
}

/// One row of `ledger.append_batch`'s answer: `stale` (name = stream, version = actual),
/// `key_exists` (name = key, request hash, stored result) or `appended` (first position).
@MemberwiseInit
package struct BatchAnswerRow: Equatable, Sendable {
    package var kind: String
    package var name: String?
    package var version: Int64?
    package var requestHash: [UInt8]?
    package var result: String?
    package var firstPosition: Int64?
}
