import Foundation
import LedgerCore

/// The `orders` read model: one row per order, for `GET /orders/{id}` and the order list.
package enum OrderReadModel {
    package static let projection = "orders"

    struct Row: Encodable {
        struct Line: Encodable {
            let product_id, name, unit_price: String
            let quantity: Int64
            let line_total: String
        }
        struct Hold: Encodable {
            let psp_reference, auth_code, amount, open: String
            let network, funding_type, last_four: String?
            let expires_at, authorized_at: String
            /// `open` while money is held on the card, else `closed`.
            let state: String
        }
        struct Shipment: Encodable {
            let carrier, tracking: String?
            let shipped_at: String
        }
        let id, status, currency, subtotal, shipping, tax, total, opened_at, shipping_method: String
        let lines: [Line]
        let psp_reference, decline_code, decline_message: String?
        let hold: Hold?
        /// The money figures of the order's payment (authorized, captured, refunded, open, …).
        let payment: HoldFigures?
        let shipment: Shipment?
        let version: Int64
    }

    package static func row(_ order: OrderState, hold: HoldState?) throws -> ProjectionRow {
        let amounts = order.amounts
        let row = Row(
            id: order.id.rawValue,
            status: order.status.rawValue,
            currency: amounts.total.currency.code,
            subtotal: amounts.subtotal.decimalString,
            shipping: amounts.shipping.decimalString,
            tax: amounts.tax.decimalString,
            total: amounts.total.decimalString,
            opened_at: timestamp(order.openedAt),
            shipping_method: order.shipping.name,
            lines: order.lines.map {
                Row.Line(
                    product_id: $0.productID.rawValue,
                    name: $0.name,
                    unit_price: $0.unitPrice.decimalString,
                    quantity: $0.quantity,
                    line_total: $0.lineTotal.decimalString
                )
            },
            psp_reference: order.pspReference,
            decline_code: order.lastResponseCode?.rawValue,
            decline_message: order.lastResponseMessage,
            hold: hold.map {
                Row.Hold(
                    psp_reference: $0.pspReference,
                    auth_code: $0.authCode,
                    amount: $0.balance.authorized.decimalString,
                    open: $0.balance.open.decimalString,
                    network: $0.network?.rawValue,
                    funding_type: $0.fundingType?.rawValue,
                    last_four: $0.lastFour,
                    expires_at: timestamp($0.expiresAt),
                    authorized_at: timestamp($0.authorizedAt),
                    state: HoldReadModel.state(of: $0)
                )
            },
            payment: hold.map { HoldFigures($0.balance) },
            shipment: order.shipment.map { Row.Shipment(carrier: $0.carrier, tracking: $0.tracking, shipped_at: timestamp($0.shippedAt)) },
            version: order.version
        )
        return ProjectionRow(
            projection: projection,
            key: order.id.rawValue,
            stream: order.id.streamID,
            version: order.version,
            json: try CatalogReadModel.json(row)
        )
    }

    /// RFC 3339 UTC with microseconds, fixed width (so the order list can compare it as text).
    package static func timestamp(_ date: Date) -> String { EventJSON.timestamp(date.epochMicroseconds) }
}
