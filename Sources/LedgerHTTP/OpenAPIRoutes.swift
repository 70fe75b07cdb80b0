import Hummingbird
import LedgerAPI

/// `GET /openapi.yaml` and `GET /openapi.json`: the daemon's published contract (``OpenAPIDocument``, the document
/// compiled into the binary, so it is served from any working directory and always matches the routes it was built
/// with). Public, like `/health`: the document holds no secret.
public struct OpenAPIRoutes<Context: RequestContext>: Sendable {
    public init() {}

    public func register(on router: Router<Context>) {
        router.get("/openapi.yaml") { _, _ -> Response in
            Self.document(OpenAPIDocument.yaml, contentType: "application/yaml; charset=utf-8")
        }
        router.get("/openapi.json") { _, _ -> Response in
            Self.document(OpenAPIDocument.json, contentType: "application/json; charset=utf-8")
        }
    }

    static func document(_ text: String, contentType: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
