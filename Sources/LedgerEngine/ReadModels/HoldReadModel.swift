import Foundation
import LedgerCore

/// The `holds` read model: one row per authorization hold, for `GET /authorizations` and the
/// expiry sweeper (open holds by expiry). Carries the order's lines, so that reads can treat a
/// lapsed hold's stock as available before the sweeper records the expiry.
package enum HoldReadModel {
    package static let projection = "holds"

    struct Row: Encodable {
        struct Line: Encodable {
            let product_id: String
            let quantity: Int64
        }
        let order_id, psp_reference, auth_code, state, order_status, expires_at, authorized_at: String
        let network, funding_type, last_four: String?
        let figures: HoldFigures
        /// The stock this hold's expiry would release (empty when it would release none).
        let released_on_expiry: [Line]
        let version: Int64
    }

    /// A hold's `state` in the read models (this row's, and the order row's `hold.state`): `open`
    /// while money is held on the card, else `closed`. The live reads' lapse SQL and the expiry
    /// sweeper's query compare against these two words.
    package static func state(of hold: HoldState) -> String { hold.isClosed ? "closed" : "open" }

    /// The row's guard version (which row is newer) is the **order's** stream version: every append
    /// that changes the hold also appends to the order (exactly expected), and so does every order
    /// change the row shows (its status), so the order's version grows with every change of the row.
    /// `writtenWith`: the stream of the append the row goes with (the hold's when it is there).
    package static func row(_ hold: HoldState, order: OrderState, writtenWith stream: StreamID? = nil) throws -> ProjectionRow {
        let row = Row(
            order_id: hold.orderID.rawValue,
            psp_reference: hold.pspReference,
            auth_code: hold.authCode,
            state: state(of: hold),
            order_status: order.status.rawValue,
            expires_at: OrderReadModel.timestamp(hold.expiresAt),
            authorized_at: OrderReadModel.timestamp(hold.authorizedAt),
            network: hold.network?.rawValue,
            funding_type: hold.fundingType?.rawValue,
            last_four: hold.lastFour,
            figures: HoldFigures(hold.balance),
            released_on_expiry: HoldLifecycle.expiryReleasesStock(order: order, hold: hold)
                ? order.lines.map { Row.Line(product_id: $0.productID.rawValue, quantity: $0.quantity) } : [],
            version: hold.version
        )
        return ProjectionRow(
            projection: projection,
            key: hold.orderID.rawValue,
            stream: stream ?? hold.orderID.holdStreamID,
            version: order.version,
            json: try CatalogReadModel.json(row)
        )
    }
}
