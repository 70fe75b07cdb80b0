import Foundation
import HashTreeCollections

/// The inventory's history in a form a read can resume from: every product's state after
/// ``position``, the position of each product's first event (the inventory lists products by it),
/// and the expiry of the hold of every order that still reserves stock.
///
/// The expiries are what makes an as-of read cheap: a read at an instant past a hold's expiry lapses
/// the hold (the lapse rule, `AggregateStates.lapsed(at:)`), which may count its order's units as
/// available again, so a read must fold that order and its hold. A hold's expiry is fixed when it is
/// placed, so only the orders whose expiry is at or before the instant
/// (``lapseCandidates(atMicros:)``) need folding; every other reserving order's hold is either not
/// placed or not yet expired, and the lapse leaves it as it is.
///
/// A snapshot is this value's canonical bytes (``snapshotBytes()``: sorted-key JSON, so a rebuild
/// from the log gives the same bytes). Resuming from a snapshot and folding the rest of the log gives
/// the same value as folding from position 1 (tests compare the two at every position). It relies on
/// one domain fact: an order reserves stock once, when it opens (`PaymentFlow.placeOrder`), before its
/// hold is placed, so an order that stopped reserving never reserves again and its expiry can be
/// dropped from the snapshot.
public struct InventoryHistory: Sendable, Equatable {
    /// The last position folded.
    public private(set) var position: Int64 = 0
    public private(set) var products: [ProductID: ProductState] = [:]
    /// Each product stream's first event's position (set even when that event did not list it).
    public private(set) var firstPositions: [ProductID: Int64] = [:]
    /// The first placed hold's expiry (epoch microseconds), by order.
    public private(set) var holdExpiries: [OrderID: Int64] = [:]

    public init() {}

    /// The snapshot format ``snapshotBytes()`` writes and ``init(snapshot:)`` reads.
    public static let format = 1

    /// The event types a history folds: every product stream's (from product streams only) and
    /// `AuthorizationHoldPlaced` (from hold streams only).
    public static let productEventTypes: [String] = EventCatalogue.entries.filter { $0.streamCategory == ProductID.streamCategory }
        .map(\.type)
    public static let holdPlacedType = AuthorizationHoldPlaced.eventType

    /// Folds one event recorded at `position` (positions must increase). Events of other kinds are
    /// ignored; the reader only passes those of ``productEventTypes`` and ``holdPlacedType``.
    public mutating func apply(_ event: DomainEvent, at position: Int64) {
        switch event {
        case .product(let e):
            if products[e.productID] != nil { products[e.productID]!.apply(e) } else { products[e.productID] = ProductState.evolve(nil, e) }
            if firstPositions[e.productID] == nil { firstPositions[e.productID] = position }
        case .hold(.placed(let e)):
            // As `HoldState.evolve`: a second placement does not change the first's facts.
            if holdExpiries[e.orderID] == nil { holdExpiries[e.orderID] = e.expiresAt.epochMicroseconds }
        default:
            break
        }
        self.position = max(self.position, position)
    }

    /// Marks the history as folded up to `position` (the events between the last one folded and
    /// `position` were of no interest to it).
    public mutating func advance(to position: Int64) { self.position = max(self.position, position) }

    /// Every order that holds a reservation of some product.
    public var reservingOrders: Set<OrderID> {
        var orders = Set<OrderID>()
        for product in products.values { orders.formUnion(product.reservations.keys) }
        return orders
    }

    /// The reserving orders whose hold (if placed) expires at or before `micros`, in id order: the
    /// only ones a read at that instant may lapse.
    public func lapseCandidates(atMicros micros: Int64) -> [OrderID] {
        reservingOrders.filter { holdExpiries[$0].map { $0 <= micros } ?? false }.sorted()
    }

    /// The products in the inventory's listing order: by first event, then id.
    public var listed: [ProductID] {
        firstPositions.keys.sorted { (firstPositions[$0]!, $0) < (firstPositions[$1]!, $1) }
    }

