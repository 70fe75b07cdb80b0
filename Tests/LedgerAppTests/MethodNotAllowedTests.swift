import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirerAPI
import LedgerTestSupport
import Testing

/// A method a path does not have is 405 with `Allow` (RFC 9110 §15.5.6), on both servers — schemathesis's
/// `unsupported_method` check found both answering 404 (Hummingbird's router answers an unknown path and a known
/// path's unknown method alike). Every path of each document is asked every standard method it does not list; `Allow`
/// must be exactly the document's methods. The routes' own 404s (an unknown order) and unknown paths stay 404.
@Suite(.machine(.shared)) struct MethodNotAllowedTests {
    static let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .patch, .options, .trace]

    /// Each path of a document (templates filled by `fill`) with its methods, as `Allow` lists them.
    static func paths(ofJSON json: String, fill: (Substring) -> String) throws -> [(path: String, allowed: [String])] {
        var byPath: [String: [String]] = [:]
        for operation in try OpenAPIContractTests.operations(ofJSON: json) {
            let parts = operation.split(separator: " ", maxSplits: 1)
            byPath[fill(parts[1]), default: []].append(String(parts[0]))
        }
        return byPath.map { ($0.key, $0.value.sorted()) }.sorted { $0.path < $1.path }
    }

    static func check(
        _ client: any TestClientProtocol,
        paths: [(path: String, allowed: [String])],
        headers: HTTPFields,
        errorCode: String
    ) async throws {
        #expect(paths.count >= 12, "\(paths.map(\.path))")
        for (path, documented) in paths {
            // HEAD is answered wherever GET is (RFC 9110 §9.3.2), and listed beside it.
            let allowed = (documented + (documented.contains("GET") ? ["HEAD"] : [])).sorted()
            for method in Self.methods where !allowed.contains(method.rawValue) {
                try await client.execute(uri: path, method: method, headers: headers) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(path): \(response.status)")
                    #expect(response.headers[.allow] == allowed.joined(separator: ", "), "\(method) \(path)")
                    if method != .head {
                        let text = String(buffer: response.body)
                        #expect(text.contains(#""code":"\#(errorCode)""#) && text.contains(#""message""#), "\(method) \(path): \(text)")
                    }
                }
            }
        }
    }

    @Test func theLedgerAnswersAMethodAPathDoesNotHaveWith405AndItsMethods() async throws {
        try await TestApp.withApp { client, services in
            let paths = try Self.paths(ofJSON: OpenAPIDocument.json) { template in
                String(template).replacingOccurrences(of: #"\{[^}]+\}"#, with: "x1", options: .regularExpression)
            }
            let before = try await services.store.head().position
            try await Self.check(
                client,
                paths: paths,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)"],
                errorCode: "method_not_allowed"
            )
            #expect(try await services.store.head().position == before)
            // A route's own 404 (no such order) and a path the daemon does not serve stay 404.
            for path in ["/orders/no-such-order", "/no/such/path"] {
                try await client.execute(uri: path, method: .get, headers: [.authorization: "Bearer \(TestApp.operatorKey)"]) { response in
                    #expect(response.status == .notFound, "\(path)")
                    #expect(response.headers[.allow] == nil, "\(path)")
                }
            }
            try await client.execute(uri: "/no/such/path", method: .delete) { response in #expect(response.status == .notFound) }
        }
    }

    @Test func theAcquirerServiceAnswersAMethodAPathDoesNotHaveWith405AndItsMethods() async throws {
        try await OpenAPIEdgeTests.withAcquirerService { client, journaled in
            let paths = try Self.paths(ofJSON: AcquirerOpenAPIDocument.json, fill: OpenAPIEdgeTests.acquirerPath)
            let before = try await journaled()
            try await Self.check(
                client,
                paths: paths,
                headers: [HTTPField.Name("X-API-Key")!: AcquirerHarness.apiKey, HTTPField.Name("Idempotency-Key")!: "k-405"],
                errorCode: "invalidRequest"
            )
            #expect(try await journaled() == before)
            try await client.execute(uri: "/v1/no/such/path", method: .get, headers: [HTTPField.Name("X-API-Key")!: AcquirerHarness.apiKey]) {
                response in
                #expect(response.status == .notFound)
            }
            // The model's own 404 (an unknown payout) stays 404.
            try await client.execute(uri: "/v1/payouts/1", method: .get, headers: [HTTPField.Name("X-API-Key")!: AcquirerHarness.apiKey]) {
                response in
                #expect(response.status == .notFound)
                #expect(response.headers[.allow] == nil)
            }
        }
    }
}
