import HTTPTypes
import Hummingbird

/// A router that answers a method its path does not have with 405 and `Allow` (RFC 9110 §15.5.6), where Hummingbird's
/// router answers 404 for an unknown path and a known path's unknown method alike. Both servers of the project (the
/// ledger and the acquirer service) are built on it; each gives the refusal its own error shape.
///
/// The router is asked first, unchanged: only when it answers 404 is the request's path looked up (a trie of the
/// router's paths, built once from `Router.routes`, each answering the methods it has). So the routes' own 404s (an
/// unknown order) stay 404 — their path has the method asked — and a request that is served costs nothing more.
///
/// HEAD is answered on every GET route as that GET, with its status and headers and without its body (RFC 9110
/// §9.3.2; review 4: it was 405, and uptime checkers and `curl -I` failed), and `Allow` lists HEAD wherever it lists
/// GET. The request goes through the routes as a GET (its middleware, authentication and limits alike); a streamed
/// body is never run (what it held is given back when it is dropped).
public struct MethodCheckedRouter<Context: RequestContext>: HTTPResponderBuilder {
    /// Builds the 405 answer in the server's error shape from its message (the method asked and the path's methods),
    /// the request and its context. The status and the `Allow` header are set on what it returns.
    public typealias Refusal = @Sendable (_ message: String, _ request: Request, _ context: Context) throws -> Response

    let router: Router<Context>
    let refusal: Refusal

    public init(_ router: Router<Context>, refusal: @escaping Refusal) {
        self.router = router
        self.refusal = refusal
    }

    public func buildResponder() -> MethodCheckedResponder<Context> {
        var methods: [String: (path: RouterPath, methods: Set<String>)] = [:]
        for route in router.routes {
            methods[route.path.description, default: (route.path, [])].methods.insert(route.method.rawValue)
            if route.method == .get { methods[route.path.description]?.methods.insert(HTTPRequest.Method.head.rawValue) }
        }
        let paths = Router(context: Context.self)
        for (path, allowed) in methods.values {
            let allow = allowed.sorted().joined(separator: ", ")
            paths.get(path) { _, _ in Response(status: .methodNotAllowed, headers: [.allow: allow]) }
        }
        return MethodCheckedResponder(routes: router.buildResponder(), paths: paths.buildResponder(), refusal: refusal)
    }
}

/// ``MethodCheckedRouter``'s responder.
public struct MethodCheckedResponder<Context: RequestContext>: HTTPResponder {
    let routes: RouterResponder<Context>
    /// Every path of `routes`, answering GET with 405 and the path's methods in `Allow`.
    let paths: RouterResponder<Context>
    let refusal: MethodCheckedRouter<Context>.Refusal

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard request.method == .head else { return try await answer(request, asked: request.method, context: context) }
        var head = request.head
        head.method = .get
        let get = Request(head: head, body: request.body)
        let response: Response
        do {
            response = try await answer(get, asked: .head, context: context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: get, context: context)
        }
        // The GET's headers without its body: its Content-Length when it has one (an empty body would claim 0).
        var headers = response.headers
        if response.body.contentLength == nil { headers[.contentLength] = nil }
        var bodiless = Response(status: response.status, headers: headers, body: ResponseBody())
        bodiless.headers = headers
        return bodiless
    }

    /// The router's answer to `request`, `asked` being the method the client asked (a HEAD is routed as its GET).
    func answer(_ request: Request, asked: HTTPRequest.Method, context: Context) async throws -> Response {
        let response = try await routes.respond(to: request, context: context)
        guard response.status == .notFound else { return response }
        // The path alone decides (the paths router's every route is a GET): is it served, with other methods?
        let probe = Request(
            head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: request.head.path),
            body: RequestBody(buffer: ByteBuffer())
        )
        let known = try await paths.respond(to: probe, context: context)
        guard known.status == .methodNotAllowed, let allow = known.headers[.allow],
            !allow.split(separator: ",").contains(where: { $0.drop(while: { $0 == " " }) == request.method.rawValue })
        else { return response }
        var refused = try refusal("\(asked) is not one of this path's methods (\(allow))", request, context)
        refused.status = .methodNotAllowed
        refused.headers[.allow] = allow
        return refused
    }
}
