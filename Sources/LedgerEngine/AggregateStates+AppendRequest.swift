import Foundation
import LedgerCore

extension AggregateStates {
    /// The append request for `plan` — its events, and the read-model rows of every aggregate it
    /// touches — and the states after it (what the store may remember once the append commits). The events' ids
    /// come from `ids`.
    package func appendRequest(
        for plan: [PlannedAppend],
        now: Date,
        metadata: EventMetadata,
        idempotency: IdempotencyKey? = nil,
        ids: any IDSource = RandomIDs()
    ) throws -> (request: AppendRequest, after: AggregateStates) {
        var after = self
        var touchedProducts: [ProductID] = []
        var touchedMethods: [ShippingMethodID] = []
        var touchedOrders: [OrderID] = []
        var seenOrders: Set<OrderID> = []  // an expiry page touches hundreds of orders: no linear search per event
        var streams: [StreamAppend] = []
        for planned in plan {
            streams.append(
                StreamAppend(
                    streamID: planned.streamID,
                    expectedVersion: planned.expectedVersion,
                    events: try planned.events.map { try $0.newEvent(eventID: ids.next(), effectiveAt: now) }
                )
            )
            for event in planned.events {
                after.apply(event)
                switch event {
                case .product(let e):
                    if !touchedProducts.contains(e.productID) { touchedProducts.append(e.productID) }
                case .shippingMethod(let e):
                    if !touchedMethods.contains(e.shippingMethodID) { touchedMethods.append(e.shippingMethodID) }
                case .order(let e):
                    if seenOrders.insert(e.orderID).inserted { touchedOrders.append(e.orderID) }
                case .hold(let e):
                    if seenOrders.insert(e.orderID).inserted { touchedOrders.append(e.orderID) }
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
                appended.contains(id.holdStreamID) || appended.contains(id.streamID)
            {
                let stream = appended.contains(id.holdStreamID) ? id.holdStreamID : id.streamID
                rows.append(try HoldReadModel.row(hold, order: order, writtenWith: stream))
            }
        }
        return (AppendRequest(streams: streams, metadata: metadata, idempotency: idempotency, projections: rows), after)
    }
}
