import Foundation
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime

/// Mode `generated`: the server swift-openapi-generator made from the ledger's document (`Generated/Server.swift`),
/// registered by swift-openapi-hummingbird on a Hummingbird router, with the runtime's `ErrorHandlingMiddleware`
/// (without it every refusal the runtime raises, a missing required header among them, is a 500). Its JSON is written
/// in the ledger's form (`JSONCoders.openAPIConfiguration`) so both modes answer the same bytes.
struct GeneratedAPI: APIProtocol {
    let ledger: Ledger

    static func register(_ ledger: Ledger, on router: Router<BasicRequestContext>) throws {
        try GeneratedAPI(ledger: ledger).registerHandlers(
            on: router,
            serverURL: URL(string: "/")!,
            configuration: JSONCoders.openAPIConfiguration,
            middlewares: [ErrorHandlingMiddleware()]
        )
    }

    func listDisputes(_ input: Operations.ListDisputes.Input) async throws -> Operations.ListDisputes.Output {
        .ok(.init(body: .json(ledger.listDisputes(status: input.query.status, dueBefore: input.query.dueBefore))))
    }

    func captureOrder(_ input: Operations.CaptureOrder.Input) async throws -> Operations.CaptureOrder.Output {
        let body: CaptureBody
        switch input.body {
        case .json(let payload): body = payload
        case nil: body = CaptureBody()
        }
        let reply = try ledger.capture(orderID: input.path.id, idempotencyKey: input.headers.idempotencyKey, body: body)
        return .ok(.init(body: .json(reply)))
    }
}
