import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The in-memory event log is the SQL log's twin: the same appends, committed at the same clock through the real
/// writer on PostgreSQL and through the engine's loop in memory, leave the same events with the same hashes and the
/// same head — so a simulator's head hash is the one the daemon would have written.
@Suite(.machine(.shared)) struct InMemoryChainTests {
    @Test func theSameAppendsAtTheSameTimesEndOnTheSameHeadInSQLAndInMemory() async throws {
        let db = try await TestDatabase.fresh()
        let requests = ChainSamples.requests(count: 30)
        let memory = InMemoryEventLog()
        let memoryClock = ManualClock(ChainSamples.start)
        for request in requests {
            _ = try await memory.append([request], clock: memoryClock)[0].get()
            memoryClock.advance(by: 0.0015)
        }

        try await db.withApp { client in
            let clock = ManualClock(ChainSamples.start)
            let writer = LedgerWriter(client: client, logger: TestCluster.logger, clock: clock)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await writer.run() }
                defer { group.cancelAll() }
                for request in requests {
                    _ = try await writer.append(request)  // one batch each: the writer answers only after the commit
                    clock.advance(by: 0.0015)
                }
            }
            let sql = try await EventStore(client: client, logger: TestCluster.logger).read(from: 1, limit: 1_000)
            let inMemory = await memory.events
            #expect(sql.count == inMemory.count && sql.count == requests.reduce(0) { $0 + $1.eventCount })
            for (stored, twin) in zip(sql, inMemory) {
                #expect(stored == twin, "position \(stored.position) differs")
            }
            let head = try await EventStore(client: client, logger: TestCluster.logger).head()
            let memoryHead = await memory.head()
            #expect(head.position == memoryHead.position && head.hash == memoryHead.hash)
            let report = try await ChainVerifier(client: client, logger: TestCluster.logger).verifyInDatabase()
            #expect(report.ok)
        }
    }

    /// The engine's loop on PostgresEventLog (today's SQL) and on InMemoryEventLog: batches of several requests,
    /// a replay, a stale expectation and a reused key answered alike, the same events, heads and reads.
    @Test func theSQLLogAndTheInMemoryLogAnswerEveryBatchAlike() async throws {
        let db = try await TestDatabase.fresh()
        let requests = ChainSamples.requests(count: 12)
        var reused = requests[4]
        reused.idempotency = IdempotencyKey(key: requests[0].idempotency!.key, for: reused)
        let batches: [[AppendRequest]] = [
            Array(requests[0..<3]), [requests[3]], [requests[0]], [requests[1]], [reused, requests[4], requests[5]],
            Array(requests[6..<12]),
        ]
        try await db.withApp { client in
            let sql = PostgresEventLog(client: client, logger: TestCluster.logger)
            let memory = InMemoryEventLog()
            let (sqlClock, memoryClock) = (ManualClock(ChainSamples.start), ManualClock(ChainSamples.start))
            for (n, batch) in batches.enumerated() {
                let fromSQL = try await sql.append(batch, clock: sqlClock)
                let fromMemory = try await memory.append(batch, clock: memoryClock)
                #expect(fromSQL == fromMemory, "batch \(n)")
                sqlClock.advance(by: 0.002)
                memoryClock.advance(by: 0.002)
            }
            let events = await memory.events
            #expect(try await EventStore(client: client, logger: TestCluster.logger).read(from: 1, limit: 1_000) == events)
            #expect(try await sql.head() == memory.head())
            let streams = ["sample-0", "sample-1", "sample-2"].map { StreamID($0)! }
            #expect(try await sql.versions(of: streams.map(\.rawValue) + ["nobody"]) == memory.versions(of: streams.map(\.rawValue) + ["nobody"]))
            let after = [streams[0]: Int64(2), streams[2]: 1]
            #expect(try await sql.read(streams, after: after) == memory.read(streams, after: after))

            var stale = BatchStatement()
            stale.checkStreams = ["sample-0", "sample-1"]
            stale.checkVersions = [0, 1]
            stale.probeKeys = [requests[0].idempotency!.key, "never-stored"]
            let sqlRows = try await sql.commit(stale, recordedAtMicros: sqlClock.now().epochMicroseconds)
            let memoryRows = try await memory.commit(stale, recordedAtMicros: memoryClock.now().epochMicroseconds)
            #expect(sqlRows.count == 3 && Set(sqlRows.map(\.kind)) == ["stale", "key_exists"])
            // The stored result is jsonb in SQL (its own spacing and key order): compared decoded.
            func decoded(_ rows: [BatchAnswerRow]) -> [String] {
                rows.map { row in
                    let result = row.result.flatMap { try? JSONDecoder().decode(AppendResult.self, from: Data($0.utf8)) }
                    return "\(row.kind) \(row.name ?? "") \(row.version ?? -1) \(row.requestHash ?? []) \(String(describing: result))"
                }
            }
            #expect(decoded(sqlRows) == decoded(memoryRows))
        }
    }
}
