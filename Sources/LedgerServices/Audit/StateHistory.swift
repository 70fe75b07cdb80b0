import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import Logging

/// Aggregates' rows live (from the read models) and as of a point in the ledger.
///
/// An as-of answer is a fold: the aggregate's streams read up to the point's position, applied
/// with ``AggregateStates/apply(_:)`` and turned into a row by the read model's own function
/// (``OrderReadModel/row(_:hold:)``, ``HoldReadModel/row(_:order:writtenWith:)``, ``CatalogReadModel/row(_:)``,
/// ``SettlementService/batch(_:)``),
/// exactly as the inline projections and the rebuild compute the live rows — so the two cannot
/// disagree. A hold that had lapsed at the point's instant reads as live reads show it then
/// (``AggregateStates/lapsed(at:)``).
///
/// The point: `as_of=<position>` is the ledger right after that event, judged at its recorded
/// time; `as_of=<time>` is every event recorded at or before that instant (`ledger.position_at`),
/// judged at that instant. A point after the head, or a time after now, is refused: its answer
/// could still change.
public struct StateHistory: Sendable {
    package init(
        store: EventStore,
        storefront: ProjectionStorefrontReader,
        client: DatabaseClient,
        snapshots: InventorySnapshots,
        clock: @escaping @Sendable () -> Date,
        logger: Logger
    ) {
        self.store = store
        self.storefront = storefront
        self.holdRows = ProjectionHoldReader(client: client, logger: logger)
        self.snapshots = snapshots
        self.clock = clock
        self.logger = logger
    }

    let store: EventStore
    let storefront: ProjectionStorefrontReader
    let holdRows: ProjectionHoldReader
    /// Where the inventory's and the products' as-of reads start from (sql/0013).
    public let snapshots: InventorySnapshots
    let clock: @Sendable () -> Date
    let logger: Logger

    /// - Parameters:
    ///   - snapshotEvery: the fewest events between inventory snapshots (``InventorySnapshots``).
    ///   - snapshotBytesPerEvent: snapshot bytes per event at most (``InventorySnapshots/spacing(afterSnapshotOf:)``).
    public init(
        client: DatabaseClient,
        clock: @escaping @Sendable () -> Date = { Date() },
        snapshotEvery: Int64 = 10_000,
        snapshotBytesPerEvent: Int64 = InventorySnapshots.defaultBytesPerEvent,
        logger: Logger
    ) {
        self.init(
            store: EventStore(client: client, logger: logger),
            storefront: ProjectionStorefrontReader(client: client, clock: clock, logger: logger),
            client: client,
            snapshots: InventorySnapshots(client: client, every: snapshotEvery, bytesPerEvent: snapshotBytesPerEvent, logger: logger),
            clock: clock,
            logger: logger
        )
    }

    /// The position folded to and the instant lapses are judged at.
    public func point(_ asOf: AsOf) async throws -> StateAnswer.Point {
        switch asOf {
        case .position(let position):
            let head = try await store.head().position
            guard position <= head else {
                // Well formed, but a point the ledger has not reached: 422, as the document cannot say where the head is
                // (a 400 is for what it rules out).
                throw ServiceError.invalid(
                    "as_of_unavailable",
                    "as_of \(position) is after the ledger's head (position \(head))",
                    field: "as_of"
                )
            }
            guard position > 0 else { return StateAnswer.Point(position: 0, micros: 0) }
            guard let event = try await store.event(at: position) else {
                throw ServiceError.unavailable("the event at position \(position) is missing: run `ledgerd audit verify`")
            }
            return StateAnswer.Point(position: position, micros: event.recordedAtMicros)
        case .time(let micros):
            guard micros <= clock().epochMicroseconds else {
                throw ServiceError.invalid("as_of_unavailable", "as_of \(asOf) is in the future", field: "as_of")
            }
            return StateAnswer.Point(position: try await store.position(atMicros: micros), micros: micros)
        }
    }

    /// The states of `streams` folded up to `position`. Events of types the domain does not know
    /// (checkpoints, erasures, tests' samples) have no state and are skipped.
    func fold(_ streams: [StreamID], through position: Int64) async throws -> AggregateStates {
        try Self.fold(try await store.readStreams(streams, through: position))
    }

    static func fold(_ events: [RecordedEvent]) throws -> AggregateStates {
        var states = AggregateStates()
        for recorded in events where known.contains(recorded.type) { states.apply(try DomainEvent.decode(recorded)) }
        return states
    }

    static let known = Set(DomainEvent.knownTypes.map(\.type))

    public func order(_ raw: String, asOf: AsOf) async throws -> StateAnswer? {
        guard let id = OrderID(raw) else { return nil }
        let point = try await point(asOf)
        let states = try await fold([id.streamID, id.holdStreamID], through: point.position)
            .lapsed(at: Date(epochMicroseconds: point.micros))
        guard let order = states.orders[id] else { return nil }
        return StateAnswer(json: try OrderReadModel.row(order, hold: states.holds[id]).json, asOf: point)
    }

