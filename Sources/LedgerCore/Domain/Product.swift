import HashTreeCollections
import LedgerMacros

// The product / stock aggregate: one stream per product (`product-<id>`).
//
// Stock is counted in three numbers: on hand (physically in the warehouse), reserved (promised to
// orders that have not shipped) and available = on hand − reserved. A reservation is keyed by order,
// so that releasing or selling it can only ever touch what that order holds, and a retried
// reservation for the same order is refused instead of counted twice.

// MARK: - Events

/// A product entered the catalog. Carries everything `GET /inventory` shows except stock.
@MemberwiseInit
public struct ProductListed: LedgerEventPayload {
    public static let eventType = "ProductListed"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.productListed

    public var productID: ProductID
    /// The merchant's stock-keeping unit; the demo catalog uses the product id.
    public var sku: String
    public var name: String
    public var description: String
    /// File name of the picture (e.g. `clock.png`), served by `GET /product_image/<file>`.
    public var imageFile: String
    @DecimalMoney public var price: Money

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case sku, name, description
        case imageFile = "image_file"
        case price
    }
}

/// A product's unit price changed (same currency). Orders keep the price they were opened with.
@MemberwiseInit
public struct ProductPriceChanged: LedgerEventPayload {
    public static let eventType = "ProductPriceChanged"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.productPriceChanged

    public var productID: ProductID
    @DecimalMoney public var previousPrice: Money
    @DecimalMoney public var price: Money

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case previousPrice = "previous_price"
        case price
    }
}

/// Goods arrived: on hand grows by `quantity` (> 0). The only event that changes on hand + sold.
@MemberwiseInit
public struct StockReceived: LedgerEventPayload {
    public static let eventType = "StockReceived"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.stockReceived

    public var productID: ProductID
    public var quantity: Int64

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case quantity
    }
}

/// `quantity` units are promised to `orderID`: reserved grows, available shrinks, on hand is unchanged.
@MemberwiseInit
public struct StockReserved: LedgerEventPayload {
    public static let eventType = "StockReserved"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.stockReserved

    public var productID: ProductID
    public var orderID: OrderID
    public var quantity: Int64

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case orderID = "order_id"
        case quantity
    }
}

/// Why a reservation went back to available stock.
public enum ReservationReleaseReason: String, Hashable, Sendable, Codable, CaseIterable {
    /// The issuer declined the authorization.
    case paymentDeclined = "payment_declined"
    /// Recovery found no payment at the acquirer, or reversed one whose outcome stayed unknown.
    case paymentNotCompleted = "payment_not_completed"
    /// The hold was voided in full.
    case orderVoided = "order_voided"
    /// The hold expired uncaptured.
    case holdExpired = "hold_expired"
    /// An operator released it by hand.
    case operatorRequest = "operator_request"
}

/// `quantity` units reserved for `orderID` are available again.
@MemberwiseInit
public struct ReservationReleased: LedgerEventPayload {
    public static let eventType = "ReservationReleased"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.reservationReleased

    public var productID: ProductID
    public var orderID: OrderID
    public var quantity: Int64
    public var reason: ReservationReleaseReason

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case orderID = "order_id"
        case quantity, reason
    }
}

/// A reservation became a sale (capture or shipment): reserved and on hand both shrink by `quantity`.
@MemberwiseInit
public struct StockSold: LedgerEventPayload {
    public static let eventType = "StockSold"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.stockSold

    public var productID: ProductID
    public var orderID: OrderID
    public var quantity: Int64

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case orderID = "order_id"
        case quantity
    }
}

/// Every event of a product stream.
public enum ProductEvent: Hashable, Sendable {
    case listed(ProductListed)
    case priceChanged(ProductPriceChanged)
    case stockReceived(StockReceived)
    case stockReserved(StockReserved)
    case reservationReleased(ReservationReleased)
    case stockSold(StockSold)

    public var productID: ProductID {
        switch self {
        case .listed(let e): return e.productID
        case .priceChanged(let e): return e.productID
        case .stockReceived(let e): return e.productID
        case .stockReserved(let e): return e.productID
        case .reservationReleased(let e): return e.productID
        case .stockSold(let e): return e.productID
        }
    }
}

// MARK: - State

/// A product as its stream says it is now: listing, price and the three stock figures.
public struct ProductState: Hashable, Sendable {
    public var id: ProductID
    public var sku: String
    public var name: String
    public var description: String
    public var imageFile: String
    public var price: Money
    /// Units physically held. Never negative.
    public private(set) var onHand: Int64 = 0
    /// Units promised to orders, by order. Every value is > 0; an order with nothing reserved is absent.
    /// A persistent map: a hot product can hold tens of thousands of open reservations, and every
    /// decision works on a copy of the state, so copies share structure and a change costs O(log n).
    public private(set) var reservations: TreeDictionary<OrderID, Int64> = [:]
    /// Σ ``reservations``, kept alongside so reads need no sum.
    public private(set) var reserved: Int64 = 0
    /// Units sold over the stream's life. On hand + sold changes only by ``StockReceived``.
    public private(set) var sold: Int64 = 0
    /// Units received over the stream's life.
    public private(set) var received: Int64 = 0
    /// The stream version this state reflects (number of events folded), for optimistic concurrency.
    public private(set) var version: Int64 = 0

