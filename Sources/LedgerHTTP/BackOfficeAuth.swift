import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// Guards back-office routes: `Authorization: Bearer <key>`. A missing or unknown key is 401
/// (with `WWW-Authenticate`), a known key without the needed role is 403; either way the request
/// never reaches its handler, so nothing changes. A key presented and not valid is recorded in `failures`
/// (logged with the source address, counted per source).
public struct BackOfficeAuthMiddleware: RouterMiddleware {
    public typealias Context = LedgerRequestContext

    /// What a route needs: reading (operators and auditors) or changing (operators only).
    public enum Access: Sendable { case read, change }

    let keyring: APIKeyring
    let access: Access
    let failures: AuthenticationFailures?

    public init(keyring: APIKeyring, access: Access, failures: AuthenticationFailures? = nil) {
        self.keyring = keyring
        self.access = access
        self.failures = failures
    }

    public func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.principal = try Self.principal(for: request, keyring: keyring, access: access, failures: failures, source: context.sourceAddress)
        return try await next(request, context)
    }

    /// The caller, when its key grants `access`; otherwise the 401 or 403 the middleware answers.
    /// For a route that needs a key only for some of its queries.
    public static func principal(
        for request: Request,
        keyring: APIKeyring,
        access: Access,
        failures: AuthenticationFailures? = nil,
        source: String = "unknown"
    ) throws -> Principal {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer "),
            case let key = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces), !key.isEmpty
        else {
            throw APIError.unauthenticated("an API key is required: Authorization: Bearer <key>")
        }
        guard let principal = keyring.principal(forKey: key) else {
            failures?.record(.apiKey, source: source)
            throw APIError.unauthenticated("the API key is not valid")
        }
        if access == .change && principal.role != .operator {
            throw APIError(status: .forbidden, code: "forbidden", message: "this endpoint needs an operator key")
        }
        return principal
    }
}

extension APIError {
    public static func unauthenticated(_ message: String) -> APIError {
        APIError(status: .unauthorized, code: "unauthenticated", message: message)
    }
}
