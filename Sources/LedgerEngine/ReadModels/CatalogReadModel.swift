import Foundation
import LedgerCore

/// The catalog's read models, `inventory` and `shipping_methods` in `ledger.projection_rows`: one
/// row per product / shipping method in the storefront app's field names (`price` as a decimal
/// string), computed from the aggregate's state after its events and written with them.
public enum CatalogReadModel {
    public static let inventory = "inventory"
    public static let shippingMethods = "shipping_methods"

    public static func row(_ state: ProductState) throws -> ProjectionRow {
        struct Row: Encodable {
            let id, name, description, image_uri, price, currency: String
            let quantity_on_hand, reserved, available: Int64
        }
        let row = Row(
            id: state.id.rawValue,
            name: state.name,
            description: state.description,
            image_uri: state.imageFile,
            price: state.price.decimalString,
            currency: state.price.currency.code,
            quantity_on_hand: state.onHand,
            reserved: state.reserved,
            available: state.available
        )
        return ProjectionRow(
            projection: inventory,
            key: state.id.rawValue,
            stream: state.id.streamID,
            version: state.version,
            json: try json(row)
        )
    }

    public static func row(_ state: ShippingMethodState) throws -> ProjectionRow {
        struct Row: Encodable {
            let id, name, description, price, currency: String
            let transit_days: Int
        }
        let row = Row(
            id: state.id.rawValue,
            name: state.name,
            description: state.description,
            price: state.price.decimalString,
            currency: state.price.currency.code,
            transit_days: state.transitDays
        )
        return ProjectionRow(
            projection: shippingMethods,
            key: state.id.rawValue,
            stream: state.id.streamID,
            version: state.version,
            json: try json(row)
        )
    }

    /// Canonical JSON of `value` (sorted keys, unescaped slashes): the bytes of every read-model
    /// row, and of the services' JSON answers, so that the same value always gives the same text.
    package static func json(_ value: some Encodable) throws -> String { try LedgerJSON.string(value) }
}
