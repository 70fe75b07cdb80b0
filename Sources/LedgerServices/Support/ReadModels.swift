import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import PostgresNIO
import Synchronization

/// The aggregate states a plan was decided against. Applying the plan's events to them gives the
/// states after the append, from which every touched aggregate's read-model row is computed.
package struct AggregateStates: Sendable {
    package var products: [ProductID: ProductState] = [:]
    package var shippingMethods: [ShippingMethodID: ShippingMethodState] = [:]
    package var orders: [OrderID: OrderState] = [:]
    package var holds: [OrderID: HoldState] = [:]

    package init(products: [ProductID: ProductState] = [:], shippingMethods: [ShippingMethodID: ShippingMethodState] = [:],
                 orders: [OrderID: OrderState] = [:], holds: [OrderID: HoldState] = [:]) {
        self.products = products
        self.shippingMethods = shippingMethods
        self.orders = orders
        self.holds = holds
    }

    /// Folds one event into the state of its aggregate. Products fold in place (their reservation
    /// tables can be large; see ``ProductState/apply(_:)``).
    package mutating func apply(_ event: DomainEvent) {
        switch event {
        case .product(let e):
            if products[e.productID] != nil { products[e.productID]!.apply(e) } else { products[e.productID] = ProductState.evolve(nil, e) }
        case .shippingMethod(let e):
            shippingMethods[e.shippingMethodID] = ShippingMethodState.evolve(shippingMethods[e.shippingMethodID], e)
        case .order(let e): orders[e.orderID] = OrderState.evolve(orders[e.orderID], e)
        case .hold(let e): holds[e.orderID] = HoldState.evolve(holds[e.orderID], e)
        }
    }

    /// The append request for `plan` — its events, and the read-model rows of every aggregate it
    /// touches — and the states after it (what the loader may remember once the append commits).
    func appendRequest(for plan: [PlannedAppend], now: Date, metadata: EventMetadata,
                       idempotency: IdempotencyKey? = nil) throws -> (request: AppendRequest, after: AggregateStates) {
        var after = self
        var touchedProducts: [ProductID] = [], touchedMethods: [ShippingMethodID] = [], touchedOrders: [OrderID] = []
        var streams: [StreamAppend] = []
        for planned in plan {
            streams.append(StreamAppend(
                streamID: planned.streamID, expectedVersion: planned.expectedVersion,
                events: try planned.events.map { try $0.newEvent(eventID: UUID(), effectiveAt: now) }))
            for event in planned.events {
                after.apply(event)
                switch event {
                case .product(let e):
                    if !touchedProducts.contains(e.productID) { touchedProducts.append(e.productID) }
                case .shippingMethod(let e):
                    if !touchedMethods.contains(e.shippingMethodID) { touchedMethods.append(e.shippingMethodID) }
                case .order(let e):
                    if !touchedOrders.contains(e.orderID) { touchedOrders.append(e.orderID) }
                case .hold(let e):
                    if !touchedOrders.contains(e.orderID) { touchedOrders.append(e.orderID) }
                }
            }
        }
        // A row is written only with its own stream in the append (exactly expected), so the state it
        // shows is the state the append is checked against.
        let appended = Set(plan.map(\.streamID))
        var rows: [ProjectionRow] = []
        for id in touchedProducts { if let state = after.products[id] { rows.append(try CatalogReadModel.row(state)) } }
        for id in touchedMethods { if let state = after.shippingMethods[id] { rows.append(try CatalogReadModel.row(state)) } }
        for id in touchedOrders {
            if let state = after.orders[id], appended.contains(id.streamID) {
                rows.append(try OrderReadModel.row(state, hold: after.holds[id]))
            }
            // The hold row shows the order's status too: it is rewritten whenever either stream moves
            // (a shipment after a final capture appends to the order only).
            if let hold = after.holds[id], let order = after.orders[id],
               appended.contains(id.holdStreamID) || appended.contains(id.streamID) {
                rows.append(try HoldReadModel.row(hold, order: order, writtenWith: appended.contains(id.holdStreamID) ? id.holdStreamID : id.streamID))
            }
        }
        return (AppendRequest(streams: streams, metadata: metadata, idempotency: idempotency, projections: rows), after)
    }
}

/// The `orders` read model: one row per order, for `GET /orders/{id}` and the order list.
enum OrderReadModel {
    static let projection = "orders"

