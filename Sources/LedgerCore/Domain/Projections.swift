import struct Foundation.Date

// Read models as pure folds. Each projection has a row-level function, `apply(event, to: row?) → row?`,
// which the inline SQL projection writer uses (load the row the event touches, apply, upsert), and a
// whole-table value that folds a log from nothing, which is what "replay the log into empty
// projections" does. Both go through the same function, so they cannot disagree.

// MARK: - Inventory

/// One row of `GET /inventory`: the app's fields plus id, reserved and available.
public struct InventoryRow: Hashable, Sendable {
    public var productID: ProductID
    public var sku: String
    public var name: String
    public var description: String
    /// The picture's file name; the HTTP layer serves it at `/product_image/<file>`.
    public var imageURI: String
    public var quantityOnHand: Int64
    public var reserved: Int64
    public var price: Money
    /// on hand − reserved.
    public var available: Int64 { quantityOnHand - reserved }

    /// The row after `event`; `nil` (no row) until the product is listed. Events of other streams leave it as is.
    public static func apply(_ event: DomainEvent, to row: InventoryRow?) -> InventoryRow? {
        guard case .product(let e) = event else { return row }
        if case .listed(let listed) = e {
            return InventoryRow(
                productID: listed.productID, sku: listed.sku, name: listed.name, description: listed.description,
                imageURI: listed.imageFile, quantityOnHand: row?.quantityOnHand ?? 0, reserved: row?.reserved ?? 0,
                price: listed.price)
        }
        guard var row else { return nil }
        switch e {
        case .listed: break
        case .priceChanged(let p): row.price = p.price
        case .stockReceived(let s): row.quantityOnHand += s.quantity
        case .stockReserved(let s): row.reserved += s.quantity
        case .reservationReleased(let s): row.reserved -= s.quantity
        case .stockSold(let s):
            row.reserved -= s.quantity
            row.quantityOnHand -= s.quantity
        }
        return row
    }
}

/// The whole inventory table, in listing order.
public struct InventoryProjection: Hashable, Sendable {
    public private(set) var rowsByID: [ProductID: InventoryRow] = [:]
    private var order: [ProductID] = []

    public init() {}

    /// Applies one event; returns the row it changed (to upsert), if any.
    @discardableResult
    public mutating func apply(_ event: DomainEvent) -> InventoryRow? {
        guard case .product(let e) = event else { return nil }
        let id = e.productID
        let updated = InventoryRow.apply(event, to: rowsByID[id])
        if rowsByID[id] == nil && updated != nil { order.append(id) }
        rowsByID[id] = updated
        return updated
    }

    /// Rows in the order products were listed (the demo catalog's order).
    public var rows: [InventoryRow] { order.compactMap { rowsByID[$0] } }
}

// MARK: - Shipping methods

/// One row of `GET /shipping_methods`.
public struct ShippingMethodRow: Hashable, Sendable {
    public var shippingMethodID: ShippingMethodID
    public var name: String
    public var description: String
    public var transitDays: Int
    public var price: Money

    public static func apply(_ event: DomainEvent, to row: ShippingMethodRow?) -> ShippingMethodRow? {
        guard case .shippingMethod(let e) = event else { return row }
        switch e {
        case .listed(let l):
            return ShippingMethodRow(shippingMethodID: l.shippingMethodID, name: l.name, description: l.description, transitDays: l.transitDays, price: l.price)
        case .priceChanged(let p):
            guard var row else { return nil }
            row.price = p.price
            return row
        }
    }
}

/// The whole shipping-method table, in listing order.
public struct ShippingMethodsProjection: Hashable, Sendable {
    public private(set) var rowsByID: [ShippingMethodID: ShippingMethodRow] = [:]
    private var order: [ShippingMethodID] = []

    public init() {}

    @discardableResult
    public mutating func apply(_ event: DomainEvent) -> ShippingMethodRow? {
        guard case .shippingMethod(let e) = event else { return nil }
        let id = e.shippingMethodID
        let updated = ShippingMethodRow.apply(event, to: rowsByID[id])
        if rowsByID[id] == nil && updated != nil { order.append(id) }
        rowsByID[id] = updated
        return updated
    }

