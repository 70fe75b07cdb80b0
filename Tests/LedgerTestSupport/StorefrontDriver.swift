import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerHTTP
import Testing

/// The storefront app's side of the API, as a shopper's phone calls it: the catalog, the shipping
/// methods and `POST /payment`. No key; every call goes through the real router.
public struct StorefrontDriver: Sendable {
    /// A driver; it keeps no state, the client passed to each call is the app.
    public init() {}

    /// A row of `GET /inventory`.
    public struct Product: Decodable, Equatable, Sendable {
        public let id, name, description, image_uri, price, currency: String
        public let quantity_on_hand, reserved, available: Int64

        /// A row as the API sends it (to compare with what it sent).
        public init(
            id: String,
            name: String,
            description: String,
            image_uri: String,
            price: String,
            currency: String,
            quantity_on_hand: Int64,
            reserved: Int64,
            available: Int64
        ) {
            self.id = id
            self.name = name
            self.description = description
            self.image_uri = image_uri
            self.price = price
            self.currency = currency
            self.quantity_on_hand = quantity_on_hand
            self.reserved = reserved
            self.available = available
        }
    }

    /// A row of `GET /shipping_methods`.
    public struct ShippingMethod: Decodable, Equatable, Sendable {
        public let id, name, description, price, currency: String
        public let transit_days: Int

        /// A method as the API sends it (to compare with what it sent).
        public init(id: String, name: String, description: String, price: String, currency: String, transit_days: Int) {
            self.id = id
            self.name = name
            self.description = description
            self.price = price
            self.currency = currency
            self.transit_days = transit_days
        }
    }

    /// The app's `POST /payment` body: one `product` (a catalog name) shipped by `method` to Jane Appleseed,
    /// paid with card token `source`; `amount` is the total in cents (59.00 for a Clock with Standard shipping).
    /// `extra` adds or replaces fields.
    public static func paymentBody(
        source: String = "tok_visa",
        amount: Int = 5900,
        product: String = "Clock",
        method: String = "Standard",
        extra: [String: Any] = [:]
    ) -> Data {
        var body: [String: Any] = [
            "gateway": "stripe", "source": source, "amount": amount, "currency": "USD", "description": product,
            "shipping_contact": "Jane Appleseed", "shipping_email": "jane@example.com", "shipping_street": "1 Infinite Loop",
            "shipping_city": "Cupertino", "shipping_state": "CA", "shipping_zip": "95014", "shipping_method_name": method,
        ]
        for (key, value) in extra { body[key] = value }
        do {
            return try JSONSerialization.data(withJSONObject: body)
        } catch {
            preconditionFailure("a payment body that is not JSON: \(error)")
        }
    }

    /// `POST /payment` with `body`; the status and the reply's text.
    public func pay(
        _ client: any TestClientProtocol,
        _ body: Data,
        key: String? = nil,
        contentType: String = "application/json"
    ) async throws -> (HTTPResponse.Status, String) {
        var headers: HTTPFields = [.contentType: contentType]
        if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
        return try await client.execute(uri: "/payment", method: .post, headers: headers, body: ByteBuffer(bytes: body)) {
            ($0.status, String(buffer: $0.body))
        }
    }

    /// Pays for one `product` (by default a Clock, 59.00 USD) and returns the new order's id; expects 200.
    public func placeOrder(
        _ client: any TestClientProtocol,
        source: String = "tok_visa",
        product: String = "Clock",
        amount: Int = 5900,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let (status, text) = try await pay(client, Self.paymentBody(source: source, amount: amount, product: product))
        #expect(status == .ok, "\(text)", sourceLocation: sourceLocation)
        return try WireJSON.decode(PaymentReply.self, from: text).orderId
    }

    /// `GET /inventory`; expects 200 and JSON.
    public func inventory(_ client: any TestClientProtocol, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Product] {
        try await client.execute(uri: "/inventory", method: .get) { response in
            #expect(response.status == .ok, sourceLocation: sourceLocation)
            #expect(response.headers[.contentType]?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
            return try JSONDecoder().decode([Product].self, from: Data(buffer: response.body))
        }
    }

    /// The demo catalog's clock (the product most tests buy), from `GET /inventory`.
    public func clockRow(_ client: any TestClientProtocol, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Product {
        let rows = try await inventory(client, sourceLocation: sourceLocation)
        return try #require(rows.first { $0.id == "clock" }, "no clock in the inventory", sourceLocation: sourceLocation)
    }

    /// `GET /shipping_methods`; expects 200.
    public func shippingMethods(
        _ client: any TestClientProtocol,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [ShippingMethod] {
        try await client.execute(uri: "/shipping_methods", method: .get) { response in
            #expect(response.status == .ok, sourceLocation: sourceLocation)
            return try JSONDecoder().decode([ShippingMethod].self, from: Data(buffer: response.body))
        }
    }
}
