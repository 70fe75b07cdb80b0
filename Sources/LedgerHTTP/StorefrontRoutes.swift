import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// What the storefront's catalog endpoints read: the read models as JSON arrays.
public protocol StorefrontReader: Sendable {
    func inventoryJSON() async throws -> String
    func shippingMethodsJSON() async throws -> String
}

/// The storefront app's open endpoints: `GET /inventory` and `GET /shipping_methods`, served
/// from the inline read models (exact as of the last commit).
///
/// `GET /inventory?as_of=<position | RFC 3339 time>` is the inventory as of then (a fold of the log,
/// see ``StateHistory``); unlike the live list it needs a back-office key (a fold costs more than a
/// read-model scan, and the history of stock is the back office's business).
public struct StorefrontRoutes: Sendable {
    let reader: any StorefrontReader
    let history: (reader: StateHistory, keyring: APIKeyring)?
    /// Where a key that is not valid is recorded, as on the back-office routes.
    let failures: AuthenticationFailures?

    public init(
        reader: any StorefrontReader,
        history: (reader: StateHistory, keyring: APIKeyring)? = nil,
        failures: AuthenticationFailures? = nil
    ) {
        self.reader = reader
        self.history = history
        self.failures = failures
    }

    public func register(on router: some RouterMethods<LedgerRequestContext>) {
        router.get("/inventory") { request, context in
            guard let asOf = try StateRoutes.asOf(request) else { return jsonResponse(RawJSON(stored: try await reader.inventoryJSON())) }
            guard let history else { throw APIError.badRequest("invalid_parameter", "as_of is not served here", field: "as_of") }
            _ = try BackOfficeAuthMiddleware.principal(
                for: request,
                keyring: history.keyring,
                access: .read,
                failures: failures,
                source: context.sourceAddress
            )
            return try await StateRoutes.inventoryResponse(history.reader, asOf: asOf)
        }
        router.get("/shipping_methods") { _, _ in jsonResponse(RawJSON(stored: try await reader.shippingMethodsJSON())) }
    }
}
