/// A map of at most `limit` entries that, once full, evicts one entry for each new one: the first it finds not used
/// since the sweep last passed it (CLOCK, an approximation of least recently used at O(1) per operation).
///
/// The ledger's caches were emptied whole at their limit (issue 57): a busy daemon lost every hot state at once, each
/// time its open orders outgrew the limit, and refolded them from the log — a cost that came back again and again in
/// one daemon's life. Evicted piece by piece, what is still used stays. Counts its hits, misses and evictions for
/// `/metrics` (`ledger_cache_*`). A value: the owner keeps it under its own lock.
public struct BoundedCache<Key: Hashable, Value> {
    public let limit: Int
    private var slots: [Key: Int] = [:]
    private var keys: [Key] = []
    private var values: [Value] = []
    /// Set by a use, cleared by the sweep: a slot the sweep finds clear has not been used for a whole lap.
    private var used: [Bool] = []
    private var hand = 0
    public private(set) var hits = 0
    public private(set) var misses = 0
    public private(set) var evictions = 0

    public init(limit: Int) {
        precondition(limit > 0, "a bounded cache holds at least one entry")
        self.limit = limit
    }

    public var count: Int { keys.count }

    /// The value for `key`, counted as a hit or a miss, and marked used.
    public mutating func get(_ key: Key) -> Value? {
        guard let slot = slots[key] else {
            misses += 1
            return nil
        }
        hits += 1
        used[slot] = true
        return values[slot]
    }

    /// The value for `key`, neither counted nor marked (for reads that are not the cache's business).
    public func peek(_ key: Key) -> Value? { slots[key].map { values[$0] } }

    /// Stores `value` for `key`; when the cache is full and `key` new, evicts one other entry.
    public mutating func put(_ key: Key, _ value: Value) {
        if let slot = slots[key] {
            values[slot] = value
            used[slot] = true
            return
        }
        guard keys.count == limit else {
            slots[key] = keys.count
            keys.append(key)
            values.append(value)
            used.append(false)
            return
        }
        while used[hand] {
            used[hand] = false
            hand = (hand + 1) % limit
        }
        slots[keys[hand]] = nil
        evictions += 1
        keys[hand] = key
        values[hand] = value
        slots[key] = hand
        hand = (hand + 1) % limit
    }

    public var statistics: CacheStatistics {
        CacheStatistics(entries: count, limit: limit, hits: hits, misses: misses, evictions: evictions)
    }
}

extension BoundedCache: Sendable where Key: Sendable, Value: Sendable {}

/// A bounded cache's size and counts, as `/metrics` shows them.
public struct CacheStatistics: Sendable, Hashable {
    public var entries: Int
    public var limit: Int
    public var hits: Int
    public var misses: Int
    public var evictions: Int

    public init(entries: Int, limit: Int, hits: Int, misses: Int, evictions: Int) {
        self.entries = entries
        self.limit = limit
        self.hits = hits
        self.misses = misses
        self.evictions = evictions
    }
}
