import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerServices

/// Everything under `/console` leaves with the console's security headers, found route or not, and as HTML: an error
/// (already mapped to an ``APIError`` by ``ErrorMiddleware``, which runs inside this one) becomes an HTML page with the
/// same code and message, not the API's JSON.
///
/// The Content-Security-Policy allows the console's own stylesheet, images and form targets and nothing else: no
/// script at all, no inline style, no framing (``contentSecurityPolicy``).
public struct ConsoleMiddleware<Context: RequestContext>: RouterMiddleware {
    public static var contentSecurityPolicy: String {
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard path == "/console" || path.hasPrefix("/console/") else { return try await next(request, context) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            response = ConsolePages.error(error, session: nil)
        }
        Self.secure(&response.headers)
        return response
    }

    /// The headers every console reply carries.
    static func secure(_ headers: inout HTTPFields) {
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        headers[.cacheControl] = "no-store"
    }
}