    /// Units that can still be promised: on hand − reserved.
    public var available: Int64 { onHand - reserved }

    init(listed e: ProductListed) {
        id = e.productID
        sku = e.sku
        name = e.name
        description = e.description
        imageFile = e.imageFile
        price = e.price
    }

    /// Folds one event. `nil` is the state of a stream with no events (the product does not exist).
    ///
    /// Evolve trusts the log: it does not re-check what the decider checked, because an event in the
    /// log is a fact. Arithmetic that could only go wrong on a corrupted log traps rather than wraps.
    public static func evolve(_ state: ProductState?, _ event: ProductEvent) -> ProductState? {
        guard var state else {
            guard case .listed(let listed) = event else { return nil }
            var fresh = ProductState(listed: listed)
            fresh.version = 1
            return fresh
        }
        state.apply(event)
        return state
    }

    /// Folds one event into an existing product, in place. Prefer it over ``evolve(_:_:)`` on hot
    /// paths: mutating in place keeps the reservations table unshared, so a fold costs O(1) instead
    /// of a copy of every open reservation.
    public mutating func apply(_ event: ProductEvent) {
        switch event {
        case .listed(let e):
            // A second listing only happens if someone bypassed the decider; keep the newest facts.
            sku = e.sku
            name = e.name
            description = e.description
            imageFile = e.imageFile
            price = e.price
        case .priceChanged(let e):
            price = e.price
        case .stockReceived(let e):
            onHand += e.quantity
            received += e.quantity
        case .stockReserved(let e):
            reservations[e.orderID, default: 0] += e.quantity
            reserved += e.quantity
        case .reservationReleased(let e):
            reduceReservation(of: e.orderID, by: e.quantity)
        case .stockSold(let e):
            reduceReservation(of: e.orderID, by: e.quantity)
            onHand -= e.quantity
            sold += e.quantity
        }
        version += 1
    }

    private mutating func reduceReservation(of order: OrderID, by quantity: Int64) {
        let left = (reservations[order] ?? 0) - quantity
        reservations[order] = left > 0 ? left : nil
        reserved -= quantity
    }

    /// Folds a whole stream.
    public static func fold<S: Sequence>(_ events: S) -> ProductState? where S.Element == ProductEvent {
        events.reduce(nil as ProductState?) { evolve($0, $1) }
    }
}

extension ProductState {
    /// A state exactly as a snapshot recorded it (``InventoryHistory``): every figure the fold keeps,
    /// given back as it was (`reserved` too, not recomputed, so that a restored state is the folded one).
    public init(
        id: ProductID,
        sku: String,
        name: String,
        description: String,
        imageFile: String,
        price: Money,
        onHand: Int64,
        reservations: TreeDictionary<OrderID, Int64>,
        reserved: Int64,
        sold: Int64,
        received: Int64,
        version: Int64
    ) {
        self.id = id
        self.sku = sku
        self.name = name
        self.description = description
        self.imageFile = imageFile
        self.price = price
        self.onHand = onHand
        self.reservations = reservations
        self.reserved = reserved
        self.sold = sold
        self.received = received
        self.version = version
    }
}

// MARK: - Commands

/// What can be asked of a product stream.
public enum ProductCommand: Hashable, Sendable {
    /// Enter a product in the catalog, optionally with its first stock (one atomic append).
    case list(sku: String?, name: String, description: String, imageFile: String, price: Money, initialStock: Int64)
    case changePrice(Money)
    case receiveStock(quantity: Int64)
    case reserve(order: OrderID, quantity: Int64)
    /// Release `quantity` of the order's reservation, or all of it when `nil`.
    case release(order: OrderID, quantity: Int64?, reason: ReservationReleaseReason)
    /// Turn `quantity` of the order's reservation into a sale, or all of it when `nil`.
    case sell(order: OrderID, quantity: Int64?)
}

/// Why a product command was refused. Nothing is appended for a rejection.
public enum ProductRejection: Error, Hashable, Sendable, CustomStringConvertible {
    case unknownProduct(ProductID)
    case alreadyListed(ProductID)
    case invalidListing(String)
    case negativePrice(Money)
    case currencyChange(from: Currency, to: Currency)
    case nonPositiveQuantity(Int64)
    /// Receiving this much would overflow the stock counters.
    case quantityOutOfRange(Int64)
    /// Never oversell: the request exceeds available stock.
    case insufficientStock(product: ProductID, requested: Int64, available: Int64)
    case duplicateReservation(product: ProductID, order: OrderID)
    case noReservation(product: ProductID, order: OrderID)
    case exceedsReservation(product: ProductID, order: OrderID, requested: Int64, reserved: Int64)

