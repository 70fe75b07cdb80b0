import Foundation
import Hummingbird
import LedgerAPI
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

/// Issue 31: `POST /payment` keeps its single-pass body parser (the hot path) instead of a type generated from the
/// document, so its verdict on a body must be the document's. A corpus around the storefront app's body — each required
/// member missing, unknown and mistyped members, every length, range, pattern and enum boundary the
/// `PaymentRequest` schema states — goes through the parser (``PaymentRequest/parse(body:contentType:)``) and through
/// an independent JSON Schema validator (Python's `jsonschema`, Draft 2020-12, on the document's own JSON as the daemon
/// serves it). Each body must be accepted by both or refused by both. The corpus keeps to what a schema can say: the
/// total against the catalog, a product's existence and an Apple Pay token's contents are the service's rules, after
/// the parser.
@Suite struct PaymentBodySchemaTests {
    static let app: [(String, String)] = [
        ("gateway", #""stripe""#), ("source", #""tok_visa""#), ("amount", "5900"), ("currency", #""USD""#),
        ("description", #""Clock""#), ("shipping_contact", #""Jane Appleseed""#), ("shipping_email", #""jane@example.com""#),
        ("shipping_street", #""1 Infinite Loop""#), ("shipping_city", #""Cupertino""#), ("shipping_state", #""CA""#),
        ("shipping_zip", #""95014""#), ("shipping_method_name", #""Standard""#),
    ]

    /// The app's body with `changes` applied (nil removes the member; a new name adds it), as JSON text.
    static func body(_ changes: [String: String?] = [:]) -> String {
        var members = app.filter { changes[$0.0] == nil || changes[$0.0]! != nil }.map { name, value in
            (name, changes[name].flatMap { $0 } ?? value)
        }
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) where !app.contains(where: { $0.0 == name }) {
            if let value { members.append((name, value)) }
        }
        return "{" + members.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}"
    }

    static func corpus() -> [String] {
        var bodies = [body()]
        for (name, _) in app { bodies.append(body([name: String?.none])) }
        let text200 = String(repeating: "a", count: 500)
        let cases: [(String, String)] = [
            ("amount", "0"), ("amount", "1"), ("amount", "-5900"), ("amount", #""5900""#), ("amount", "59.5"), ("amount", "null"),
            ("quantity", "0"), ("quantity", "1"), ("quantity", "1000"), ("quantity", "1001"), ("quantity", "null"),
            ("quantity", #""2""#), ("currency", #""usd""#), ("currency", #""US""#), ("currency", #""USDX""#), ("currency", "840"),
            ("gateway", #""paypal""#), ("gateway", #""acquirer""#), ("gateway", "null"), ("source", #""""#),
            ("source", #"" ""#), ("source", "5"), ("source", "\"\(String(repeating: "t", count: 255))\""),
            ("source", "\"\(String(repeating: "t", count: 256))\""), ("source", #""tok\u0001visa""#),
            ("description", #""""#), ("description", #""   ""#), ("description", "\"\(text200)\""),
            ("description", "\"\(text200)a\""), ("description", #""Clock\n""#), ("description", #""Cl\u007fock""#),
            ("description", #""Clock é""#), ("shipping_email", #""jane@example.com\u0000""#),
            ("shipping_email", #""jane""#), ("shipping_email", #""jane@example""#), ("shipping_email", #""jane doe@example.com""#),
            ("shipping_email", #"" jane@example.com ""#), ("shipping_email", #""j@mail.example.co.uk""#), ("shipping_email", #""a@@b.c""#),
            ("shipping_zip", "95014"),
            ("shipping_city", #"" Cupertino ""#), ("shipping_state", "null"), ("product_id", "null"), ("product_id", #""clock""#),
            ("product_id", #""""#), ("product_id", "7"), ("application_data", "null"), ("application_data", #""YWJj""#),
            ("application_data", "\"\(String(repeating: "A", count: 16_384))\""),
            ("application_data", "\"\(String(repeating: "A", count: 16_388))\""), ("quantitty", "2"), ("extra", "null"),
        ]
        for (name, value) in cases { bodies.append(body([name: value])) }
        return bodies
    }

    /// Each body's verdict by the document's `PaymentRequest` schema (Python's `jsonschema`, Draft 2020-12).
    static func schemaVerdicts(_ bodies: [String]) async throws -> [Bool] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("payment-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("input.json")
        let bodiesJSON = "[" + bodies.joined(separator: ",") + "]"
        try Data(#"{"document": \#(OpenAPIDocument.json), "bodies": \#(bodiesJSON)}"#.utf8).write(to: input)
        let script = """
            import json, sys
            from jsonschema import Draft202012Validator
            given = json.load(open(sys.argv[1]))
            schema = {"$ref": "#/components/schemas/PaymentRequest", "components": given["document"]["components"]}
            validator = Draft202012Validator(schema)
            print(json.dumps([validator.is_valid(body) for body in given["bodies"]]))
            """
        let (status, output) = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", script, input.path]
        )
        try #require(status == 0, "python3 with jsonschema (.ci/run installs it) failed: \(output)")
        let line = try #require(output.split(separator: "\n").last.map(String.init), "no verdicts: \(output)")
        return try JSONDecoder().decode([Bool].self, from: Data(line.utf8))
    }

    @Test func theParserAcceptsExactlyTheBodiesTheDocumentsSchemaAccepts() async throws {
        let bodies = Self.corpus()
        let schema = try await Self.schemaVerdicts(bodies)
        #expect(schema.count == bodies.count)
        var disagreements: [String] = []
        for (body, valid) in zip(bodies, schema) {
            var refusal: APIError?
            do {
                _ = try PaymentRequest.parse(body: ByteBuffer(string: body), contentType: "application/json")
            } catch {
                refusal = error
            }
            if (refusal == nil) != valid {
                let why = refusal.map { "refused (\($0.code), \($0.field ?? "-"))" } ?? "accepted"
                disagreements.append("schema \(valid ? "accepts" : "refuses"), parser \(why): \(body.prefix(300))")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(bodies.count) bodies:\n\(disagreements.joined(separator: "\n"))")
        // The corpus exercises both verdicts (a corpus all valid or all refused would prove nothing).
        #expect(schema.filter { $0 }.count >= 10 && schema.filter { !$0 }.count >= 30, "\(schema)")
    }
}
