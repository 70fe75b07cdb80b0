import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerBank
import LedgerCore
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

/// Issue 53: the clerk's route for bank breaks, `POST /bank/breaks/{id}/resolve`, through the real router and
/// PostgreSQL: an unexpected credit's break is resolved with a note (the event names the operator); a repeat of the same
/// note answers that resolution and appends nothing; a missing, blank or too long note, an unknown break, another note
/// on the resolved break, an auditor's key — each a 4xx with the error shape and the event count unchanged.
@Suite struct BankBreakRouteTests {
    static func call(
        _ client: any TestClientProtocol,
        _ uri: String,
        _ body: String?,
        key: String = TestApp.operatorKey
    ) async throws -> (Int, String) {
        try await client.execute(
            uri: uri,
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: body.map { ByteBuffer(string: $0) }
        ) { (Int($0.status.code), String(buffer: $0.body)) }
    }

    @Test func aClerkResolvesABankBreakWithANoteAndABadRequestAppendsNothing() async throws {
        let now = TestApp.instant("2026-12-04T18:00:00Z")
        try await TestApp.withApp(clock: { now }) { client, services in
            // A credit no payout explains: one unexpected_credit break.
            let statement = SettlementRunTests.StatementText(
                account: "NL91ABNA0417164300",
                id: "STMT-R-001",
                day: BusinessDate("2026-12-04")!,
                credits: [(Money(minorUnits: 1234, currency: .eur), "/REMI/Supplier refund 0815")]
            ).text
            let imported = try await client.execute(
                uri: "/bank/statements",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)"],
                body: ByteBuffer(string: statement)
            ) { (response: TestResponse) in (response.status, String(buffer: response.body)) }
            #expect(imported.0 == .ok, "\(imported.1)")
            let matching = (try? JSONSerialization.jsonObject(with: Data(imported.1.utf8)) as? [String: Any])?["matching"] as? [String: Any]
            #expect(matching?["breaks"] as? [String: Int] == ["unexpected_credit": 1], "\(imported.1)")
            let (state, _) = try await services.bank.matchState()
            let found = try #require(state.openBreaks.first)
            #expect(found.breakClass == .unexpectedCredit)
            let uri = "/bank/breaks/\(found.breakID)/resolve"
            let head = try await services.store.head().position

            let refused: [(String, String?, String, Int, String)] = [
                (uri, "{}", TestApp.operatorKey, 422, "missing_field"),
                (uri, #"{"reason": "   "}"#, TestApp.operatorKey, 422, "invalid_field"),
                (uri, #"{"reason": "\#(String(repeating: "x", count: 501))"}"#, TestApp.operatorKey, 422, "invalid_field"),
                (uri, #"{"reason": 5}"#, TestApp.operatorKey, 422, ""),
                (uri, #"{"reason": "#, TestApp.operatorKey, 400, ""),
                (uri, #"{"reason": "booked by hand", "extra": 1}"#, TestApp.operatorKey, 400, ""),
                ("/bank/breaks/no-such-break/resolve", #"{"reason": "booked by hand"}"#, TestApp.operatorKey, 404, "not_found"),
                (uri, #"{"reason": "booked by hand"}"#, TestApp.auditorKey, 403, "forbidden"),
            ]
            for (target, body, key, status, code) in refused {
                let (answered, text) = try await Self.call(client, target, body, key: key)
                #expect(answered == status || (status != 404 && answered / 100 == 4 && code.isEmpty), "\(target) \(body ?? ""): \(answered) \(text)")
                let error = AccessAndLimitsTests.errorCode(text)
                #expect(error != nil && (code.isEmpty || error == code), "\(target) \(body ?? ""): \(text)")
            }
            #expect(try await services.store.head().position == head, "a refused resolution appended")

            // The note is recorded: one BankBreakResolved naming the operator, the break closed.
            let (status, text) = try await Self.call(client, uri, #"{"reason": "supplier refund, booked by hand"}"#)
            #expect(status == 200, "\(text)")
            let reply = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])
            #expect(
                reply == ["break_id": found.breakID, "reason": "supplier refund, booked by hand", "resolved_by": "operator:env-operator-1"],
                "\(text)"
            )
            #expect(try await services.store.head().position == head + 1)
            let (after, _) = try await services.bank.matchState()
            #expect(after.openBreaks.isEmpty && after.resolutions[found.breakID]?.reason == "supplier refund, booked by hand")

            // The same note again (a retry): the same answer, nothing appended.
            let again = try await Self.call(client, uri, #"{"reason": "supplier refund, booked by hand"}"#)
            #expect(again.0 == 200 && again.1 == text, "\(again.1)")
            #expect(try await services.store.head().position == head + 1)

            // Another note on the resolved break: 409 already_resolved, nothing appended.
            let other = try await Self.call(client, uri, #"{"reason": "something else"}"#)
            #expect(other.0 == 409 && AccessAndLimitsTests.errorCode(other.1) == "already_resolved", "\(other.1)")
            #expect(try await services.store.head().position == head + 1)
        }
    }
}