    public var description: String {
        switch self {
        case .unknownProduct(let id): return "unknown product \(id)"
        case .alreadyListed(let id): return "product \(id) is already listed"
        case .invalidListing(let why): return "invalid listing: \(why)"
        case .negativePrice(let price): return "price \(price) is negative"
        case .currencyChange(let from, let to): return "price currency cannot change from \(from) to \(to)"
        case .nonPositiveQuantity(let q): return "quantity \(q) must be positive"
        case .quantityOutOfRange(let q): return "quantity \(q) is out of range"
        case .insufficientStock(let p, let requested, let available):
            return "product \(p): \(requested) requested, \(available) available"
        case .duplicateReservation(let p, let o): return "order \(o) already holds a reservation of \(p)"
        case .noReservation(let p, let o): return "order \(o) holds no reservation of \(p)"
        case .exceedsReservation(let p, let o, let requested, let reserved):
            return "order \(o) holds \(reserved) of \(p), \(requested) requested"
        }
    }
}

// MARK: - Decider

/// The pure decider of the product stream: command + current state → events, or a rejection.
public enum ProductDecider {
    public static func decide(
        _ command: ProductCommand,
        product id: ProductID,
        state: ProductState?,
        context: DecisionContext
    ) -> Result<[ProductEvent], ProductRejection> {
        precondition(state == nil || state?.id == id, "state of another product")
        if case .list(let sku, let name, let description, let imageFile, let price, let initialStock) = command {
            guard state == nil else { return .failure(.alreadyListed(id)) }
            guard !name.isEmpty else { return .failure(.invalidListing("empty name")) }
            guard isSafeFileName(imageFile) else { return .failure(.invalidListing("image file \(imageFile)")) }
            let sku = sku ?? id.rawValue
            guard !sku.isEmpty else { return .failure(.invalidListing("empty sku")) }
            guard !price.isNegative else { return .failure(.negativePrice(price)) }
            guard initialStock >= 0 else { return .failure(.nonPositiveQuantity(initialStock)) }
            var events: [ProductEvent] = [
                .listed(
                    ProductListed(
                        productID: id,
                        sku: sku,
                        name: name,
                        description: description,
                        imageFile: imageFile,
                        price: price
                    )
                )
            ]
            if initialStock > 0 { events.append(.stockReceived(StockReceived(productID: id, quantity: initialStock))) }
            return .success(events)
        }
        guard let state else { return .failure(.unknownProduct(id)) }
        switch command {
        case .list:
            preconditionFailure("handled above")
        case .changePrice(let price):
            guard price.currency == state.price.currency else {
                return .failure(.currencyChange(from: state.price.currency, to: price.currency))
            }
            guard !price.isNegative else { return .failure(.negativePrice(price)) }
            // Setting the price it already has is a no-op, so that a re-imported catalog appends nothing.
            guard price != state.price else { return .success([]) }
            return .success([.priceChanged(ProductPriceChanged(productID: id, previousPrice: state.price, price: price))])
        case .receiveStock(let quantity):
            guard quantity > 0 else { return .failure(.nonPositiveQuantity(quantity)) }
            // Both counters must stay representable, or a later fold would trap.
            guard state.onHand.addingReportingOverflow(quantity).overflow == false,
                state.received.addingReportingOverflow(quantity).overflow == false
            else {
                return .failure(.quantityOutOfRange(quantity))
            }
            return .success([.stockReceived(StockReceived(productID: id, quantity: quantity))])
        case .reserve(let order, let quantity):
            guard quantity > 0 else { return .failure(.nonPositiveQuantity(quantity)) }
            guard state.reservations[order] == nil else { return .failure(.duplicateReservation(product: id, order: order)) }
            guard quantity <= state.available else {
                return .failure(.insufficientStock(product: id, requested: quantity, available: state.available))
            }
            return .success([.stockReserved(StockReserved(productID: id, orderID: order, quantity: quantity))])
        case .release(let order, let quantity, let reason):
            switch reservedQuantity(state, order, quantity) {
            case .failure(let rejection): return .failure(rejection)
            case .success(let q):
                return .success([.reservationReleased(ReservationReleased(productID: id, orderID: order, quantity: q, reason: reason))])
            }
        case .sell(let order, let quantity):
            switch reservedQuantity(state, order, quantity) {
            case .failure(let rejection): return .failure(rejection)
            case .success(let q): return .success([.stockSold(StockSold(productID: id, orderID: order, quantity: q))])
            }
        }
    }

    /// Checks a release/sale against the order's reservation; `nil` means all of it.
    private static func reservedQuantity(_ state: ProductState, _ order: OrderID, _ quantity: Int64?) -> Result<Int64, ProductRejection> {
        guard let held = state.reservations[order] else { return .failure(.noReservation(product: state.id, order: order)) }
        let q = quantity ?? held
        guard q > 0 else { return .failure(.nonPositiveQuantity(q)) }
        guard q <= held else { return .failure(.exceedsReservation(product: state.id, order: order, requested: q, reserved: held)) }
        return .success(q)
    }

    /// A bare file name: the image route serves from one directory, so no separators and no `..`.
    static func isSafeFileName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.hasPrefix(".") && DomainIdentifierRules.isValid(name)
    }
}
