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
                productID: listed.productID,
                sku: listed.sku,
                name: listed.name,
                description: listed.description,
                imageURI: listed.imageFile,
                quantityOnHand: row?.quantityOnHand ?? 0,
                reserved: row?.reserved ?? 0,
                price: listed.price
            )
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
            return ShippingMethodRow(
                shippingMethodID: l.shippingMethodID,
                name: l.name,
                description: l.description,
                transitDays: l.transitDays,
                price: l.price
            )
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

// Orders have no separate summary fold: the order read model is computed from the folded
// `OrderState` and `HoldState` (one code path for live rows, rebuilds and as-of reads).
