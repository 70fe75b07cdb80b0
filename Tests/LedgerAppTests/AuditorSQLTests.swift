import Foundation
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

/// The auditors' SQL (docs/auditing.md, which the README links), run exactly as documented: the block between its
/// `<!-- auditor-sql -->` markers, through psql, as `ledger_auditor`, on a ledger with real orders.
@Suite(.machine(.shared)) struct AuditorSQLTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    static func documentedSQL() throws -> String {
        let readme = try String(contentsOf: TestCluster.repositoryRoot.appendingPathComponent("docs/auditing.md"), encoding: .utf8)
        guard let start = readme.range(of: "<!-- auditor-sql -->\n```sql\n"),
            let end = readme.range(of: "```\n<!-- /auditor-sql -->", range: start.upperBound..<readme.endIndex)
        else {
            throw TestFailure("docs/auditing.md has no <!-- auditor-sql --> block")
        }
        return String(readme[start.upperBound..<end.lowerBound])
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static var psql: String? {
        let candidates =
            ["/usr/bin/psql", "/usr/local/bin/psql"]
            + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .sorted().reversed().map { "/usr/lib/postgresql/\($0)/bin/psql" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `sql` through psql as `user`; returns the exit status and the output (CSV, one header per query).
    func psql(_ sql: String, database: TestDatabase, user: String, variables: [String: String]) async throws -> (Int32, String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("auditor-\(UUID().uuidString).sql")
        try Data(sql.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments =
            [
                "-X", "--csv", "-v", "ON_ERROR_STOP=1", "-h", database.endpoint.socketDirectory,
                "-p", String(database.endpoint.port), "-U", user, "-d", database.name, "-f", file.path,
            ]
            + variables.sorted { $0.key < $1.key }.flatMap { ["-v", "\($0.key)=\($0.value)"] }
        let psql = URL(fileURLWithPath: try #require(Self.psql, "psql is not installed (apt-get install -y postgresql-client)"))
        return try await ChildProcess.run(psql, arguments)
    }

    @Test func theDocumentedQueriesRunAsTheAuditorRoleAndAnswerRight() async throws {
        let sql = try Self.documentedSQL()
        let db = try await TestDatabase.fresh()
        let clock = SimulatedClock(TestApp.instant("2030-06-19T10:00:00Z"))
        try await TestApp.withApp(seed: true, database: db, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            _ = try await storefront.placeOrder(client)
            expectReply(try await backOffice.capture(client, id, #"{"amount": "10.00"}"#))
            expectReply(try await backOffice.ship(client, id))
            let asOfMicros = try #require(try await services.store.event(at: try await services.store.head().position)).recordedAtMicros
            expectReply(try await backOffice.refund(client, id, #"{"amount": "1.00", "reason": "late"}"#))
            clock.set(TestApp.instant("2030-06-19T22:00:01Z"))
            _ = try await backOffice.settle(client, "2030-06-19")
            let history = try await services.store.orderHistory(id)
            #expect(history.contains { $0.type == "SettlementBatchClosed" })
            let signed = try #require(try await services.store.event(at: 20))
            let variables = [
                "order": id, "as_of": RFC3339.format(asOfMicros), "position": "20",
                "checkpoint_position": "20", "checkpoint_hash": Hex.encode(signed.hash),
            ]

            let (status, output) = try await psql(sql, database: db, user: "ledger_auditor", variables: variables)
            #expect(status == 0, "\(output)")
            let lines = output.split(separator: "\n").map(String.init)
            // verify_chain(), verify_chain(1, 20), verify_prefix: three "ok" rows; the jsonb constraint stands.
            #expect(lines.filter { $0.hasPrefix("t,") }.count == 3, "\(output)")
            #expect(lines.firstIndex(of: "jsonb_is_hashed_text").map { lines[$0 + 1] } == "t", "\(output)")
            // The order's history: every event, with its hash.
            for event in history { #expect(output.contains(Hex.encode(event.hash)), "position \(event.position) missing") }
            #expect(history.contains { $0.type == "StockSold" } && history.contains { $0.type == "HoldRefunded" })
            // As of the time before the refund: the fold's events stop before it.
            let asOfPosition = try await services.store.position(atMicros: asOfMicros)
            #expect(lines.contains(String(asOfPosition)), "\(output)")
            // The link check: link, jsonb and previous link all true for position 20.
            #expect(lines.contains("20,t,t,t"), "\(output)")

            // A tampered event is named by the same queries (and the auditor could not have done it).
            let (refused, denied) = try await psql(
                "UPDATE ledger.events SET data = '{}' WHERE position = 20;",
                database: db,
                user: "ledger_auditor",
                variables: [:]
            )
            #expect(refused != 0 && denied.contains("permission denied"), "\(denied)")
            // The jsonb alone (the hashed text untouched; PostgreSQL refuses that until its constraint is
            // dropped): the verifier and the link check both say so.
            try await db.tamper(
                #"""
                ALTER TABLE ledger.events DROP CONSTRAINT events_jsonb_is_hashed_text;
                UPDATE ledger.events SET metadata = '{"actor": "mallory"}' WHERE position = 20
                """#
            )
            let (_, jsonb) = try await psql(sql, database: db, user: "ledger_auditor", variables: variables)
            #expect(jsonb.contains("f,19,20,the stored jsonb is not the hashed text"), "\(jsonb)")
            let jsonbLines = jsonb.split(separator: "\n").map(String.init)
            #expect(jsonbLines.firstIndex(of: "jsonb_is_hashed_text").map { jsonbLines[$0 + 1] } == "f", "\(jsonb)")
            #expect(jsonb.split(separator: "\n").contains("20,t,f,t"), "\(jsonb)")
            // The hashed text: the link no longer matches.
            try await db.tamper(#"UPDATE ledger.events SET metadata_text = '{"actor": "mallory"}' WHERE position = 7"#)
            let (_, after) = try await psql(sql, database: db, user: "ledger_auditor", variables: variables)
            #expect(after.contains("f,6,7,hash does not match the event's contents"), "\(after)")
        }
    }

    /// `ledger.verify_prefix` refuses a hash that is not 32 bytes (sql/0014) instead of reporting a
    /// rewritten history: the usual slip is the checkpoint's hex passed as text bytes (64 of them).
    @Test func verifyPrefixRefusesAHashThatIsNot32Bytes() async throws {
        let db = try await TestDatabase.fresh()
        try await TestApp.withApp(seed: true, database: db) { _, services in
            let signed = try #require(try await services.store.event(at: 5))
            let hex = Hex.encode(signed.hash)
            let right = "SELECT ok, checked FROM ledger.verify_prefix(5, decode(:'hash', 'hex'));"
            let (status, output) = try await psql(right, database: db, user: "ledger_auditor", variables: ["hash": hex])
            #expect(status == 0 && output.contains("t,5"), "\(output)")
            for wrong in ["convert_to(:'hash', 'UTF8')", "substring(decode(:'hash', 'hex') from 1 for 31)", "''::bytea"] {
                let (refused, message) = try await psql(
                    "SELECT * FROM ledger.verify_prefix(5, \(wrong));",
                    database: db,
                    user: "ledger_auditor",
                    variables: ["hash": hex]
                )
                #expect(refused != 0, "\(wrong): \(message)")
                #expect(message.contains("the checkpoint hash must be 32 bytes"), "\(wrong): \(message)")
                #expect(!message.contains("rewritten"), "\(wrong): \(message)")
            }
            // A 32-byte hash that differs is still what it was: history rewritten.
            let other = String(repeating: "00", count: 32)
            let (_, mismatch) = try await psql(right, database: db, user: "ledger_auditor", variables: ["hash": other])
            #expect(mismatch.contains("f,5"), "\(mismatch)")
        }
    }
}
