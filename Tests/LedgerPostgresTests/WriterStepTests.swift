import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import Testing

/// The writer driven step by step (``LedgerWriter/commitQueued()``) instead of by its loop: the caller decides where
/// a batch ends — what a simulation's seed needs — and every request queued before a step is answered by it.
@Suite(.machine(.shared)) struct WriterStepTests {
    @Test func eachStepCommitsWhatWasQueuedAsOneBatchAndNothingMore() async throws {
        let db = try await TestDatabase.fresh()
        let requests = ChainSamples.requests(count: 5)
        try await db.withApp { client in
            let clock = ManualClock(ChainSamples.start)
            let writer = LedgerWriter(client: client, logger: TestCluster.logger, clock: clock)
            #expect(await writer.commitQueued() == false)
            try await withThrowingTaskGroup(of: AppendResult.self) { group in
                // Three requests, one step; then two, another step at a later time.
                for request in requests[0..<3] { group.addTask { try await writer.append(request) } }
                while writer.queuedCount < 3 { await Task.yield() }
                #expect(await writer.commitQueued())
                #expect(writer.queuedCount == 0)
                clock.advance(by: 1)
                for request in requests[3..<5] { group.addTask { try await writer.append(request) } }
                while writer.queuedCount < 2 { await Task.yield() }
                #expect(await writer.commitQueued())
                #expect(await writer.commitQueued() == false)
                var answered = 0
                for try await _ in group { answered += 1 }
                #expect(answered == 5)
            }
            let events = try await EventStore(client: client, logger: TestCluster.logger).read(from: 1, limit: 100)
            let first = requests[0..<3].reduce(0) { $0 + $1.eventCount }
            #expect(events.count == requests.reduce(0) { $0 + $1.eventCount })
            // One batch, one recorded_at: the first three requests' events at the start, the last two's a second later.
            #expect(Set(events.prefix(first).map(\.recordedAtMicros)) == [ChainSamples.start.epochMicroseconds])
            #expect(Set(events.dropFirst(first).map(\.recordedAtMicros)) == [ChainSamples.start.addingTimeInterval(1).epochMicroseconds])
        }
    }
}
