import HTTPTypes
import Hummingbird
import LedgerServices

extension HTTPField.Name {
    /// The ledger position a reply reflects: every event up to it was in what the reply was read from.
    public static let ledgerPosition = Self("Ledger-Position")!
}

/// Auditors' reads (history, as-of, feed and exports, verification): `min_position=N` waits for a position (see
/// ``LedgerPositions``), and every reply carries `Ledger-Position`.
public struct LedgerPositionMiddleware<Context: RequestContext>: RouterMiddleware {
    let positions: LedgerPositions

    public init(positions: LedgerPositions) { self.positions = positions }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let wanted = try request.uri.queryParameters["min_position"].map {
            try AuditRoutes.integer(String($0), name: "min_position", default: 0, range: 0...Int64.max)
        }
        let position = try await positions.position(atLeast: wanted)
        var response = try await next(request, context)
        response.headers[.ledgerPosition] = String(position)
        return response
    }
}