    public var rows: [ShippingMethodRow] { order.compactMap { rowsByID[$0] } }
}

// MARK: - Orders

/// The hold as an order summary shows it.
public struct HoldSummary: Hashable, Sendable {
    public var pspReference: String
    public var authCode: String
    public var amount: Money
    public var network: CardNetwork?
    public var fundingType: FundingType?
    public var lastFour: String?
    public var expiresAt: Date
    public var authorizedAt: Date
}

/// One row of the order status projection (`GET /orders/{id}`, `GET /orders?status=…`).
public struct OrderSummary: Hashable, Sendable {
    public var orderID: OrderID
    public var status: OrderStatus
    public var lines: [OrderLine]
    public var shipping: ShippingSelection
    public var amounts: OrderAmounts
    public var contactRef: String
    public var openedAt: Date
    /// The reply `id` once authorized.
    public var pspReference: String?
    public var hold: HoldSummary?
    /// The decline or unknown-outcome code and message, if the last answer was not an approval.
    public var responseCode: ResponseCode?
    public var responseMessage: String?
    public var cancellationReason: OrderCancellationReason?

    /// The row after `event`; order and hold events apply, others leave it as is.
    public static func apply(_ event: DomainEvent, to row: OrderSummary?) -> OrderSummary? {
        switch event {
        case .order(.opened(let e)):
            // The first opening is authoritative (as in ``OrderState/evolve(_:_:)``).
            if let row { return row }
            return OrderSummary(
                orderID: e.orderID, status: .pendingPayment, lines: e.lines, shipping: e.shipping, amounts: e.amounts,
                contactRef: e.contactRef, openedAt: e.openedAt)
        case .order(.authorized(let e)):
            guard var row else { return nil }
            row.status = .authorized
            row.pspReference = e.pspReference
            return row
        case .order(.paymentDeclined(let e)):
            guard var row else { return nil }
            row.status = .declined
            row.pspReference = e.pspReference
            row.responseCode = e.responseCode
            row.responseMessage = e.message
            return row
        case .order(.paymentOutcomeUnknown(let e)):
            guard var row else { return nil }
            row.status = .paymentUnknown
            row.responseCode = e.responseCode
            row.responseMessage = e.message
            return row
        case .order(.cancelled(let e)):
            guard var row else { return nil }
            row.status = .cancelled
            row.cancellationReason = e.reason
            return row
        case .hold(.placed(let e)):
            guard var row else { return nil }
            row.hold = HoldSummary(
                pspReference: e.pspReference, authCode: e.authCode, amount: e.amount, network: e.network,
                fundingType: e.fundingType, lastFour: e.lastFour, expiresAt: e.expiresAt, authorizedAt: e.authorizedAt)
            return row
        case .product, .shippingMethod:
            return row
        }
    }

    /// The order this event is about, if it is an order or hold event.
    public static func orderID(of event: DomainEvent) -> OrderID? {
        switch event {
        case .order(let e): return e.orderID
        case .hold(let e): return e.orderID
        case .product, .shippingMethod: return nil
        }
    }

    init(orderID: OrderID, status: OrderStatus, lines: [OrderLine], shipping: ShippingSelection, amounts: OrderAmounts, contactRef: String, openedAt: Date) {
        self.orderID = orderID
        self.status = status
        self.lines = lines
        self.shipping = shipping
        self.amounts = amounts
        self.contactRef = contactRef
        self.openedAt = openedAt
    }
}

/// The whole order table.
public struct OrderSummaryProjection: Hashable, Sendable {
    public private(set) var rowsByID: [OrderID: OrderSummary] = [:]

    public init() {}

    @discardableResult
    public mutating func apply(_ event: DomainEvent) -> OrderSummary? {
        guard let id = OrderSummary.orderID(of: event) else { return nil }
        let updated = OrderSummary.apply(event, to: rowsByID[id])
        rowsByID[id] = updated
        return updated
    }
}
