import Hummingbird

/// What the storefront's catalog endpoints read: the read models as JSON arrays.
public protocol StorefrontReader: Sendable {
    func inventoryJSON() async throws -> String
    func shippingMethodsJSON() async throws -> String
}

/// The storefront app's open endpoints: `GET /inventory` and `GET /shipping_methods`, served
/// from the inline read models (exact as of the last commit).
public struct StorefrontRoutes: Sendable {
    let reader: any StorefrontReader

    public init(reader: any StorefrontReader) {
        self.reader = reader
    }

    public func register(on router: Router<LedgerRequestContext>) {
        router.get("/inventory") { _, _ in jsonResponse(try await reader.inventoryJSON()) }
        router.get("/shipping_methods") { _, _ in jsonResponse(try await reader.shippingMethodsJSON()) }
    }
}
