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
}
