import Foundation
import LedgerCore

extension AggregateStates {
    /// The states as a read at `now` shows them: a hold past its expiry that the sweeper has not
    /// recorded yet no longer holds money or stock. An authorized order reads `expired` (a partly
    /// captured one `captured`: ``HoldLifecycle/lapsedStatus(order:hold:)``, the status the sweeper
    /// will record) and its hold `closed`; and, when its expiry would return the stock
    /// (``HoldLifecycle/expiryReleasesStock(order:hold:)``), the order's reservations count as
    /// available. The money figures stay as recorded until the sweeper records the expiry.
    ///
    /// The live reads apply the same rule in SQL over the read models (`ProjectionOrderReader`,
    /// `ProjectionStorefrontReader`); as-of reads apply it here, at the as-of instant, to states
    /// folded from the log, so that both answer alike at every moment (the as-of tests compare them).
    package func lapsed(at now: Date) -> AggregateStates {
        var states = self
        let nowMicros = now.epochMicroseconds
        for (id, hold) in holds where !hold.isClosed && nowMicros >= hold.expiresAt.epochMicroseconds {
            guard var order = states.orders[id] else { continue }
            if HoldLifecycle.expiryReleasesStock(order: order, hold: hold) {
                for line in order.lines where states.products[line.productID] != nil {
                    states.products[line.productID]!.apply(
                        .reservationReleased(
                            ReservationReleased(
                                productID: line.productID,
                                orderID: id,
                                quantity: line.quantity,
                                reason: .holdExpired
                            )
                        )
                    )
                }
            }
            // e.g. partially refunded with money still open: reads show it as recorded
            guard let status = HoldLifecycle.lapsedStatus(order: order, hold: hold) else { continue }
            order.status = status
            states.orders[id] = order
            states.holds[id]!.expiredAt = hold.expiresAt
        }
        return states
    }
}