    struct Row: Encodable {
        struct Line: Encodable {
            let product_id, name, unit_price: String
            let quantity: Int64
            let line_total: String
        }
        struct Hold: Encodable {
            let psp_reference, auth_code, amount, open: String
            let network, funding_type, last_four: String?
            let expires_at, authorized_at: String
            /// `open` while money is held on the card, else `closed`.
            let state: String
        }
        struct Shipment: Encodable {
            let carrier, tracking: String?
            let shipped_at: String
        }
        let id, status, currency, subtotal, shipping, tax, total, opened_at, shipping_method: String
        let lines: [Line]
        let psp_reference, decline_code, decline_message: String?
        let hold: Hold?
        /// The money figures of the order's payment (authorized, captured, refunded, open, …).
        let payment: HoldReadModel.Figures?
        let shipment: Shipment?
        let version: Int64
    }

    static func row(_ order: OrderState, hold: HoldState?) throws -> ProjectionRow {
        let amounts = order.amounts
        let row = Row(
            id: order.id.rawValue, status: order.status.rawValue, currency: amounts.total.currency.code,
            subtotal: amounts.subtotal.decimalString, shipping: amounts.shipping.decimalString, tax: amounts.tax.decimalString,
            total: amounts.total.decimalString, opened_at: timestamp(order.openedAt), shipping_method: order.shipping.name,
            lines: order.lines.map { Row.Line(product_id: $0.productID.rawValue, name: $0.name, unit_price: $0.unitPrice.decimalString,
                                              quantity: $0.quantity, line_total: $0.lineTotal.decimalString) },
            psp_reference: order.pspReference, decline_code: order.lastResponseCode?.rawValue,
            decline_message: order.lastResponseMessage,
            hold: hold.map { Row.Hold(
                psp_reference: $0.pspReference, auth_code: $0.authCode, amount: $0.balance.authorized.decimalString,
                open: $0.balance.open.decimalString, network: $0.network?.rawValue, funding_type: $0.fundingType?.rawValue,
                last_four: $0.lastFour, expires_at: timestamp($0.expiresAt), authorized_at: timestamp($0.authorizedAt),
                state: $0.isClosed ? "closed" : "open") },
            payment: hold.map { HoldReadModel.Figures($0.balance) },
            shipment: order.shipment.map { Row.Shipment(carrier: $0.carrier, tracking: $0.tracking, shipped_at: timestamp($0.shippedAt)) },
            version: order.version)
        return ProjectionRow(projection: projection, key: order.id.rawValue, stream: order.id.streamID,
                             version: order.version, json: try CatalogReadModel.json(row))
    }

    /// RFC 3339 UTC with microseconds, fixed width (so the order list can compare it as text).
    static func timestamp(_ date: Date) -> String { EventJSON.timestamp(date.epochMicroseconds) }
}

/// The `holds` read model: one row per authorization hold, for `GET /authorizations` and the
/// expiry sweeper (open holds by expiry). Carries the order's lines, so that reads can treat a
/// lapsed hold's stock as available before the sweeper records the expiry.
enum HoldReadModel {
    static let projection = "holds"

    /// A hold's money, as decimal strings in its currency.
    struct Figures: Encodable {
        let currency, authorized, incremented, captured, reversed, expired, refunded, open: String

        init(_ b: HoldBalance) {
            currency = b.authorized.currency.code
            authorized = b.authorized.decimalString
            incremented = b.incremented.decimalString
            captured = b.captured.decimalString
            reversed = b.reversed.decimalString
            expired = b.expired.decimalString
            refunded = b.refunded.decimalString
            open = b.open.decimalString
        }
    }

    struct Row: Encodable {
        struct Line: Encodable {
            let product_id: String
            let quantity: Int64
        }
        let order_id, psp_reference, auth_code, state, order_status, expires_at, authorized_at: String
        let network, funding_type, last_four: String?
        let figures: Figures
        /// The stock this hold's expiry would release (empty when it would release none).
        let released_on_expiry: [Line]
        let version: Int64
    }

