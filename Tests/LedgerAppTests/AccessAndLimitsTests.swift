import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerServices
import LedgerTestSupport
import Testing

/// Every operation of the published contract (`Sources/LedgerAPI/openapi.yaml`) as its `security` and `413` say, through
/// the real router: no key and a wrong key are 401, an auditor's key on an operator-only operation is 403, a JSON body
/// over its limit (16 KiB; 64 KiB for `POST /payment`) is 413 — each with the error shape and nothing appended, no
/// subscription or webhook created. And the `Idempotency-Key` length rule (1…200 bytes) on the payment and the hold
/// operations. Driven by the document, so an operation added later is covered by the same checks.
@Suite(.machine(.shared)) struct AccessAndLimitsTests {
    struct Operation: CustomStringConvertible {
        let method: HTTPRequest.Method
        let path: String
        /// Which keys the document lets in (empty: public).
        let keys: Set<String>
        let refusesOversize: Bool
        let takesJSON: Bool
        var description: String { "\(method) \(path)" }
        /// The path with every template parameter filled: `webhook` for a webhook's id (one exists, so that its body is
        /// read), `x` elsewhere.
        func uri(webhook: String) -> String {
            path.replacingOccurrences(of: "/webhooks/{id}", with: "/webhooks/\(webhook)")
                .replacingOccurrences(of: #"\{[a-z_]+\}"#, with: "x", options: .regularExpression)
        }
    }

    static func operations() throws -> [Operation] {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operations: [Operation] = []
        for (path, item) in paths {
            for (name, value) in item {
                guard let method = HTTPRequest.Method(name.uppercased()), ["GET", "POST", "PUT", "DELETE"].contains(name.uppercased()),
                    let operation = value as? [String: Any]
                else { continue }
                let security = (operation["security"] as? [[String: Any]]) ?? (document["security"] as? [[String: Any]]) ?? []
                let responses = operation["responses"] as? [String: Any] ?? [:]
                let content = ((operation["requestBody"] as? [String: Any])?["content"] as? [String: Any]) ?? [:]
                operations.append(
                    Operation(
                        method: method,
                        path: path,
                        // An empty requirement (`{}`) lets anyone in: `GET /inventory` live, a key only for `as_of`.
                        keys: security.contains(where: \.isEmpty) ? [] : Set(security.flatMap(\.keys)),
                        refusesOversize: responses["413"] != nil,
                        takesJSON: content["application/json"] != nil
                    )
                )
            }
        }
        return operations.sorted { $0.description < $1.description }
    }

    static func errorCode(_ body: String) -> String? {
        let reply = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: [String: Any]]
        guard let error = reply?["error"], error["message"] is String else { return nil }
        return error["code"] as? String
    }

    @Test func keysAndBodyLimitsAreRefusedAsTheContractSaysAndAppendNothing() async throws {
        let operations = try Self.operations()
        #expect(operations.filter { $0.keys == ["operatorKey"] }.count >= 19, "\(operations)")
        try await TestApp.withApp(seed: true) { client, services in
            // One webhook, so that the routes of a webhook read their bodies (an unknown id is 404 before that).
            let created = try await client.execute(
                uri: "/webhooks",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"url": "http://127.0.0.1:9/hook", "secret": "whsec_test_0123456789abcdef", "types": ["OrderOpened"]}"#)
            ) { (Int($0.status.code), String(buffer: $0.body)) }
            #expect(created.0 == 201, "\(created.1)")
            let webhook = try WireJSON.decode(WebhookReply.self, from: created.1).id
            func send(_ operation: Operation, key: String?, body: ByteBuffer? = nil) async throws -> (Int, String) {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let key { headers[.authorization] = "Bearer \(key)" }
                return try await client.execute(uri: operation.uri(webhook: webhook), method: operation.method, headers: headers, body: body) {
                    (Int($0.status.code), String(buffer: $0.body))
                }
            }
            let head = try await services.store.head().position
            var checked = 0
            for operation in operations where !operation.keys.isEmpty {
                let body: ByteBuffer? = operation.method == .post ? ByteBuffer(string: "{}") : nil
                for key in [nil, "not-a-key"] {
                    let (status, text) = try await send(operation, key: key, body: body)
                    #expect(status == 401 && Self.errorCode(text) == "unauthenticated", "\(operation) with key \(key ?? "none"): \(status) \(text)")
                }
                if !operation.keys.contains("auditorKey") {
                    let (status, text) = try await send(operation, key: TestApp.auditorKey, body: body)
                    #expect(status == 403 && Self.errorCode(text) == "forbidden", "\(operation) as an auditor: \(status) \(text)")
                }
                checked += 1
            }
            for operation in operations where operation.refusesOversize && operation.takesJSON {
                let limit = operation.path == "/payment" ? PaymentRequest.maximumBodySize : 16 * 1024
                // Valid JSON one byte over the limit: refused for its size, whatever it says.
                let padding = String(repeating: "a", count: limit - #"{"pad": ""}"#.utf8.count + 1)
                let (status, text) = try await send(
                    operation,
                    key: operation.keys.isEmpty ? nil : TestApp.operatorKey,
                    body: ByteBuffer(string: #"{"pad": "\#(padding)"}"#)
                )
                #expect(status == 413 && Self.errorCode(text) == "payload_too_large", "\(operation) over \(limit) bytes: \(status) \(text)")
                checked += 1
            }
            #expect(checked >= 40)
            #expect(try await services.store.head().position == head)
            // Subscriptions and webhooks live in tables, not the log: no refused request created or changed one.
            for (list, count) in [("/subscriptions", 0), ("/webhooks", 1)] {
                let (status, text) = try await client.execute(
                    uri: list,
                    method: .get,
                    headers: [.authorization: "Bearer \(TestApp.operatorKey)"]
                ) { (Int($0.status.code), String(buffer: $0.body)) }
                let reply = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                #expect(status == 200 && (reply?.values.first as? [Any])?.count == count, "\(list): \(text)")
            }
            let read = Operation(method: .get, path: "/webhooks/{id}", keys: [], refusesOversize: false, takesJSON: false)
            let (_, after) = try await send(read, key: TestApp.operatorKey)
            #expect(try WireJSON.decode(WebhookReply.self, from: after) == WireJSON.decode(WebhookReply.self, from: created.1), "\(after)")
        }
    }

    /// `Idempotency-Key`: 1…200 bytes on the payment and on the hold operations — 201 bytes (or an empty header) is 400
    /// `invalid_idempotency_key` appending nothing, 200 bytes is taken.
    @Test func anIdempotencyKeyIsOneToTwoHundredBytes() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let storefront = StorefrontDriver()
            let head = try await services.store.head().position
            for key in [String(repeating: "k", count: 201), ""] {
                let (status, text) = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: key)
                #expect(status == .badRequest && Self.errorCode(text) == "invalid_idempotency_key", "\(key.count): \(text)")
            }
            #expect(try await services.store.head().position == head)
            let (paid, paidText) = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: String(repeating: "k", count: 200))
            #expect(paid == .ok, "\(paidText)")
            let order = try WireJSON.decode(PaymentReply.self, from: paidText).orderId
            let afterPayment = try await services.store.head().position
            let bodies = [
                "capture": #"{"amount": "1.00"}"#, "increment": #"{"amount": "1.00"}"#, "void": "{}",
                "refund": #"{"amount": "1.00", "reason": "r"}"#, "ship": "{}",
            ]
            for (kind, body) in bodies.sorted(by: { $0.key < $1.key }) {
                let (status, text) = try await client.execute(
                    uri: "/orders/\(order)/\(kind)",
                    method: .post,
                    headers: [
                        .authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/json",
                        HTTPField.Name("Idempotency-Key")!: String(repeating: "k", count: 201),
                    ],
                    body: ByteBuffer(string: body)
                ) { (Int($0.status.code), String(buffer: $0.body)) }
                #expect(status == 400 && Self.errorCode(text) == "invalid_idempotency_key", "\(kind): \(status) \(text)")
            }
            #expect(try await services.store.head().position == afterPayment)
            let (captured, capturedText) = try await BackOfficeDriver().operate(
                client,
                order,
                "capture",
                #"{"amount": "1.00"}"#,
                key: .given(String(repeating: "c", count: 200))
            )
            #expect(captured == .ok, "\(capturedText)")
        }
    }

    /// L7: an `Idempotency-Key` is one header of printable ASCII (0x21…0x7E), judged on its bytes — `lossy\xff`,
    /// `lossy\xfe` and `lossy\u{FFFD}` (one text once lossily decoded), a tab, a space, an RTL override, the
    /// header twice — each a 400 `invalid_idempotency_key` on the payment and on a capture, appending nothing; every
    /// printable ASCII character is taken.
    @Test func anIdempotencyKeyIsPrintableASCIIOnItsBytes() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let storefront = StorefrontDriver()
            let order = try await storefront.placeOrder(client)
            let head = try await services.store.head().position
            let name = HTTPField.Name("Idempotency-Key")!
            let refused: [[HTTPField]] = [
                [HTTPField(name: name, value: Array("lossy".utf8) + [0xFF])],
                [HTTPField(name: name, value: Array("lossy".utf8) + [0xFE])],
                [HTTPField(name: name, value: "lossy\u{FFFD}")],
                [HTTPField(name: name, value: "tab\there")],
                [HTTPField(name: name, value: "inner space")],
                [HTTPField(name: name, value: "rtl\u{202E}override")],
                [HTTPField(name: name, value: "one"), HTTPField(name: name, value: "two")],
            ]
            let payment = String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self)
            for fields in refused {
                for (uri, body, key) in [("/payment", payment, nil), ("/orders/\(order)/capture", #"{"amount": "1.00"}"#, TestApp.operatorKey)] {
                    var headers = HTTPFields(fields)
                    headers[.contentType] = "application/json"
                    if let key { headers[.authorization] = "Bearer \(key)" }
                    let (status, text) = try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
                        (Int($0.status.code), String(buffer: $0.body))
                    }
                    #expect(status == 400 && Self.errorCode(text) == "invalid_idempotency_key", "\(uri) \(fields): \(status) \(text)")
                }
            }
            #expect(try await services.store.head().position == head)
            let printable = String(decoding: Array(UInt8(0x21)...UInt8(0x7E)), as: UTF8.self)
            let (paid, paidText) = try await storefront.pay(client, StorefrontDriver.paymentBody(), key: printable)
            #expect(paid == .ok, "\(paidText)")
        }
    }
}
