import Foundation
import LedgerCore
import Synchronization

/// The domain's aggregates as the services see them: loaded (folded from their streams, through a cache of folded
/// states) and written (commands decided by the writer inside its batch, ``run(_:)``, and plans decided
/// outside it, ``commit(_:on:now:metadata:idempotency:alsoAppending:)``), each append carrying the read-model rows
/// it implies, its states remembered once it committed.
///
/// A load reads only the events after the cached version (one indexed query, usually empty or short), so
/// the cost of a load does not grow with the stream, and a state written by another process is
/// still seen. Bounded: past the limit it forgets the least recently used state, one per new one (``BoundedCache``).
/// A value: copies share the caches and counts.
package struct AggregateStore: Sendable {
    package let writer: LedgerWriter
    /// Where states are folded from: the event store on PostgreSQL (``StreamReads``), or a simulation's log.
    package let store: any StreamReads
    /// Orders and holds: many, mostly cold once closed; bounded.
    private let cache: StateCache
    /// Products and shipping methods: few and hot, with long streams; never evicted (bounded by
    /// the catalog's size), so a decision never refolds a product's whole history.
    private let catalogCache = StateCache(limit: Int.max)
    private let counter = LoadCounter()

    package init(writer: LedgerWriter, store: any StreamReads, cacheLimit: Int = 50_000) {
        self.writer = writer
        self.store = store
        self.cache = StateCache(limit: cacheLimit)
    }

    // MARK: Loading

    /// How many loads this store (and its copies) served so far, by kind of aggregate.
    package var loads: LoadCounts { counter.snapshot }

    /// The order and hold state cache's size and counts (`/metrics`: `ledger_cache_*{cache="aggregate_states"}`).
    package var cacheStatistics: CacheStatistics { cache.statistics }

    /// The stream's folded state: caught up with the log when `fresh`, otherwise the cached state
    /// as is when there is one (for deciding optimistically: the append's version check catches a
    /// stale state, and the retry loads fresh).
    private func load<State: Sendable>(
        _ stream: StreamID,
        in cache: StateCache,
        as: State.Type,
        fresh: Bool,
        fold: (inout State?, DomainEvent) -> Void
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
        counter.count(.product)
        return try await load(id.streamID, in: catalogCache, as: ProductState.self, fresh: fresh) { state, event in
            guard case .product(let e) = event else { return }
            if state != nil { state!.apply(e) } else { state = ProductState.evolve(nil, e) }  // in place: no copy per event
        }.state
    }

    package func shippingMethod(_ id: ShippingMethodID, fresh: Bool = true) async throws -> ShippingMethodState? {
        counter.count(.shippingMethod)
        return try await load(id.streamID, in: catalogCache, as: ShippingMethodState.self, fresh: fresh) { state, event in
            if case .shippingMethod(let e) = event { state = ShippingMethodState.evolve(state, e) }
        }.state
    }

    package func order(_ id: OrderID, fresh: Bool = true) async throws -> OrderState? {
        counter.count(.order)
        return try await load(id.streamID, in: cache, as: OrderState.self, fresh: fresh) { state, event in
            if case .order(let e) = event { state = OrderState.evolve(state, e) }
        }.state
    }

    package func hold(_ id: OrderID, fresh: Bool = true) async throws -> HoldState? {
        counter.count(.hold)
        return try await load(id.holdStreamID, in: cache, as: HoldState.self, fresh: fresh) { state, event in
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

    // MARK: Committing

    /// What an append of a plan left behind.
    package struct Committed: Sendable {
        /// The writer's answer (positions, or the replayed original result).
        package let result: AppendResult
        /// The states after the append, as the plan's events made them: what the caller answers
        /// from, so that it need not load again what it just wrote. Nil when the append was a replay
        /// of an earlier request (same idempotency key): this plan's events were not appended, so
        /// the states it implies are not the ledger's.
        package let states: AggregateStates?
    }

    /// Most decisions of one command: a command is decided again when another process moved a stream under it
    /// (or a request ahead of it in its batch did).
    package static let maximumAttempts = 20

    /// Too many decisions of one command met a moved stream (a product others keep writing from other processes).
    package struct Contended: Error, Sendable {
        package init() {}
    }

    /// Runs `command` through the writer (``LedgerWriter/decide(_:states:)``, on this store's states), deciding it
    /// again on a version conflict, at most ``maximumAttempts`` times (then ``Contended``). What `decide` threw is
    /// thrown as it is; what it decided is the outcome (``CommandOutcome/signal``).
    package func run(_ command: LedgerCommand) async throws -> CommandOutcome {
        for _ in 0..<Self.maximumAttempts {
            if let outcome = try await attempt(command) { return outcome }
        }
        throw Contended()
    }

    /// Runs `command` as ``run(_:)`` does, asking `stop` after each version conflict: nil when it answered true (an Apple Pay
    /// token whose marker another payment took: deciding again would only conflict again).
    package func run(_ command: LedgerCommand, until stop: @Sendable () async throws -> Bool) async throws -> CommandOutcome? {
        for _ in 0..<Self.maximumAttempts {
            if let outcome = try await attempt(command) { return outcome }
            if try await stop() { return nil }
        }
        throw Contended()
    }

    /// Runs a command whose decision tells a `Signal` (``Decision``), as ``run(_:)`` does: the outcome and the signal,
    /// typed, for the caller to switch on.
    package func run<Signal: Sendable>(_ command: Signalled<Signal>) async throws -> (outcome: CommandOutcome, signal: Signal) {
        let outcome = try await run(command.command)
        // `Signalled` erased a `Signal`, so the cast cannot fail; a failure would be this file's bug, not the caller's.
        guard let signal = outcome.signal as? Signal else { throw AppendError.storageFailure("a command's signal of another type") }
        return (outcome, signal)
    }

    /// Runs the command `prepare` makes from reads outside the four aggregates (a dispute's stream, the other disputes
    /// of its order), as ``run(_:)`` does, preparing it again — those reads made again — whenever its append met a moved
    /// stream: one it read, or one it appends to beside them (``CommandPlan/alsoAppending``). At most
    /// ``maximumAttempts`` times (then ``Contended``). The outcome is nil when the reads alone answered.
    package func run<Signal: Sendable>(
        preparing prepare: () async throws -> Prepared<Signal>
    ) async throws -> (outcome: CommandOutcome?, signal: Signal) {
        for _ in 0..<Self.maximumAttempts {
            switch try await prepare() {
            case .answered(let signal): return (nil, signal)
            case .command(let command):
                guard let outcome = try await attempt(command.command) else { continue }
                guard let signal = outcome.signal as? Signal else { throw AppendError.storageFailure("a command's signal of another type") }
                return (outcome, signal)
            }
        }
        throw Contended()
    }

    /// One decision of `command` in the writer's next batch; nil on a version conflict (decide again).
    private func attempt(_ command: LedgerCommand) async throws -> CommandOutcome? {
        do {
            return try await writer.decide(command, states: self)
        } catch let error as AppendError where error == .versionConflict {
            return nil
        }
    }

    /// Appends a plan decided outside the writer on `states`, with the read-model rows it implies, and remembers the
    /// states it produced. Returns nil on a version conflict (another writer moved a stream first: decide again on
    /// fresh state). `alsoAppending`: streams outside the domain's aggregates (e.g. an Apple Pay marker) committed in
    /// the same append.
    package func commit(
        _ plan: AppendPlan,
        on states: AggregateStates,
        now: Date,
        metadata: EventMetadata,
        idempotency: IdempotencyKey? = nil,
        alsoAppending extra: [StreamAppend] = []
    ) async throws -> Committed? {
        var (request, after) = try states.appendRequest(for: plan.appends, now: now, metadata: metadata, idempotency: idempotency)
        request.streams += extra
        do {
            let result = try await writer.append(request)
            guard !result.replayed else { return Committed(result: result, states: nil) }
            remember(after)
            return Committed(result: result, states: after)
        } catch let error as AppendError where error == .versionConflict {
            return nil
        }
    }
}

extension AggregateStore: CommandStateSource {
    /// Products and shipping methods stream by stream (their tails after the remembered versions); orders and holds
    /// wanted fresh, when there are several, in one query for all of them (an expiry page is a thousand streams, and
    /// the writer waits for this read), folded from their first events: they are short.
    package func states(_ keys: AggregateKeys, fresh: Set<StreamID>) async throws -> AggregateStates {
        var states = AggregateStates()
        for id in keys.products { states.products[id] = try await product(id, fresh: fresh.contains(id.streamID)) }
        for id in keys.shippingMethods { states.shippingMethods[id] = try await shippingMethod(id, fresh: fresh.contains(id.streamID)) }
        let together = keys.orders.map(\.streamID).filter(fresh.contains) + keys.holds.map(\.holdStreamID).filter(fresh.contains)
        var read = Set<StreamID>()
        if together.count > 1 {
            var folded = AggregateStates()
            var versions: [StreamID: Int64] = [:]
            for recorded in try await store.readStreams(together) {
                folded.apply(try DomainEvent.decode(recorded))
                versions[recorded.streamID] = recorded.streamVersion
            }
            for id in keys.orders where fresh.contains(id.streamID) {
                counter.count(.order)
                cache.put(id.streamID.rawValue, (folded.orders[id], versions[id.streamID] ?? 0))
                states.orders[id] = folded.orders[id]
            }
            for id in keys.holds where fresh.contains(id.holdStreamID) {
                counter.count(.hold)
                cache.put(id.holdStreamID.rawValue, (folded.holds[id], versions[id.holdStreamID] ?? 0))
                states.holds[id] = folded.holds[id]
            }
            read = Set(together)
        }
        for id in keys.orders where !read.contains(id.streamID) { states.orders[id] = try await order(id, fresh: fresh.contains(id.streamID)) }
        for id in keys.holds where !read.contains(id.holdStreamID) {
            states.holds[id] = try await hold(id, fresh: fresh.contains(id.holdStreamID))
        }
        return states
    }
}

/// What a caller prepared for ``AggregateStore/run(preparing:)`` from its reads outside the four aggregates: the command
/// to decide in the writer's batch, or the answer when those reads alone decide (a notification recorded already).
package enum Prepared<Signal: Sendable>: Sendable {
    case command(Signalled<Signal>)
    case answered(Signal)
}

/// Loads counted by kind of aggregate: each call of ``AggregateStore/product(_:fresh:)``,
/// ``AggregateStore/shippingMethod(_:fresh:)``, ``AggregateStore/order(_:fresh:)`` or
/// ``AggregateStore/hold(_:fresh:)``, whether the cache or the log answered it. A use case that
/// already holds a state should not load it again; tests compare counts before and after a request
/// to keep it that way.
package struct LoadCounts: Sendable, Hashable, CustomStringConvertible {
    package var products = 0
    package var shippingMethods = 0
    package var orders = 0
    package var holds = 0

    package init(products: Int = 0, shippingMethods: Int = 0, orders: Int = 0, holds: Int = 0) {
        self.products = products
        self.shippingMethods = shippingMethods
        self.orders = orders
        self.holds = holds
    }

    /// The loads counted since `earlier`.
    package static func - (later: LoadCounts, earlier: LoadCounts) -> LoadCounts {
        LoadCounts(
            products: later.products - earlier.products,
            shippingMethods: later.shippingMethods - earlier.shippingMethods,
            orders: later.orders - earlier.orders,
            holds: later.holds - earlier.holds
        )
    }

    package var description: String {
        "orders \(orders), holds \(holds), products \(products), shipping methods \(shippingMethods)"
    }
}

/// The store's load counts, shared by its copies (the store is a value passed to every service).
/// Atomic counters: a load is counted without a lock, so counting costs production nothing measurable.
private final class LoadCounter: Sendable {
    enum Kind { case product, shippingMethod, order, hold }

    private let products = Atomic<Int>(0)
    private let shippingMethods = Atomic<Int>(0)
    private let orders = Atomic<Int>(0)
    private let holds = Atomic<Int>(0)

    func count(_ kind: Kind) {
        switch kind {
        case .product: products.wrappingAdd(1, ordering: .relaxed)
        case .shippingMethod: shippingMethods.wrappingAdd(1, ordering: .relaxed)
        case .order: orders.wrappingAdd(1, ordering: .relaxed)
        case .hold: holds.wrappingAdd(1, ordering: .relaxed)
        }
    }

    var snapshot: LoadCounts {
        LoadCounts(
            products: products.load(ordering: .relaxed),
            shippingMethods: shippingMethods.load(ordering: .relaxed),
            orders: orders.load(ordering: .relaxed),
            holds: holds.load(ordering: .relaxed)
        )
    }
}

/// Folded states by stream, with the version each reflects. Type-erased values; each stream is only
/// ever folded into one state type.
private final class StateCache: Sendable {
    private let entries: Mutex<BoundedCache<String, any Sendable>>

    init(limit: Int) { self.entries = Mutex(BoundedCache(limit: limit)) }

    func get<Value: Sendable>(_ key: String) -> Value? {
        entries.withLock { $0.get(key) as? Value }
    }

    func put(_ key: String, _ value: some Sendable) {
        entries.withLock { $0.put(key, value) }
    }

    var statistics: CacheStatistics { entries.withLock { $0.statistics } }
}