    // MARK: Snapshots

    struct Wire: Codable {
        var format: Int
        var position: Int64
        var products: [ProductWire]
        var firstPositions: [String: Int64]
        var holdExpiries: [String: Int64]

        enum CodingKeys: String, CodingKey {
            case format, position, products
            case firstPositions = "first_positions"
            case holdExpiries = "hold_expiries"
        }
    }

    struct ProductWire: Codable {
        var id: ProductID
        var sku: String
        var name: String
        var description: String
        var imageFile: String
        var price: Money
        var onHand: Int64
        var reservations: [String: Int64]
        var reserved: Int64
        var sold: Int64
        var received: Int64
        var version: Int64

        enum CodingKeys: String, CodingKey {
            case id, sku, name, description, price, reservations, reserved, sold, received, version
            case imageFile = "image_file"
            case onHand = "on_hand"
        }
    }

    /// The canonical bytes of this history as a snapshot: sorted-key JSON of every field, the expiries
    /// of orders that no longer reserve left out. The same log prefix always gives the same bytes.
    public func snapshotBytes() throws -> [UInt8] {
        let reserving = reservingOrders
        var expiries: [String: Int64] = [:]
        for (order, micros) in holdExpiries where reserving.contains(order) { expiries[order.rawValue] = micros }
        let wire = Wire(
            format: Self.format,
            position: position,
            products: products.values.sorted { $0.id < $1.id }.map { state in
                var reservations: [String: Int64] = [:]
                for (order, quantity) in state.reservations { reservations[order.rawValue] = quantity }
                return ProductWire(
                    id: state.id,
                    sku: state.sku,
                    name: state.name,
                    description: state.description,
                    imageFile: state.imageFile,
                    price: state.price,
                    onHand: state.onHand,
                    reservations: reservations,
                    reserved: state.reserved,
                    sold: state.sold,
                    received: state.received,
                    version: state.version
                )
            },
            firstPositions: Dictionary(uniqueKeysWithValues: firstPositions.map { ($0.key.rawValue, $0.value) }),
            holdExpiries: expiries
        )
        return Array(try LedgerJSON.encode(wire))
    }

    /// A history from a snapshot's bytes. Throws on another format or an identifier the domain refuses.
    public init(snapshot bytes: [UInt8]) throws {
        let wire = try LedgerJSON.decode(Wire.self, from: Data(bytes))
        guard wire.format == Self.format else { throw SnapshotError("snapshot format \(wire.format), expected \(Self.format)") }
        func order(_ raw: String) throws -> OrderID {
            guard let id = OrderID(raw) else { throw SnapshotError("invalid order id in snapshot") }
            return id
        }
        position = wire.position
        for product in wire.products {
            var reservations = TreeDictionary<OrderID, Int64>()
            for (raw, quantity) in product.reservations { reservations[try order(raw)] = quantity }
            products[product.id] = ProductState(
                id: product.id,
                sku: product.sku,
                name: product.name,
                description: product.description,
                imageFile: product.imageFile,
                price: product.price,
                onHand: product.onHand,
                reservations: reservations,
                reserved: product.reserved,
                sold: product.sold,
                received: product.received,
                version: product.version
            )
        }
        for (raw, first) in wire.firstPositions {
            guard let id = ProductID(raw) else { throw SnapshotError("invalid product id in snapshot") }
            firstPositions[id] = first
        }
        for (raw, micros) in wire.holdExpiries { holdExpiries[try order(raw)] = micros }
    }

    /// This history as a snapshot would restore it: the expiries of orders that no longer reserve dropped.
    public var asSnapshot: InventoryHistory {
        var copy = self
        let reserving = reservingOrders
        copy.holdExpiries = holdExpiries.filter { reserving.contains($0.key) }
        return copy
    }
}

/// A snapshot that cannot be read (another format, a refused identifier).
public struct SnapshotError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
