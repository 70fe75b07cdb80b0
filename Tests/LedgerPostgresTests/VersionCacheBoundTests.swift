import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import Testing

/// The writer's stream-version cache (`LEDGERD_VERSION_CACHE_ENTRIES`) filled past its limit: it keeps the limit,
/// evicts one stream per new one, and the writer still decides every append right — an evicted stream's version is
/// read again, a wrong expectation is still refused.
@Suite(.machine(.shared)) struct VersionCacheBoundTests {
    @Test func pastItsLimitTheWriterRemembersTheLatestStreamsAndStillDecidesEveryAppendRight() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter(configuration: .init(versionCacheEntries: 3)) { writer, client in
            for n in 0..<8 {
                _ = try await writer.append(AppendRequest(stream: stream("bound-\(n)"), expectedVersion: .noStream, events: [sampleEvent(n)]))
                #expect(writer.versionCacheStatistics.entries == min(n + 1, 3))
            }
            let filled = writer.versionCacheStatistics
            #expect(filled.limit == 3 && filled.entries == 3 && filled.evictions == 5, "\(filled)")
            // An evicted stream: its version is read again, the append lands on version 2.
            let evicted = try await writer.append(AppendRequest(stream: stream("bound-0"), expectedVersion: .exact(1), events: [sampleEvent(8)]))
            #expect(evicted.streams.map(\.version) == [2])
            // A remembered one likewise, and a stale expectation on an evicted stream is refused with the truth.
            let kept = try await writer.append(AppendRequest(stream: stream("bound-7"), expectedVersion: .exact(1), events: [sampleEvent(9)]))
            #expect(kept.streams.map(\.version) == [2])
            await #expect(throws: AppendError.self) {
                try await writer.append(AppendRequest(stream: stream("bound-3"), expectedVersion: .exact(2), events: [sampleEvent(10)]))
            }
            #expect(writer.versionCacheStatistics.entries == 3)
            #expect(try await eventCount(client) == 10)
        }
    }
}