    public func authorization(_ raw: String, asOf: AsOf?) async throws -> StateAnswer? {
        guard let id = OrderID(raw) else { return nil }
        guard let asOf else { return try await holdRows.holdJSON(id: id).map { StateAnswer(json: $0, asOf: nil) } }
        // As the live hold rows: no lapse applied (GET /authorizations shows holds as recorded).
        let point = try await point(asOf)
        let states = try await fold([id.streamID, id.holdStreamID], through: point.position)
        guard let hold = states.holds[id], let order = states.orders[id] else { return nil }
        return StateAnswer(json: try HoldReadModel.row(hold, order: order).json, asOf: point)
    }

    public func product(_ raw: String, asOf: AsOf?) async throws -> StateAnswer? {
        guard let id = ProductID(raw) else { return nil }
        guard let asOf else { return try await storefront.productJSON(id: id.rawValue).map { StateAnswer(json: $0, asOf: nil) } }
        let point = try await point(asOf)
        let (states, _) = try await products(through: point)
        guard let product = states.products[id] else { return nil }
        return StateAnswer(json: try CatalogReadModel.row(product).json, asOf: point)
    }

    /// The whole inventory as `GET /inventory` serves it (a JSON array).
    public func inventory(asOf: AsOf) async throws -> StateAnswer {
        let point = try await point(asOf)
        let (states, listed) = try await products(through: point)
        return StateAnswer(json: try Self.inventoryJSON(states, listed), asOf: point)
    }

    /// ``product(_:asOf:)`` folded from position 1, without snapshots: what the snapshots must agree with.
    public func productByFullFold(_ raw: String, asOf: AsOf) async throws -> StateAnswer? {
        guard let id = ProductID(raw) else { return nil }
        let point = try await point(asOf)
        let (states, _) = try await productsByFullFold([id.streamID], through: point)
        guard let product = states.products[id] else { return nil }
        return StateAnswer(json: try CatalogReadModel.row(product).json, asOf: point)
    }

    /// ``inventory(asOf:)`` folded from position 1, without snapshots: what the snapshots must agree with.
    public func inventoryByFullFold(asOf: AsOf) async throws -> StateAnswer {
        let point = try await point(asOf)
        let (states, listed) = try await productsByFullFold(nil, through: point)
        return StateAnswer(json: try Self.inventoryJSON(states, listed), asOf: point)
    }

    static func inventoryJSON(_ states: AggregateStates, _ listed: [ProductID]) throws -> String {
        var rows: [String] = []
        for id in listed { if let product = states.products[id] { rows.append(try CatalogReadModel.row(product).json) } }
        return "[" + rows.joined(separator: ",") + "]"
    }

    /// The settlement batch as of the point (the live read's fold, up to the point), with the point.
    public func settlement(_ id: String, asOf: AsOf) async throws -> (batch: SettlementBatchState, point: StateAnswer.Point)? {
        guard let stream = SettlementService.stream(ofBatch: id) else { return nil }
        let point = try await point(asOf)
        return try SettlementService.batch(try await store.readStreams([stream], through: point.position)).map { ($0, point) }
    }

    /// Every product as of the point, lapsed at the point's instant, and the products in listing
    /// order (as the live inventory lists them: by first event, then id): the nearest snapshot and
    /// the product events after it (``InventorySnapshots/history(through:)``), then the orders and
    /// holds of the reservations whose hold may have lapsed by then
    /// (``InventoryHistory/lapseCandidates(atMicros:)``) — the only ones the lapse can change.
    func products(through point: StateAnswer.Point) async throws -> (AggregateStates, [ProductID]) {
        let instant = Date(epochMicroseconds: point.micros)
        let history = try await snapshots.history(through: point.position, lapsingBy: instant.epochMicroseconds)
        var states = AggregateStates(products: history.products)
        let candidates = history.lapseCandidates(atMicros: instant.epochMicroseconds)
        if !candidates.isEmpty {
            let others = try await fold(candidates.flatMap { [$0.streamID, $0.holdStreamID] }, through: point.position)
            states.orders = others.orders
            states.holds = others.holds
        }
        return (states.lapsed(at: instant), history.listed)
    }

    /// Products (the given streams, or every product) folded from position 1 up to the point, with
    /// the orders and holds of all their open reservations, lapsed at the point's instant, and the
    /// products in listing order. The reference ``products(through:)`` is tested against.
    func productsByFullFold(_ streams: [StreamID]?, through point: StateAnswer.Point) async throws -> (AggregateStates, [ProductID]) {
        let events: [RecordedEvent]
        if let streams {
            events = try await store.readStreams(streams, through: point.position)
        } else {
            events = try await store.readStreams(prefix: ProductID.streamCategory + "-", through: point.position)
        }
        var states = try Self.fold(events)
        var first: [ProductID: Int64] = [:]
        for event in events where Self.known.contains(event.type) {
            if case .product(let e) = try DomainEvent.decode(event), first[e.productID] == nil { first[e.productID] = event.position }
        }
        let reserving = Set(states.products.values.flatMap { $0.reservations.keys })
        if !reserving.isEmpty {
            let others = try await fold(reserving.sorted().flatMap { [$0.streamID, $0.holdStreamID] }, through: point.position)
            states.orders = others.orders
            states.holds = others.holds
        }
        let listed = first.keys.sorted { (first[$0]!, $0) < (first[$1]!, $1) }
        return (states.lapsed(at: Date(epochMicroseconds: point.micros)), listed)
    }
}
