import Testing

@testable import LedgerCore

/// The ledger's bounded caches (issue 57): past the limit one entry goes per new one, the least recently used by a
/// CLOCK sweep, never the whole cache; what is kept answers as stored; the counts are what `/metrics` shows.
struct BoundedCacheTests {
    @Test func pastItsLimitItEvictsOneEntryPerNewOneAndKeepsTheRest() {
        var cache = BoundedCache<Int, String>(limit: 100)
        for key in 0..<250 {
            cache.put(key, "v\(key)")
            #expect(cache.count == min(key + 1, 100))
        }
        #expect(cache.statistics == CacheStatistics(entries: 100, limit: 100, hits: 0, misses: 0, evictions: 150))
        // Never emptied whole: the 99 entries stored before the last one are all still there, with their values.
        for key in 151..<250 { #expect(cache.peek(key) == "v\(key)", "\(key)") }
        for key in 0..<150 { #expect(cache.peek(key) == nil, "\(key)") }
    }

    @Test func whatIsUsedStaysWhileWhatIsNotIsEvicted() {
        var cache = BoundedCache<Int, Int>(limit: 10)
        for key in 0..<10 { cache.put(key, key * 10) }
        // Keys 0 … 4 are read again and again while 100 new keys pass through.
        for key in 100..<200 {
            for hot in 0..<5 { #expect(cache.get(hot) == hot * 10) }
            cache.put(key, key * 10)
        }
        for hot in 0..<5 { #expect(cache.peek(hot) == hot * 10, "\(hot)") }
        #expect(cache.peek(199) == 1_990)
        #expect(cache.count == 10)
        #expect(cache.evictions == 100)
        #expect(cache.hits == 500)
        #expect(cache.get(100) == nil)
        #expect(cache.misses == 1)
    }

    @Test func storingAKnownKeyReplacesItsValueWithoutEvicting() {
        var cache = BoundedCache<String, Int>(limit: 2)
        cache.put("a", 1)
        cache.put("b", 2)
        cache.put("a", 3)
        #expect(cache.get("a") == 3 && cache.get("b") == 2)
        #expect(cache.evictions == 0 && cache.count == 2)
        cache.put("c", 4)
        #expect(cache.count == 2 && cache.evictions == 1)
        #expect(cache.get("c") == 4)
    }
}
