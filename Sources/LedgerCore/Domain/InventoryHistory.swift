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
    public static let format = 2

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
        holdExpiries.compactMap { order, expiry in
            expiry <= micros && products.values.contains { $0.reservations[order] != nil } ? order : nil
        }.sorted()
    }

    /// The products in the inventory's listing order: by first event, then id.
    public var listed: [ProductID] {
        firstPositions.keys.sorted { (firstPositions[$0]!, $0) < (firstPositions[$1]!, $1) }
    }

    // MARK: Snapshots

    /// The snapshot's first line: everything but the reservations, as sorted-key JSON.
    struct Header: Codable {
        var format: Int
        var position: Int64
        var products: [ProductFigures]
        var firstPositions: [String: Int64]

        enum CodingKeys: String, CodingKey {
            case format, position, products
            case firstPositions = "first_positions"
        }
    }

    struct ProductFigures: Codable {
        var id: ProductID
        var sku: String
        var name: String
        var description: String
        var imageFile: String
        var price: Money
        var onHand: Int64
        var reserved: Int64
        var sold: Int64
        var received: Int64
        var version: Int64

        enum CodingKeys: String, CodingKey {
            case id, sku, name, description, price, reserved, sold, received, version
            case imageFile = "image_file"
            case onHand = "on_hand"
        }
    }

    /// The canonical bytes of this history as a snapshot. The first line is the header (``Header``:
    /// sorted-key JSON of the products' figures and first positions); then one line per reservation,
    /// `expiry:order:product:quantity`, where `expiry` is the order's hold expiry in epoch
    /// microseconds or `-` when no hold is placed yet, ordered by expiry (`-` first), order and
    /// product. Identifiers never contain `:` (``DomainIdentifierRules``). The expiries of orders that
    /// no longer reserve are left out. The same log prefix always gives the same bytes.
    ///
    /// Ordered so that a read at an instant needs only a prefix: ``init(snapshot:reservationsExpiringBy:)``.
    public func snapshotBytes() throws -> [UInt8] {
        guard !isPartial else { throw SnapshotError("a partial history is not a snapshot") }
        let header = Header(
            format: Self.format,
            position: position,
            products: products.values.sorted { $0.id < $1.id }.map {
                ProductFigures(
                    id: $0.id,
                    sku: $0.sku,
                    name: $0.name,
                    description: $0.description,
                    imageFile: $0.imageFile,
                    price: $0.price,
                    onHand: $0.onHand,
                    reserved: $0.reserved,
                    sold: $0.sold,
                    received: $0.received,
                    version: $0.version
                )
            },
            firstPositions: Dictionary(uniqueKeysWithValues: firstPositions.map { ($0.key.rawValue, $0.value) })
        )
        var lines: [(expiry: Int64?, order: String, product: String, quantity: Int64)] = []
        for product in products.values {
            for (order, quantity) in product.reservations {
                lines.append((holdExpiries[order], order.rawValue, product.id.rawValue, quantity))
            }
        }
        lines.sort { a, b in
            if a.expiry != b.expiry { return (a.expiry == nil ? 0 : 1, a.expiry ?? 0) < (b.expiry == nil ? 0 : 1, b.expiry ?? 0) }
            return (a.order, a.product) < (b.order, b.product)
        }
        var bytes = Array(try LedgerJSON.encode(header))
        bytes.append(UInt8(ascii: "\n"))
        for line in lines {
            bytes.append(contentsOf: "\(line.expiry.map(String.init) ?? "-"):\(line.order):\(line.product):\(line.quantity)\n".utf8)
        }
        return bytes
    }

    /// Whether this history was restored with only some reservations (``init(snapshot:reservationsExpiringBy:)``).
    public private(set) var isPartial = false

    /// A history from a snapshot's bytes. Throws on another format or a malformed line.
    public init(snapshot bytes: [UInt8]) throws {
        try self.init(snapshot: bytes, reservationsExpiringBy: nil)
    }

    /// A history from a snapshot's bytes with only the reservations of orders whose hold is not placed
    /// yet or expires at or before `micros` — every other figure complete. Enough for a read at the
    /// instant `micros`, and much cheaper than the whole table: only those orders can lapse then
    /// (``lapseCandidates(atMicros:)``), and the figures the rows show do not depend on the table.
    /// Such a history is ``isPartial`` and is never written as a snapshot.
    public init(snapshot bytes: [UInt8], reservationsExpiringBy micros: Int64?) throws {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { throw SnapshotError("a snapshot without its header line") }
        let header = try LedgerJSON.decode(Header.self, from: Data(bytes[..<newline]))
        guard header.format == Self.format else { throw SnapshotError("snapshot format \(header.format), expected \(Self.format)") }
        position = header.position
        var tables: [ProductID: TreeDictionary<OrderID, Int64>] = [:]
        var index = newline + 1
        while index < bytes.endIndex {
            guard let end = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) else { throw SnapshotError("a snapshot line without its end") }
            let fields = bytes[index..<end].split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            index = end + 1
            guard fields.count == 4 else { throw SnapshotError("a malformed reservation line in snapshot") }
            func text(_ field: ArraySlice<UInt8>) -> String { String(decoding: field, as: UTF8.self) }
            let expiry: Int64?
            if fields[0].elementsEqual("-".utf8) {
                expiry = nil
            } else {
                guard let value = Int64(text(fields[0])) else { throw SnapshotError("a malformed expiry in snapshot") }
                expiry = value
            }
            if let micros, let expiry, expiry > micros { break }  // the rest expire later still
            guard let order = OrderID(text(fields[1])), let product = ProductID(text(fields[2])), let quantity = Int64(text(fields[3])) else {
                throw SnapshotError("a malformed reservation line in snapshot")
            }
            tables[product, default: [:]][order] = quantity
            if let expiry { holdExpiries[order] = expiry }
        }
        isPartial = micros != nil
        for figures in header.products {
            products[figures.id] = ProductState(
                id: figures.id,
                sku: figures.sku,
                name: figures.name,
                description: figures.description,
                imageFile: figures.imageFile,
                price: figures.price,
                onHand: figures.onHand,
                reservations: tables[figures.id] ?? [:],
                reserved: figures.reserved,
                sold: figures.sold,
                received: figures.received,
                version: figures.version
            )
        }
        for (raw, first) in header.firstPositions {
            guard let id = ProductID(raw) else { throw SnapshotError("invalid product id in snapshot") }
            firstPositions[id] = first
        }
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
