import Foundation
import LedgerCore
import Testing

@testable import LedgerHTTP

/// The back office's time parameters (`GET /orders?from&to`, `/holds?expiring_before`, `/disputes?due_before`) are read
/// by the ledger's one RFC 3339 reader, as `GET /events` and the audit routes read theirs: the same text names the same
/// microsecond on every route, and what one route refuses no other takes. (They had a Foundation formatter of their
/// own, which refused RFC 3339's lower-case and space forms and nanosecond fractions, and read `+0100`.)
@Suite struct QueryTimeTests {
    @Test(arguments: [
        "2026-11-21T09:30:00Z", "2026-11-21T09:30:00.250000Z", "2026-11-21T09:30:00.25+01:00", "2026-11-21T09:30:00-05:30",
        "2026-11-21T09:30:00.123456789Z", "2026-11-21t09:30:00z", "2026-11-21 09:30:00Z", "1969-12-31T23:59:59.999999Z",
    ])
    func aTimeIsTheMicrosecondTheLedgersReaderGives(_ text: String) throws {
        let micros = try #require(RFC3339.micros(text))
        let date = try #require(try OrderRoutes.date(text, field: "from"))
        #expect(date.epochMicroseconds == micros)
    }

    @Test(arguments: [
        "", "yesterday", "2026-11-21", "2026-11-21T09:30:00", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T09:30:00+0100", "2026-11-21T09:30:00Zjunk",
    ])
    func anythingElseIsRefusedNamingTheParameter(_ text: String) {
        #expect(RFC3339.micros(text) == nil)
        #expect(
            throws: APIError.badRequest("invalid_parameter", "due_before must be an RFC 3339 time, e.g. 2026-11-21T00:00:00Z", field: "due_before")
        ) {
            try OrderRoutes.date(text, field: "due_before")
        }
    }

    @Test func absentIsNil() throws {
        #expect(try OrderRoutes.date(nil, field: "to") == nil)
    }
}
