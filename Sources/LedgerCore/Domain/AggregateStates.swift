import LedgerMacros

/// The aggregate states a decision reads, keyed by id, and the one fold of domain events into them (the writer, the
/// aggregate store, the rebuilders and the in-memory test ledger all fold through ``apply(_:)``). Applying a plan's events to
/// the states it was decided against gives the states after the append.
@MemberwiseInit
package struct AggregateStates: Sendable {
    package var products: [ProductID: ProductState] = [:]
    package var shippingMethods: [ShippingMethodID: ShippingMethodState] = [:]
    package var orders: [OrderID: OrderState] = [:]
    package var holds: [OrderID: HoldState] = [:]

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
}
