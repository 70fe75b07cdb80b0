import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerService
import LedgerApp
import LedgerPostgres
import LedgerTestSupport
import Testing

/// The published contracts (`Sources/LedgerAPI/openapi.yaml`, `Sources/LedgerAcquirerAPI/openapi.yaml`) cannot drift
/// from the routers: every route a router registers (method + path) is an operation of its document, and every
/// operation is a registered route. The documents are the ones compiled into the binaries (``OpenAPIDocument``), which
/// must be the YAML sources as they are in the repository (`deploy/openapi/generate.py` embeds them).
@Suite(.machine(.shared)) struct OpenAPIContractTests {
    /// Where the documents' sources are, from this file.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL

    /// `METHOD /path` for each operation of an OpenAPI document (its JSON form); path templates as written (`{id}`).
    static func operations(ofJSON json: String) throws -> Set<String> {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
        var operations: Set<String> = []
        for (path, item) in paths {
            let item = try #require(item as? [String: Any])
            for method in item.keys where methods.contains(method) { operations.insert("\(method.uppercased()) \(path)") }
        }
        return operations
    }

    /// `METHOD /path` for each route `router` registered, in the document's template form: Hummingbird writes a
    /// capture `{id}` as the document does; its `**` (the rest of the path, slashes included) is the document's
    /// `{path}` (`/log/tile/{path}`).
    static func routes<Context>(of router: Router<Context>) -> Set<String> {
        Set(
            router.routes.map { route in
                let path = route.path.description.replacingOccurrences(of: "/**", with: "/{path}")
                return "\(route.method.rawValue) \(path.isEmpty ? "/" : path)"
            }
        )
    }

    /// Whether `METHOD /path` is the back-office console's (`/console`, `/console/…`): pages for people, not the API.
    static func isConsole(_ route: String) -> Bool {
        let path = route.split(separator: " ").last.map(String.init) ?? ""
        return path == "/console" || path.hasPrefix("/console/")
    }

    /// What differs: routes without an operation, operations without a route (both sorted).
    static func drift(routes: Set<String>, operations: Set<String>) -> (undocumented: [String], unrouted: [String]) {
        (routes.subtracting(operations).sorted(), operations.subtracting(routes).sorted())
    }

    @Test func theDaemonsRoutesAreTheDocumentsOperations() async throws {
        try await TestApp.withApp { _, services in
            let router = buildRouter(services: services, configuration: try Self.configuration())
            // The back-office console (`/console/…`, issue 32) is HTML pages and forms for people, not the API: it is
            // not in the document (whose clients, the CLI and schemathesis, speak JSON), so it is left out here, and only
            // there — everything else the router serves is still compared.
            let all = Self.routes(of: router)
            let console = all.filter(Self.isConsole)
            #expect(console.contains("GET /console/orders/{id}") && console.contains("POST /console/orders/{id}/capture"), "\(console)")
            let routes = all.subtracting(console)
            let operations = try Self.operations(ofJSON: OpenAPIDocument.json)
            #expect(!operations.contains(where: Self.isConsole))
            // The transparency log's routes are registered only with its tree on (the default): the comparison must
            // see them, or it would compare less than the daemon serves.
            #expect(routes.contains("GET /log/tile/{path}"))
            let drift = Self.drift(routes: routes, operations: operations)
            #expect(drift.undocumented.isEmpty, "routes without an operation in Sources/LedgerAPI/openapi.yaml: \(drift.undocumented)")
            #expect(drift.unrouted.isEmpty, "operations in Sources/LedgerAPI/openapi.yaml that no route serves: \(drift.unrouted)")
        }
    }

    /// The comparison itself: a route added to the daemon's router without its operation is drift, and so is an
    /// operation whose route is gone (the document's `GET /health` against a router without it).
    @Test func aRouteAddedWithoutItsOperationIsDrift() async throws {
        try await TestApp.withApp { _, services in
            let router = buildRouter(services: services, configuration: try Self.configuration())
            router.get("/orders/:id/notes") { _, _ in "" }
            router.delete("/orders/:id") { _, _ in "" }
            let operations = try Self.operations(ofJSON: OpenAPIDocument.json)
            let drift = Self.drift(routes: Self.routes(of: router).filter { !Self.isConsole($0) }, operations: operations)
            #expect(drift.undocumented == ["DELETE /orders/{id}", "GET /orders/{id}/notes"])
            #expect(drift.unrouted.isEmpty)
        }
        let bare = Router(context: BasicRequestContext.self)
        bare.get("/openapi.json") { _, _ in "" }
        let drift = Self.drift(routes: Self.routes(of: bare), operations: try Self.operations(ofJSON: OpenAPIDocument.json))
        #expect(drift.undocumented.isEmpty)
        #expect(drift.unrouted.contains("GET /health") && !drift.unrouted.contains("GET /openapi.json"))
    }

    @Test func theAcquirerServicesRoutesAreItsDocumentsOperations() async throws {
        let database = try await TestDatabase.fresh()
        try await AcquirerHarness.withModel(database: database) { client, model in
            let router = AcquirerServer.router(
                model: model,
                client: client,
                apiKey: AcquirerHarness.apiKey,
                faults: .none,
                logger: TestCluster.logger
            )
            let drift = Self.drift(routes: Self.routes(of: router), operations: try Self.operations(ofJSON: AcquirerOpenAPIDocument.json))
            #expect(drift.undocumented.isEmpty, "routes without an operation in Sources/LedgerAcquirerAPI/openapi.yaml: \(drift.undocumented)")
            #expect(drift.unrouted.isEmpty, "operations in Sources/LedgerAcquirerAPI/openapi.yaml that no route serves: \(drift.unrouted)")
        }
    }

    /// The binaries embed the YAML sources as they are (run `deploy/openapi/generate.py` after editing one).
    @Test func theEmbeddedDocumentsAreTheSources() throws {
        let ledger = try String(contentsOf: Self.repository.appendingPathComponent("Sources/LedgerAPI/openapi.yaml"), encoding: .utf8)
        let acquirer = try String(contentsOf: Self.repository.appendingPathComponent("Sources/LedgerAcquirerAPI/openapi.yaml"), encoding: .utf8)
        #expect(OpenAPIDocument.yaml == ledger, "Sources/LedgerAPI/openapi.yaml changed: run deploy/openapi/generate.py")
        #expect(AcquirerOpenAPIDocument.yaml == acquirer, "Sources/LedgerAcquirerAPI/openapi.yaml changed: run deploy/openapi/generate.py")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        #expect(json["openapi"] as? String == "3.1.0")
        #expect(ledger.hasPrefix("openapi: 3.1.0\n"))
    }

    /// `GET /openapi.yaml` and `GET /openapi.json` answer the documents, without a key, with their media types.
    @Test func theDaemonServesItsDocumentWithoutAKey() async throws {
        try await TestApp.withApp { client, _ in
            try await client.execute(uri: "/openapi.yaml", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/yaml; charset=utf-8")
                #expect(String(buffer: response.body) == OpenAPIDocument.yaml)
            }
            try await client.execute(uri: "/openapi.json", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                let document = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect((document?["info"] as? [String: Any])?["title"] as? String == "OrderLedger (ledgerd)")
                #expect(try Self.operations(ofJSON: String(buffer: response.body)).contains("POST /payment"))
            }
            try await client.execute(uri: "/openapi.json", method: .get, headers: [.authorization: "Bearer nonsense"]) { response in
                #expect(response.status == .ok)
            }
        }
    }

    static func configuration() throws -> LedgerConfiguration {
        try LedgerConfiguration.load(environment: [
            "LEDGERD_OPERATOR_KEYS": TestApp.operatorKey, "LEDGERD_AUDITOR_KEYS": TestApp.auditorKey,
            "LEDGERD_WEBHOOK_SECRETS_KEY": TestApp.webhookSecretsKey,
        ])
    }
}
