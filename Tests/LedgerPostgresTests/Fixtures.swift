import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

let testEpoch = Date(timeIntervalSince1970: 1_800_000_000)

func sampleEvent(_ n: Int, type: String = "SampleRecorded") -> NewEvent {
    NewEvent(type: type, data: #"{"n": \#(n), "note": "événement ✓"}"#, effectiveAt: testEpoch.addingTimeInterval(Double(n) / 1000))
}

func stream(_ name: String) -> StreamID { StreamID(name)! }

/// Rows of a single-column query.
func column<T: PostgresDecodable & Sendable>(_ client: DatabaseClient, _ query: PostgresQuery, as: T.Type) async throws -> [T] {
    var values: [T] = []
    for try await value in try await client.query(query).decode(T.self) { values.append(value) }
    return values
}

func eventCount(_ client: DatabaseClient) async throws -> Int64 {
    try await column(client, "SELECT count(*) FROM ledger.events", as: Int64.self).first ?? -1
}

/// Expects the statement to be refused with the given SQLSTATE.
func expectRejected(
    _ client: DatabaseClient,
    _ query: PostgresQuery,
    sqlState expected: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    do {
        // Read the rows too: an error raised while the statement runs (a trigger's) arrives after
        // the row description, that is after `query` has returned.
        for try await _ in try await client.query(query) {}
        Issue.record("statement was not rejected: \(query.sql)", sourceLocation: sourceLocation)
    } catch let error as PSQLError {
        #expect(error.serverInfo?[.sqlState] == expected, "\(query.sql)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error: \(String(reflecting: error))", sourceLocation: sourceLocation)
    }
}

/// Runs SQL as a superuser with triggers off (session_replication_role = replica), on one
/// connection: how a malicious DBA would alter history.
func tamper(_ client: DatabaseClient, _ sql: String) async throws {
    try await client.withConnection { connection in
        try await Migrator.run(
            script: "SET session_replication_role = replica; \(sql); RESET session_replication_role;",
            connection: connection,
            logger: TestCluster.logger
        )
    }
}
