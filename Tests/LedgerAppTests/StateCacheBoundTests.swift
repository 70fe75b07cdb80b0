import Foundation
import HummingbirdTesting
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// The services' order and hold state cache (`LEDGERD_STATE_CACHE_ENTRIES`) filled past its limit by payments: it
/// holds the limit, evicts one state per new one (it was emptied whole: every hot state lost at once, issue 57), the
/// latest states are still cached, every order reads as it does from a store that never evicted, and `/metrics` shows
/// the cache's size, limit and counts.
@Suite(.machine(.shared)) struct StateCacheBoundTests {
    @Test func pastItsLimitTheStateCacheKeepsTheLatestStatesAndAnswersEveryOrderRight() async throws {
        try await TestApp.withApp(seed: true, environment: ["LEDGERD_STATE_CACHE_ENTRIES": "5"]) { client, services in
            let aggregates = services.payments.aggregates
            var ids: [OrderID] = []
            for _ in 0..<6 { ids.append(OrderID(try await StorefrontDriver().placeOrder(client))!) }
            let filled = aggregates.cacheStatistics
            #expect(filled.limit == 5 && filled.entries == 5 && filled.evictions > 0, "\(filled)")
            // The last payment's order and hold are still remembered: read without a fresh fold, they are hits.
            let hits = aggregates.cacheStatistics.hits
            #expect(try await aggregates.order(ids[5], fresh: false)?.version != nil)
            #expect(try await aggregates.hold(ids[5], fresh: false)?.version != nil)
            #expect(aggregates.cacheStatistics.hits == hits + 2)
            // Every order and hold, evicted or not, reads as a store that never evicted reads it.
            let unbounded = AggregateStore(writer: services.writer, store: services.store, cacheLimit: 1_000)
            for id in ids {
                #expect(try await aggregates.order(id) == unbounded.order(id), "\(id)")
                #expect(try await aggregates.hold(id) == unbounded.hold(id), "\(id)")
            }
            #expect(aggregates.cacheStatistics.entries == 5)
            let text = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(TestApp.auditorKey)"]) {
                String(buffer: $0.body)
            }
            #expect(text.contains(#"ledger_cache_entries{cache="aggregate_states"} 5"#))
            #expect(text.contains(#"ledger_cache_limit{cache="aggregate_states"} 5"#))
            #expect(text.contains(#"ledger_cache_limit{cache="stream_versions"} 100000"#))
            for name in ["entries", "limit", "hits_total", "misses_total", "evictions_total"] {
                #expect(text.contains("# HELP ledger_cache_\(name) ") && !text.contains("# HELP ledger_cache_\(name) ledgerd metric"))
            }
        }
    }
}
