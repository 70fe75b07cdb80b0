import Foundation
import LedgerCore

/// Reads streams and folds them into the domain's states, through a cache of folded states: a load
/// reads only the events after the cached version (one indexed query, usually empty or short), so
/// the cost of a load does not grow with the stream, and a state written by another process is
/// still seen. Bounded: past the limit the cache starts afresh.
package struct AggregateLoader: Sendable {
    package let store: EventStore
    /// Orders and holds: many, mostly cold once closed; bounded.
    private let cache: StateCache
    /// Products and shipping methods: few and hot, with long streams; never evicted (bounded by
    /// the catalog's size), so a decision never refolds a product's whole history.
    private let catalogCache = StateCache(limit: Int.max)

    package init(store: EventStore, cacheLimit: Int = 50_000) {
        self.store = store
        self.cache = StateCache(limit: cacheLimit)
    }

    /// The stream's folded state: caught up with the log when `fresh`, otherwise the cached state
    /// as is when there is one (for deciding optimistically: the append's version check catches a
    /// stale state, and the retry loads fresh).
    private func load<State: Sendable>(
        _ stream: StreamID, in cache: StateCache, as: State.Type, fresh: Bool, fold: (inout State?, DomainEvent) -> Void
    ) async throws -> (state: State?, version: Int64) {
        let cached = cache.get(stream.rawValue) as (State?, Int64)?
        if !fresh, let cached, cached.0 != nil { return cached }
        var (state, version) = cached ?? (nil, 0)
        let tail = try await store.readStream(stream, after: version)
        guard !tail.isEmpty else { return (state, version) }
        for recorded in tail {
            fold(&state, try DomainEvent.decode(recorded))
            version = recorded.streamVersion
        }
        cache.put(stream.rawValue, (state, version))
        return (state, version)
    }

    package func product(_ id: ProductID, fresh: Bool = true) async throws -> ProductState? {
        try await load(id.streamID, in: catalogCache, as: ProductState.self, fresh: fresh) { state, event in
            guard case .product(let e) = event else { return }
            if state != nil { state!.apply(e) } else { state = ProductState.evolve(nil, e) }  // in place: no copy per event
        }.state
    }

    package func shippingMethod(_ id: ShippingMethodID, fresh: Bool = true) async throws -> ShippingMethodState? {
        try await load(id.streamID, in: catalogCache, as: ShippingMethodState.self, fresh: fresh) { state, event in
            if case .shippingMethod(let e) = event { state = ShippingMethodState.evolve(state, e) }
        }.state
    }

    package func order(_ id: OrderID, fresh: Bool = true) async throws -> OrderState? {
        try await load(id.streamID, in: cache, as: OrderState.self, fresh: fresh) { state, event in
            if case .order(let e) = event { state = OrderState.evolve(state, e) }
        }.state
    }

    package func hold(_ id: OrderID, fresh: Bool = true) async throws -> HoldState? {
        try await load(id.holdStreamID, in: cache, as: HoldState.self, fresh: fresh) { state, event in
            if case .hold(let e) = event { state = HoldState.evolve(state, e) }
        }.state
    }

    /// Remembers the states an append produced (after it committed), so that the next decision on
    /// those streams needs no read.
    package func remember(_ states: AggregateStates) {
        for (id, state) in states.products { catalogCache.put(id.streamID.rawValue, (Optional(state), state.version)) }
        for (id, state) in states.shippingMethods { catalogCache.put(id.streamID.rawValue, (Optional(state), state.version)) }
        for (id, state) in states.orders { cache.put(id.streamID.rawValue, (Optional(state), state.version)) }
        for (id, state) in states.holds { cache.put(id.holdStreamID.rawValue, (Optional(state), state.version)) }
    }
}
