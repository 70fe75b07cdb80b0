import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerHTTP
import LedgerServices
import Logging
import Testing

/// The one mapping of the services' errors to HTTP (`HTTPReplies.swift`: `APIError(_:)` and `ErrorMiddleware`): the kind
/// picks the status, the answer is always `{"error": {"code", "message", "field"?}}`, and our own failures
/// never tell the caller their detail.
@Suite struct ErrorMappingTests {
    static let kinds: [(ServiceError.Kind, Int)] = [
        (.malformedRequest, 400), (.invalidInput, 422), (.notFound, 404), (.conflict, 409), (.gone, 410),
        (.dependencyFailed, 502), (.unavailable, 503), (.internalFailure, 500),
    ]

    /// A failure whose text must never reach a caller.
    struct SecretFailure: Error, CustomStringConvertible {
        var description: String { "connection to db.internal:5432 failed for role ledger_app (password hunter2)" }
    }

    /// An application whose routes throw what the test names, behind the real error middleware.
    func withRouter(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let router = Router()
        router.add(middleware: ErrorMiddleware())
        router.get("/kind/:index") { _, context -> String in
            let kind = Self.kinds[try context.parameters.require("index", as: Int.self)].0
            throw ServiceError(kind, code: "some_code", message: "what went wrong", field: "some_field")
        }
        router.get("/without-field") { _, _ -> String in throw ServiceError.conflict("hold_closed", "the hold is closed") }
        router.get("/internal") { _, _ -> String in
            throw ServiceError(.internalFailure, code: "settlement_refused", message: SecretFailure().description, field: "items")
        }
        router.get("/unexpected") { _, _ -> String in throw SecretFailure() }
        // The middleware logs what it hides; these tests read the answers only.
        let quiet = Logger(label: "ledger.tests.http") { _ in SwiftLogNoOpLogHandler() }
        try await Application(router: router, logger: quiet).test(.router, body)
    }

    /// The body's JSON object, or nil.
    func object(_ response: TestResponse) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView))) as? [String: Any]
    }

    @Test(arguments: ErrorMappingTests.kinds)
    func eachKindHasItsStatus(kind: ServiceError.Kind, status: Int) {
        #expect(APIError(ServiceError(kind, code: "some_code", message: "m")).status.code == status, "\(kind)")
    }

    @Test(arguments: ErrorMappingTests.kinds.filter { $0.0 != .internalFailure })
    func codeMessageAndFieldPassThrough(kind: ServiceError.Kind, status: Int) {
        let error = APIError(ServiceError(kind, code: "out_of_stock", message: "only 2 left", field: "quantity"))
        #expect(error == APIError(status: HTTPResponse.Status(code: status), code: "out_of_stock", message: "only 2 left", field: "quantity"))
    }

    @Test func everyKindAnswersWithTheErrorShape() async throws {
        try await withRouter { client in
            for (index, (kind, status)) in Self.kinds.enumerated() where kind != .internalFailure {
                try await client.execute(uri: "/kind/\(index)", method: .get) { response in
                    #expect(response.status.code == status, "\(kind)")
                    #expect(response.headers[.contentType] == "application/json; charset=utf-8", "\(kind)")
                    let body = object(response)
                    #expect(body?.keys.sorted() == ["error"], "\(kind)")
                    let error = body?["error"] as? [String: String]
                    #expect(error == ["code": "some_code", "message": "what went wrong", "field": "some_field"], "\(kind)")
                }
            }
            try await client.execute(uri: "/without-field", method: .get) { response in
                #expect(response.status == .conflict)
                #expect(object(response)?["error"] as? [String: String] == ["code": "hold_closed", "message": "the hold is closed"])
            }
        }
    }

    @Test func anInternalFailureNeverTellsItsDetail() async throws {
        let generic = APIError.internalFailure
        #expect(APIError(ServiceError(.internalFailure, code: "settlement_refused", message: SecretFailure().description)) == generic)
        try await withRouter { client in
            for uri in ["/internal", "/unexpected"] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == .internalServerError, "\(uri)")
                    let text = String(buffer: response.body)
                    #expect(
                        object(response)?["error"] as? [String: String] == ["code": "internal_error", "message": generic.message],
                        "\(uri): \(text)"
                    )
                    for secret in ["hunter2", "db.internal", "ledger_app", "settlement_refused", "items"] {
                        #expect(!text.contains(secret), "\(uri) leaks \(secret): \(text)")
                    }
                }
            }
        }
    }
}
