import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirerAPI
import LedgerCore
import LedgerTestSupport
import Synchronization
import Testing

/// The acquirer service's document says what the service does (`Sources/LedgerAcquirerAPI/openapi.yaml`), the
/// regressions of what schemathesis found when it first ran against the service (issue 31):
/// - answers whose JSON the document described otherwise (the dispute feed and a report are arrays, not objects);
/// - requests the document allowed that the service refuses as malformed (an empty reference, a currency the ledger
///   does not know, a number past 64 bits): the document now has those rules, and the service still refuses them;
/// - query parameters the service read as their default or clamped instead of refusing (`count=0`, `limit=abc`);
/// - a batch page whose items had empty references, stored and refused only when the batch was settled;
/// - a submission whose pages were never uploaded, refused as a malformed request (400) where it is an unknown batch.
@Suite(.machine(.shared)) struct AcquirerDocumentTests {
    typealias Call = @Sendable (HTTPRequest.Method, String, String?) async throws -> (status: Int, text: String)

    /// The document, parsed (each time: `[String: Any]` is not `Sendable`, so it cannot be a shared constant).
    static var document: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(AcquirerOpenAPIDocument.json.utf8))) as? [String: Any] ?? [:]
    }

    /// `schema` with its `$ref` followed (to `#/components/schemas/…`).
    static func resolved(_ schema: Any?) -> [String: Any] {
        guard let schema = schema as? [String: Any] else { return [:] }
        guard let reference = schema["$ref"] as? String else { return schema }
        let name = String(reference.split(separator: "/").last ?? "")
        let components = document["components"] as? [String: Any]
        return resolved((components?["schemas"] as? [String: Any])?[name])
    }

    /// The JSON `value` against `schema`'s `type`, `required`, `properties` and `items` (what ST108 checked), as a list
    /// of what differs.
    static func violations(of value: Any, _ schema: Any?, at path: String = "$") -> [String] {
        let schema = resolved(schema)
        var found: [String] = []
        if let type = schema["type"] as? String {
            let matches: Bool
            switch type {
            case "object": matches = value is [String: Any]
            case "array": matches = value is [Any]
            case "string": matches = value is String
            case "integer": matches = (value as? NSNumber).map { !($0 is Bool) && $0.stringValue.allSatisfy { $0.isNumber || $0 == "-" } } ?? false
            case "boolean": matches = value is Bool
            default: matches = true
            }
            if !matches { return ["\(path) is not \(type): \(value)"] }
        }
        if let object = value as? [String: Any] {
            for key in schema["required"] as? [String] ?? [] where object[key] == nil { found.append("\(path).\(key) is missing") }
            for (key, property) in schema["properties"] as? [String: Any] ?? [:] {
                if let member = object[key] { found += violations(of: member, property, at: "\(path).\(key)") }
            }
        }
        if let array = value as? [Any], let items = schema["items"] {
            for (index, item) in array.enumerated() { found += violations(of: item, items, at: "\(path)[\(index)]") }
        }
        return found
    }

    /// The document's operation `method path` (`method` in lower case).
    static func operation(_ method: String, _ path: String) -> [String: Any]? {
        ((document["paths"] as? [String: Any])?[path] as? [String: Any])?[method] as? [String: Any]
    }

    /// The document's schema of `status`'s answer to `method path`.
    static func answerSchema(_ method: String, _ path: String, _ status: Int) -> Any? {
        var response = (operation(method, path)?["responses"] as? [String: Any])?[String(status)] as? [String: Any]
        if let reference = response?["$ref"] as? String {
            let name = String(reference.split(separator: "/").last ?? "")
            response = ((document["components"] as? [String: Any])?["responses"] as? [String: Any])?[name] as? [String: Any]
        }
        return ((response?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"]
    }

    /// The document's JSON schema of the body of `method path`.
    static func requestSchema(_ method: String, _ path: String) -> Any? {
        let content = (operation(method, path)?["requestBody"] as? [String: Any])?["content"] as? [String: Any]
        return (content?["application/json"] as? [String: Any])?["schema"]
    }

    /// Runs `body` against a live acquirer service with a caller that sends the key and a fresh `Idempotency-Key`.
    static func withService(_ body: @escaping @Sendable (Call, @Sendable () async throws -> Int64) async throws -> Void) async throws {
        try await OpenAPIEdgeTests.withAcquirerService { client, journaled in
            let counter = Counter()
            let call: Call = { method, uri, text in
                var headers: HTTPFields = [
                    HTTPField.Name("X-API-Key")!: AcquirerHarness.apiKey, .contentType: "application/json",
                    HTTPField.Name("Idempotency-Key")!: "key-\(counter.next())",
                ]
                if text == nil { headers[.contentType] = nil }
                return try await client.execute(uri: uri, method: method, headers: headers, body: text.map { ByteBuffer(string: $0) }) {
                    (Int($0.status.code), String(buffer: $0.body))
                }
            }
            try await body(call, journaled)
        }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func next() -> Int {
            value.withLock {
                $0 += 1
                return $0
            }
        }
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) }

    @Test func theAnswersAreWhatTheDocumentDescribes() async throws {
        try await Self.withService { call, _ in
            func expectDocumented(_ method: String, _ path: String, _ answer: (status: Int, text: String), _ status: Int) throws {
                #expect(answer.status == status, "\(method) \(path): \(answer.text)")
                let schema = try #require(Self.answerSchema(method, path, status), "\(method) \(path) \(status) has no JSON schema")
                let problems = Self.violations(of: try Self.json(answer.text), schema)
                #expect(problems.isEmpty, "\(method.uppercased()) \(path) \(status): \(problems) in \(answer.text)")
            }
            let money = #"{"minorUnits": 5900, "currency": "USD"}"#
            let authorised = try await call(
                .post,
                "/v1/payments",
                #"{"merchantReference": "order-1", "amount": \#(money), "paymentMethod": {"type": "scheme", "token": "tok_visa"}, "#
                    + #""captureIntent": "manual", "initiator": "customer", "authorizationType": "preAuthorization"}"#
            )
            try expectDocumented("post", "/v1/payments", authorised, 200)
            let psp = try #require((try Self.json(authorised.text) as? [String: Any])?["pspReference"] as? String)
            let captured = try await call(
                .post,
                "/v1/payments/\(psp)/captures",
                #"{"authorizationReference": "order-1", "modificationReference": "order-1-c", "amount": \#(money), "isFinal": true}"#
            )
            try expectDocumented("post", "/v1/payments/{psp}/captures", captured, 200)
            try expectDocumented("get", "/v1/payments", try await call(.get, "/v1/payments?merchantReference=order-1", nil), 200)
            let item = #"[{"kind": "capture", "authorizationReference": "order-1", "modificationReference": "order-1-c", "amount": \#(money)}]"#
            #expect(try await call(.put, "/v1/settlement/batches/B-1/pages/0", item).status == 204)
            let submitted = try await call(.post, "/v1/settlement/batches", #"{"header": {"batchReference": "B-1", "currency": "USD"}, "pages": 1}"#)
            try expectDocumented("post", "/v1/settlement/batches", submitted, 200)
            let number = try #require((try Self.json(submitted.text) as? [String: Any])?["batchNumber"] as? Int)
            try expectDocumented("get", "/v1/payouts/{number}", try await call(.get, "/v1/payouts/\(number)", nil), 200)
            let report = try await call(.get, "/v1/settlement/reports/\(number)?from=0&count=10000", nil)
            try expectDocumented("get", "/v1/settlement/reports/{number}", report, 200)
            #expect((try Self.json(report.text) as? [Any])?.isEmpty == false, "\(report.text)")
            try expectDocumented("get", "/v1/disputes/notifications", try await call(.get, "/v1/disputes/notifications", nil), 200)
            // A refusal has the documented shape too.
            try expectDocumented("get", "/v1/payouts/{number}", try await call(.get, "/v1/payouts/\(number + 1)", nil), 404)
        }
    }

    /// The document's currencies are the ones the ledger knows (`Currency.known`), every reference in a request body
    /// is at least one character, and integers are bounded to 64 bits — and the service refuses each as malformed.
    @Test func theDocumentHasTheRulesTheServiceRefusesBy() async throws {
        let currency = Self.resolved(["$ref": "#/components/schemas/CurrencyCode"])
        #expect(currency["enum"] as? [String] == Currency.known.map(\.code))
        #expect(Self.resolved(["$ref": "#/components/schemas/Reference"])["minLength"] as? Int == 1)
        let money = Self.resolved(["$ref": "#/components/schemas/Money"])["properties"] as? [String: Any]
        #expect((money?["minorUnits"] as? [String: Any])?["maximum"] as? Int64 == Int64.max)
        // Every property of a request body named …Reference is a Reference (or says minLength 1 itself).
        var references: [String] = []
        func walk(_ schema: Any?, _ path: String) {
            let schema = Self.resolved(schema)
            for (key, property) in schema["properties"] as? [String: Any] ?? [:] {
                if key.hasSuffix("Reference") {
                    references.append("\(path).\(key)")
                    #expect(Self.resolved(property)["minLength"] as? Int == 1, "\(path).\(key) may be empty in the document")
                }
                walk(property, "\(path).\(key)")
            }
            if let items = schema["items"] { walk(items, "\(path)[]") }
        }
        for (path, item) in Self.document["paths"] as? [String: Any] ?? [:] {
            for method in (item as? [String: Any] ?? [:]).keys {
                walk(Self.requestSchema(method, path), "\(method.uppercased()) \(path)")
            }
        }
        #expect(references.count >= 12, "\(references)")

        try await Self.withService { call, journaled in
            let before = try await journaled()
            let usd = #"{"minorUnits": 100, "currency": "USD"}"#
            for (uri, body) in [
                ("/v1/cancels", #"{"authorizationReference": "", "modificationReference": "m"}"#),
                ("/v1/cancels", #"{"authorizationReference": "a", "modificationReference": ""}"#),
                (
                    "/v1/payments/p/refunds",
                    #"{"authorizationReference": "a", "modificationReference": "m", "amount": {"minorUnits": 1, "currency": "AAA"}}"#
                ),
                (
                    "/v1/payments/p/captures",
                    #"{"authorizationReference": "a", "modificationReference": "m", "amount": {"minorUnits": 9223372036854775808, "currency": "USD"}, "isFinal": true}"#
                ),
                ("/v1/payments/p/amountUpdates", #"{"authorizationReference": "a", "modificationReference": "", "amount": \#(usd)}"#),
                ("/v1/settlement/batches", #"{"header": {"batchReference": "", "currency": "USD"}, "pages": 0}"#),
                ("/v1/settlement/batches", #"{"header": {"batchReference": "B", "currency": "XTS"}, "pages": 0}"#),
                // A NUL character, which PostgreSQL's text cannot hold: the pages' lookup failed (503).
                ("/v1/settlement/batches", #"{"header": {"batchReference": "B\u0000", "currency": "USD"}, "pages": 1}"#),
                ("/v1/cancels", #"{"authorizationReference": "a\u0000", "modificationReference": "m"}"#),
            ] {
                let answer = try await call(.post, uri, body)
                #expect(answer.status == 400, "\(uri) \(body): \(answer.text)")
            }
            #expect(try await call(.get, "/v1/payouts/9223372036854775808", nil).status == 400)
            // An inquiry by a reference with a NUL character (it is journaled: 503), or none.
            for query in ["merchantReference=t%00", "merchantReference="] {
                let answer = try await call(.get, "/v1/payments?\(query)", nil)
                #expect(answer.status == 400 && answer.text.contains("invalidRequest"), "\(query): \(answer.text)")
            }
            // A business date that is not one (the document allowed any string once null was allowed beside it).
            let header = Self.resolved(
                (((Self.resolved(Self.requestSchema("post", "/v1/settlement/batches"))["properties"] as? [String: Any])?["header"]))
            )
            let date = ((header["properties"] as? [String: Any])?["businessDate"] as? [String: Any])?["anyOf"] as? [[String: Any]]
            #expect(date?.contains { $0["format"] as? String == "date" && $0["pattern"] != nil } == true, "\(String(describing: date))")
            let empty = try await call(
                .post,
                "/v1/settlement/batches",
                #"{"header": {"batchReference": "B-d", "currency": "USD", "businessDate": ""}, "pages": 0}"#
            )
            #expect(empty.status == 400, "\(empty.text)")
            // Found by the fuzzer as server errors: a page number past the journal's `integer` column (500) and a page
            // count past it (503, "the batch pages could not be read"); and a payment method of no known type, which
            // was read as a gateway token and approved (journaled).
            let item = #"[{"kind": "capture", "authorizationReference": "a", "modificationReference": "m", "amount": \#(usd)}]"#
            for page in ["2147483648", "9223372036854775806"] {
                let answer = try await call(.put, "/v1/settlement/batches/B/pages/\(page)", item)
                #expect(answer.status == 400 && answer.text.contains("invalidRequest"), "page \(page): \(answer.text)")
            }
            #expect(try await call(.put, "/v1/settlement/batches/B/pages/2147483647", item).status == 204)
            let pages = try await call(
                .post,
                "/v1/settlement/batches",
                #"{"header": {"batchReference": "B", "currency": "USD"}, "pages": 4398046511105}"#
            )
            #expect(pages.status == 400 && pages.text.contains("invalidRequest"), "\(pages.text)")
            let method = try await call(
                .post,
                "/v1/payments",
                #"{"merchantReference": "order-x", "amount": \#(usd), "paymentMethod": {"type": "x", "token": "tok_visa"}, "#
                    + #""captureIntent": "manual", "initiator": "customer", "authorizationType": "final"}"#
            )
            #expect(method.status == 400 && method.text.contains("invalidRequest"), "\(method.text)")
            #expect(try await journaled() == before)
        }
    }

    /// The service reads an optional member given as null as absent (Swift's `Optional` decoding), so the document
    /// allows null there: it said `string` and the fuzzer's invalid phase had `"expiryDate": null` taken.
    @Test func optionalMembersMayBeNullAsTheServiceReadsThem() async throws {
        let body = Self.resolved(["$ref": "#/components/schemas/AuthorisationBody"])
        let method = Self.resolved((body["properties"] as? [String: Any])?["paymentMethod"])
        let members = method["properties"] as? [String: Any] ?? [:]
        for name in ["token", "network", "number", "expiryDate", "cryptogram", "eci"] {
            #expect(((members[name] as? [String: Any])?["type"] as? [String])?.contains("null") == true, "paymentMethod.\(name)")
        }
        let reversal = Self.resolved(["$ref": "#/components/schemas/Reversal"])
        let amount = (reversal["properties"] as? [String: Any])?["amount"] as? [String: Any]
        #expect((amount?["anyOf"] as? [[String: Any]])?.contains { $0["type"] as? String == "null" } == true)
        try await Self.withService { call, _ in
            let nulls = #""token": "tok_visa", "network": null, "number": null, "expiryDate": null, "cryptogram": null, "eci": null"#
            let authorised = try await call(
                .post,
                "/v1/payments",
                #"{"merchantReference": "order-n", "amount": {"minorUnits": 100, "currency": "USD"}, "#
                    + #""paymentMethod": {"type": "scheme", \#(nulls)}, "captureIntent": "manual", "initiator": "customer", "#
                    + #""authorizationType": "final"}"#
            )
            #expect(authorised.status == 200 && authorised.text.contains(#""responseCode":"00""#), "\(authorised.text)")
            let released = try await call(
                .post,
                "/v1/cancels",
                #"{"authorizationReference": "order-n", "modificationReference": "order-n-v", "amount": null}"#
            )
            #expect(released.status == 200, "\(released.text)")
            let batch = try await call(
                .post,
                "/v1/settlement/batches",
                #"{"header": {"batchReference": "B-n", "currency": "USD", "businessDate": null}, "pages": 0}"#
            )
            #expect(batch.status == 200, "\(batch.text)")
        }
    }

    @Test func integerQueryParametersOutsideTheirRangeAreRefusedNotReadAsTheDefault() async throws {
        try await Self.withService { call, _ in
            for query in ["from=-1", "from=x", "count=0", "count=10001", "count=", "count=1.5"] {
                let answer = try await call(.get, "/v1/settlement/reports/1?\(query)", nil)
                #expect(answer.status == 400 && answer.text.contains("invalidRequest"), "\(query): \(answer.text)")
            }
            for query in ["after=-1", "after=x", "limit=0", "limit=1001", "limit=abc", "limit="] {
                let answer = try await call(.get, "/v1/disputes/notifications?\(query)", nil)
                #expect(answer.status == 400 && answer.text.contains("invalidRequest"), "\(query): \(answer.text)")
            }
            // In range they are answered (an unknown batch's report is 404; the feed is a page).
            #expect(try await call(.get, "/v1/settlement/reports/1?from=0&count=10000", nil).status == 404)
            #expect(try await call(.get, "/v1/disputes/notifications?after=0&limit=1000", nil).status == 200)
        }
    }

    @Test func aPageWithAnEmptyReferenceIsRefusedAtUploadAndAnUnuploadedBatchIsUnknown() async throws {
        try await Self.withService { call, journaled in
            let before = try await journaled()
            for item in [
                #"{"kind": "capture", "authorizationReference": "", "modificationReference": "m", "amount": {"minorUnits": 1, "currency": "USD"}}"#,
                #"{"kind": "refund", "authorizationReference": "a", "modificationReference": "", "amount": {"minorUnits": 1, "currency": "USD"}}"#,
            ] {
                let answer = try await call(.put, "/v1/settlement/batches/B-2/pages/0", "[\(item)]")
                #expect(answer.status == 400 && answer.text.contains("invalidRequest"), "\(answer.text)")
            }
            // Nothing was stored: the batch's page 0 is not there to submit.
            let submitted = try await call(.post, "/v1/settlement/batches", #"{"header": {"batchReference": "B-2", "currency": "USD"}, "pages": 1}"#)
            #expect(submitted.status == 404 && submitted.text.contains(#""code":"unknownBatch""#), "\(submitted.text)")
            #expect(try await journaled() == before)
        }
    }
}
