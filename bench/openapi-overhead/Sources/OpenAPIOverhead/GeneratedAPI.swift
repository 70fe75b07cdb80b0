import Foundation
import HTTPTypes
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

/// Mode `generated-buffered` (a diagnosis, not run by default): the same generated server on a 20-line transport of
/// our own instead of swift-openapi-hummingbird's. Requests are handed over the same way; the reply differs: the
/// generated server's `HTTPBody` is collected into one `ByteBuffer` and answered as Hummingbird's plain routes answer
/// (head and body in one write), where swift-openapi-hummingbird streams it (`ResponseBody(contentLength:)`, a write
/// per part after the head). What this mode saves against `generated` is what that streaming costs.
struct BufferedRouterTransport: ServerTransport {
    let router: Router<BasicRequestContext>

    func register(
        _ handler: @escaping @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        method: HTTPRequest.Method,
        path: String
    ) throws {
        router.on(RouterPath(path), method: method) { request, context -> Response in
            let length: HTTPBody.Length = request.headers[.contentLength].flatMap { Int64($0) }.map { .known($0) } ?? .unknown
            let body = HTTPBody(request.body.map { [UInt8](buffer: $0) }, length: length, iterationBehavior: .single)
            let parameters = [String: Substring](context.parameters.map { (String($0.0), $0.1) }) { first, _ in first }
            let (response, responseBody) = try await handler(request.head, body, .init(pathParameters: parameters))
            var buffer = ByteBuffer()
            if let responseBody {
                for try await chunk in responseBody { buffer.writeBytes(chunk) }
            }
            return Response(status: response.status, headers: response.headerFields, body: .init(byteBuffer: buffer))
        }
    }
}

extension GeneratedAPI {
    static func registerBuffered(_ ledger: Ledger, on router: Router<BasicRequestContext>) throws {
        try GeneratedAPI(ledger: ledger).registerHandlers(
            on: BufferedRouterTransport(router: router),
            serverURL: URL(string: "/")!,
            configuration: JSONCoders.openAPIConfiguration,
            middlewares: [ErrorHandlingMiddleware()]
        )
    }
}
