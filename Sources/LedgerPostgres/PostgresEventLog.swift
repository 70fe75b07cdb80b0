import Foundation
import LedgerCore
import LedgerEngine
import Logging
import Metrics
import PostgresNIO
import Synchronization

/// The event log on PostgreSQL: the engine's ``EventLog`` port with the SQL the writer has always run —
/// `CALL ledger.append_batch_committed` (sql/0018) onto the head this process believes, else `ledger.append_batch`
/// (sql/0002, sql/0017, sql/0023) onto the head read under its lock — and the reads the loop and the runner need.
/// Keeps the believed head (``ChainLinks``) and answers nothing before its commit is durable where the writer's
/// statement timeout may have cut the wait for the standby (``HeadWatcher``).
package final class PostgresEventLog: EventLog {
    private let client: DatabaseClient
    private let store: EventStore
    private let statementTimeout: Duration?
    private let durability: HeadWatcher?
    private let logger: Logger
    private let metrics: WriterMetrics
    /// The head this log's last commit left (nil: not known; read under the lock).
    private let chainHead = Mutex<ChainHead?>(nil)

    /// The log alone, as a simulation's twin test or a tool runs it: no durable head, no statement timeout.
    package convenience init(client: DatabaseClient, logger: Logger) {
        self.init(client: client, statementTimeout: nil, durability: nil, logger: logger, metrics: WriterMetrics(factory: MetricsSystem.factory))
    }

    package init(client: DatabaseClient, statementTimeout: Duration?, durability: HeadWatcher?, logger: Logger, metrics: WriterMetrics) {
        self.client = client
        self.store = EventStore(client: client, logger: logger)
        self.statementTimeout = statementTimeout
        self.durability = durability
        self.logger = logger
        self.metrics = metrics
    }

    package func isStatementRejected(_ error: any Error) -> Bool { PostgresErrorMapping.isStatementRejected(error) }

    package func appendError(from error: any Error) -> AppendError { PostgresErrorMapping.appendError(from: error) }

    /// Runs the planned `ledger.append_batch` call and returns its answer (a few rows at most).
    ///
    /// The writer links the batch itself (``ChainLinks``, sql/0017) onto the head it believes: the
    /// head its own last commit left, so with one daemon a batch is one statement. When no head is
    /// believed (the first batch, after a failure, after another process wrote) or the statement
    /// answers that the head moved, the batch is linked onto the head read under its lock, in the
    /// same transaction, which cannot be overtaken: at most one extra attempt.
    package func commit(_ statement: BatchStatement, recordedAtMicros: Int64) async throws -> [BatchAnswerRow] {
        let believed = statement.events.count > 0 ? chainHead.withLock { $0 } : nil
        if let believed {
            let rows = try await executeLinked(statement, onto: believed, recordedAtMicros: recordedAtMicros)
            guard rows.contains(where: { $0.kind == "head" }) else { return rows }
            metrics.outcome("relinked").increment()
        }
        return try await executeLinked(statement, onto: nil, recordedAtMicros: recordedAtMicros)
    }

    /// Runs one batch, its events linked onto `head`: then in one round trip, `CALL ledger.append_batch_committed`
    /// (sql/0018), which appends and commits before it answers. With no head (nil) it reads the head with
    /// `FOR UPDATE` first, in an explicit transaction that calls `ledger.append_batch` and commits. Either way the
    /// answer is returned only once the batch is committed: callers are acknowledged on the commit, never on a
    /// statement's completion. The believed head moves only on a commit that appended; anything else (a
    /// refusal, an error, an unknown outcome) forgets it.
    private func executeLinked(_ statement: BatchStatement, onto head: ChainHead?, recordedAtMicros: Int64) async throws -> [BatchAnswerRow] {
        let events = statement.events
        let logger = self.logger
        do {
            let answer: [BatchAnswerRow]
            let links: ChainLinks?
            if let head, events.count > 0 {
                let linked = ChainLinks(events: events, onto: head, nowMicros: recordedAtMicros)
                let arguments = try Self.arguments(statement, linked)
                let calledAt = ContinuousClock.now
                let rows = try await client.query(
                    PostgresQuery(unsafeSQL: "CALL ledger.append_batch_committed(\(arguments.placeholders), NULL, NULL)", binds: arguments.binds),
                    logger: logger
                )
                var called: (Int64?, String?)?
                for try await row in rows.decode((Int64?, String?).self) { called = row }
                guard let (first, json) = called else { throw AppendError.storageFailure("ledger.append_batch_committed answered nothing") }
                answer = try Self.answerRows(firstPosition: first, json: json)
                links = linked
                if let timeout = statementTimeout, ContinuousClock.now - calledAt >= timeout, let first {
                    // The statement timeout may have cancelled the commit's wait for the standby (see Configuration).
                    guard let durability else { throw DatabaseUnavailableError.timedOut }
                    metrics.outcome("commit_wait_unsure").increment()
                    try await durability.ensureDurable(through: first + Int64(events.count) - 1)
                }
            } else {
                (answer, links) = try await client.withTransaction(logger: logger) { connection -> ([BatchAnswerRow], ChainLinks?) in
                    var links: ChainLinks?
                    if events.count > 0 {
                        links = ChainLinks(
                            events: events,
                            onto: try await Self.lockedHead(connection, logger: logger),
                            nowMicros: recordedAtMicros
                        )
                    }
                    let arguments = try Self.arguments(statement, links)
                    let rows = try await connection.query(
                        PostgresQuery(
                            unsafeSQL: """
                                SELECT kind, name, version, request_hash, result, first_position
                                FROM ledger.append_batch(\(arguments.placeholders))
                                """,
                            binds: arguments.binds
                        ),
                        logger: logger
                    )
                    var answer: [BatchAnswerRow] = []
                    for try await (kind, name, version, hash, result, first) in rows.decode(
                        (String, String?, Int64?, ByteBuffer?, String?, Int64?).self
                    ) {
                        answer.append(
                            BatchAnswerRow(
                                kind: kind,
                                name: name,
                                version: version,
                                requestHash: hash.map { Array($0.readableBytesView) },
                                result: result,
                                firstPosition: first
                            )
                        )
                    }
                    return (answer, links)
                }
            }
            let appended = answer.contains { $0.kind == "appended" }
            if let links, appended {
                chainHead.withLock { $0 = links.newHead }
            } else if !answer.isEmpty && !appended {
                chainHead.withLock { $0 = nil }
            }
            return answer
        } catch {
            chainHead.withLock { $0 = nil }
            throw error
        }
    }

    /// The 28 arguments of `ledger.append_batch` (and of `append_batch_committed` before its INOUT pair), in bind
    /// order, with their casts (sql/0023).
    private static func arguments(_ statement: BatchStatement, _ links: ChainLinks?) throws -> (placeholders: String, binds: PostgresBindings) {
        let keys = statement.keys
        let events = statement.events
        let rows = statement.rows
        var binds = PostgresBindings(capacity: 28)
        var placeholders: [String] = []
        func bind<Value: PostgresThrowingDynamicTypeEncodable>(_ value: Value?, _ type: String) throws {
            try binds.append(value)
            placeholders.append("$\(binds.count)::\(type)")
        }
        try bind(statement.checkStreams, "text[]")
        try bind(statement.checkVersions, "bigint[]")
        try bind(statement.probeKeys, "text[]")
        try bind(keys.keys, "text[]")
        try bind(keys.hashes.map { ByteBuffer(bytes: $0) }, "bytea[]")
        try bind(keys.first, "integer[]")
        try bind(keys.last, "integer[]")
        try bind(keys.streams, "text[]")
        try bind(events.streamIDs, "text[]")
        try bind(events.versions, "bigint[]")
        try bind(events.eventIDs, "uuid[]")
        try bind(events.types, "text[]")
        try bind(events.schemaVersions, "integer[]")
        try bind(events.data, "text[]")
        try bind(events.metadata, "text[]")
        try bind(events.effectiveMicros, "bigint[]")
        try bind(rows.projections, "text[]")
        try bind(rows.keys, "text[]")
        try bind(rows.versions, "bigint[]")
        try bind(rows.json, "text[]")
        try bind(rows.ordinals, "integer[]")
        try bind(statement.contacts.refs, "text[]")
        try bind(statement.contacts.json, "text[]")
        try bind(links?.head.position, "bigint")
        try bind(links.map { ByteBuffer(bytes: $0.head.hash) }, "bytea")
        try bind(links?.recordedAtMicros, "bigint")
        try bind((links?.prevHashes ?? []).map { ByteBuffer(bytes: $0) }, "bytea[]")
        try bind((links?.hashes ?? []).map { ByteBuffer(bytes: $0) }, "bytea[]")
        return (placeholders.joined(separator: ", "), binds)
    }

    /// `append_batch_committed`'s INOUT pair as `append_batch`'s rows: only the first position when the batch was
    /// appended and nothing else was said, else every row as JSON (sql/0018).
    static func answerRows(firstPosition: Int64?, json: String?) throws -> [BatchAnswerRow] {
        guard let json else {
            guard let firstPosition else { throw AppendError.storageFailure("ledger.append_batch_committed answered neither a position nor rows") }
            return [BatchAnswerRow(kind: "appended", name: nil, version: nil, requestHash: nil, result: nil, firstPosition: firstPosition)]
        }
        struct Row: Decodable {
            var kind: String
            var name: String?
            var version: Int64?
            var request_hash: String?
            var result: String?
            var first_position: Int64?
        }
        guard let rows = try? JSONDecoder().decode([Row].self, from: Data(json.utf8)) else {
            throw AppendError.storageFailure("ledger.append_batch_committed answered rows that do not decode")
        }
        return try rows.map { row in
            var hash: [UInt8]?
            if let hex = row.request_hash {
                guard let bytes = Hex.decode(hex) else { throw AppendError.storageFailure("a request hash that is not hex") }
                hash = bytes
            }
            return BatchAnswerRow(
                kind: row.kind,
                name: row.name,
                version: row.version,
                requestHash: hash,
                result: row.result,
                firstPosition: row.first_position
            )
        }
    }

    /// The head, locked until the transaction ends.
    private static func lockedHead(_ connection: PostgresConnection, logger: Logger) async throws -> ChainHead {
        let rows = try await connection.query(
            "SELECT position, hash, ledger.epoch_us(recorded_at) FROM ledger.head WHERE singleton FOR UPDATE",
            logger: logger
        )
        for try await (position, hash, recorded) in rows.decode((Int64, ByteBuffer, Int64).self) {
            return ChainHead(position: position, hash: Array(hash.readableBytesView), recordedAtMicros: recorded)
        }
        throw AppendError.storageFailure("the ledger head row is missing")
    }

    /// Current versions of streams, read without the lock (append_batch re-checks them under it).
    package func versions(of streams: [String]) async throws -> [String: Int64] {
        let rows = try await client.query(
            """
            SELECT s.id, coalesce((SELECT max(e.stream_version) FROM ledger.events e WHERE e.stream_id = s.id), 0)
            FROM unnest(\(streams)::text[]) AS s(id)
            """,
            logger: logger
        )
        var versions: [String: Int64] = [:]
        for try await (stream, version) in rows.decode((String, Int64).self) { versions[stream] = version }
        return versions
    }

    /// The events of `streams` after the given versions, in position order: all of each stream in one query when no
    /// version is given (``EventStore/readStreams(_:)``), else stream by stream after its version.
    package func read(_ streams: [StreamID], after versions: [StreamID: Int64]) async throws -> [RecordedEvent] {
        if versions.values.allSatisfy({ $0 <= 0 }) { return try await store.readStreams(streams) }
        var events: [RecordedEvent] = []
        for stream in Set(streams) { events += try await store.readStream(stream, after: versions[stream] ?? 0) }
        return events.sorted { $0.position < $1.position }
    }

    /// The head row as it stands (not locked).
    package func head() async throws -> ChainHead {
        let rows = try await client.query("SELECT position, hash, ledger.epoch_us(recorded_at) FROM ledger.head WHERE singleton", logger: logger)
        for try await (position, hash, recorded) in rows.decode((Int64, ByteBuffer, Int64).self) {
            return ChainHead(position: position, hash: Array(hash.readableBytesView), recordedAtMicros: recorded)
        }
        throw AppendError.storageFailure("the ledger head row is missing")
    }
}
