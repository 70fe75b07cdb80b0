import Foundation
import Hummingbird
import LedgerCore
import LedgerMacros
import LedgerServices

/// What `/health` needs to know about the ledger, without depending on the database module.
public protocol LedgerHealthProbe: Sendable {
    /// The last committed position; throws when the database cannot be reached.
    func lastPosition() async throws -> Int64
}

/// `GET /health` and `GET /metrics`: for scripts that wait for the daemon and for Prometheus. `/health` is open (it says
/// only up or down and the head's position); `/metrics` tells request counts by route and status, sign-in attempts and
/// event volumes, so it is a back-office read (security review 4, L8): ``registerMetrics(on:)`` puts it behind the
/// group's key check (an operator or auditor key; Prometheus sends one as a bearer token, docs/operations.md).
@MemberwiseInit
public struct SystemRoutes<Context: RequestContext>: Sendable {
    let probe: any LedgerHealthProbe
    let metricsText: @Sendable () -> String

    struct Health: ResponseEncodable {
        struct Database: Encodable {
            let status: String
            let lastPosition: Int64?
            enum CodingKeys: String, CodingKey {
                case status
                case lastPosition = "last_position"
            }
        }
        let status: String
        let database: Database
    }

    public func register(on router: Router<Context>) {
        router.get("/health") { _, context -> EditedResponse<Health> in
            do {
                let position = try await probe.lastPosition()
                return EditedResponse(status: .ok, response: Health(status: "ok", database: .init(status: "up", lastPosition: position)))
            } catch {
                context.logger.warning("health check: database unreachable", metadata: ["error": "\(String(reflecting: error))"])
                return EditedResponse(
                    status: .serviceUnavailable,
                    response: Health(status: "unavailable", database: .init(status: "down", lastPosition: nil))
                )
            }
        }
    }

    /// `GET /metrics` on `group`, whose middleware decides who may read it.
    public func registerMetrics(on group: RouterGroup<Context>) {
        group.get("/metrics") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metricsText())))
        }
    }
}