    /// The row's guard version (which row is newer) is the **order's** stream version: every append
    /// that changes the hold also appends to the order (exactly expected), and so does every order
    /// change the row shows (its status), so the order's version grows with every change of the row.
    /// `writtenWith`: the stream of the append the row goes with (the hold's when it is there).
    static func row(_ hold: HoldState, order: OrderState, writtenWith stream: StreamID? = nil) throws -> ProjectionRow {
        let row = Row(
            order_id: hold.orderID.rawValue, psp_reference: hold.pspReference, auth_code: hold.authCode,
            state: hold.isClosed ? "closed" : "open", order_status: order.status.rawValue,
            expires_at: OrderReadModel.timestamp(hold.expiresAt), authorized_at: OrderReadModel.timestamp(hold.authorizedAt),
            network: hold.network?.rawValue, funding_type: hold.fundingType?.rawValue, last_four: hold.lastFour,
            figures: Figures(hold.balance),
            released_on_expiry: HoldLifecycle.expiryReleasesStock(order: order, hold: hold)
                ? order.lines.map { Row.Line(product_id: $0.productID.rawValue, quantity: $0.quantity) } : [],
            version: hold.version)
        return ProjectionRow(projection: projection, key: hold.orderID.rawValue, stream: stream ?? hold.orderID.holdStreamID,
                             version: order.version, json: try CatalogReadModel.json(row))
    }
}

/// Reads streams and folds them into the domain's states, through a cache of folded states: a load
/// reads only the events after the cached version (one indexed query, usually empty or short), so
/// the cost of a load does not grow with the stream, and a state written by another process is
/// still seen. Bounded: past the limit the cache starts afresh.
package struct AggregateLoader: Sendable {
    let store: EventStore
    let client: PostgresClient
    let logger: Logger
    /// Orders and holds: many, mostly cold once closed; bounded.
    private let cache: StateCache
    /// Products and shipping methods: few and hot, with long streams; never evicted (bounded by
    /// the catalog's size), so a decision never refolds a product's whole history.
    private let catalogCache = StateCache(limit: Int.max)

    package init(store: EventStore, client: PostgresClient, logger: Logger, cacheLimit: Int = 50_000) {
        self.store = store
        self.client = client
        self.logger = logger
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

    func product(_ id: ProductID, fresh: Bool = true) async throws -> ProductState? {
        try await load(id.streamID, in: catalogCache, as: ProductState.self, fresh: fresh) { state, event in
            guard case .product(let e) = event else { return }
            if state != nil { state!.apply(e) } else { state = ProductState.evolve(nil, e) }  // in place: no copy per event
        }.state
    }

    func shippingMethod(_ id: ShippingMethodID, fresh: Bool = true) async throws -> ShippingMethodState? {
        try await load(id.streamID, in: catalogCache, as: ShippingMethodState.self, fresh: fresh) { state, event in
            if case .shippingMethod(let e) = event { state = ShippingMethodState.evolve(state, e) }
        }.state
    }

    func order(_ id: OrderID, fresh: Bool = true) async throws -> OrderState? {
        try await load(id.streamID, in: cache, as: OrderState.self, fresh: fresh) { state, event in
            if case .order(let e) = event { state = OrderState.evolve(state, e) }
        }.state
    }

    func hold(_ id: OrderID, fresh: Bool = true) async throws -> HoldState? {
        try await load(id.holdStreamID, in: cache, as: HoldState.self, fresh: fresh) { state, event in
            if case .hold(let e) = event { state = HoldState.evolve(state, e) }
        }.state
    }

    /// Remembers the states an append produced (after it committed), so that the next decision on
    /// those streams needs no read.
    func remember(_ states: AggregateStates) {
        for (id, state) in states.products { catalogCache.put(id.streamID.rawValue, (Optional(state), state.version)) }
        for (id, state) in states.shippingMethods { catalogCache.put(id.streamID.rawValue, (Optional(state), state.version)) }
        for (id, state) in states.orders { cache.put(id.streamID.rawValue, (Optional(state), state.version)) }
        for (id, state) in states.holds { cache.put(id.holdStreamID.rawValue, (Optional(state), state.version)) }
    }

    /// The key of the read-model row whose `field` equals `value` (e.g. a product by its name).
    func key(in projection: String, where field: String, equals value: String) async throws -> String? {
        let rows = try await client.query(
            """
            SELECT key FROM ledger.projection_rows
            WHERE projection = \(projection) AND row ->> \(field) = \(value) ORDER BY created_position LIMIT 1
            """, logger: logger)
        for try await key in rows.decode(String.self) { return key }
        return nil
    }
}

/// Folded states by stream, with the version each reflects. Type-erased values; each stream is only
/// ever folded into one state type.
final class StateCache: Sendable {
    private let entries: Mutex<[String: any Sendable]>
    private let limit: Int

    init(limit: Int) {
        self.entries = Mutex([:])
        self.limit = limit
    }

    func get<Value: Sendable>(_ key: String) -> Value? {
        entries.withLock { $0[key] as? Value }
    }

    func put(_ key: String, _ value: some Sendable) {
        entries.withLock { entries in
            if entries.count >= limit && entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }
}
