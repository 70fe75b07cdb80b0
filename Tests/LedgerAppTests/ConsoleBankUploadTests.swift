import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

/// The console's bank statement upload (issue 53): an operator imports a statement file from the settlement page with
/// the form's CSRF token, through the same service as `POST /bank/statements`; each statement and what was stored is
/// shown; a refusal (no token, no file, a statement that does not add up, an auditor) appends nothing.
extension ConsoleTests {
    func uploadStatement(
        _ client: any TestClientProtocol,
        _ browser: Browser,
        _ fields: [(String, String)],
        file: String?
    ) async throws
        -> Browser.Page
    {
        let (type, body) = Self.multipart(fields, file: file.map { ("statement", "statement.sta", $0) })
        var headers: HTTPFields = [.contentType: type]
        headers[.cookie] = browser.cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        return try await client.execute(uri: "/console/bank/statements", method: .post, headers: headers, body: ByteBuffer(string: body)) {
            Browser.Page(status: $0.status, headers: $0.headers, html: String(buffer: $0.body))
        }
    }

    @Test func anOperatorImportsABankStatementFromTheSettlementPage() async throws {
        try await TestApp.withApp(seed: true) { client, services in
            let mt940 = String(decoding: try BankStatementImportTests.fixture("mt940-statement.sta"), as: UTF8.self)
            let browser = Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let page = try await browser.request("/console/settlements")
            #expect(page.html.contains("id=\"statement-form\"") && page.html.contains("<option value=\"mt940\">mt940</option>"), "\(page.html)")
            let csrf = Self.csrf(page.html)
            let before = try await head(services)
            // Refused, each with nothing appended: no token, no file, a statement that does not add up, an auditor.
            var refused = try await uploadStatement(client, browser, [("format", "")], file: mt940)
            #expect(refused.status == .forbidden && refused.html.contains("csrf_token_invalid"), "\(refused.html)")
            refused = try await uploadStatement(client, browser, [("csrf_token", csrf)], file: nil)
            #expect(
                refused.status == .badRequest && refused.html.contains("id=\"statement-file-error\"><code>missing_statement</code>"),
                "\(refused.html)"
            )
            let wrong = mt940.replacingOccurrences(of: ":62F:C261205EUR13650,07", with: ":62F:C261205EUR13650,00")
            refused = try await uploadStatement(client, browser, [("csrf_token", csrf), ("format", "mt940")], file: wrong)
            #expect(refused.status == .unprocessableContent && refused.html.contains("a difference of 0.07 EUR"), "\(refused.html)")
            #expect(refused.html.contains("<option value=\"mt940\" selected>"), "the format chosen stays")
            let auditor = Browser(client)
            try await auditor.signIn(TestApp.auditorKey)
            #expect(!(try await auditor.request("/console/settlements")).html.contains("statement-form"))
            #expect(try await uploadStatement(client, auditor, [("csrf_token", csrf)], file: mt940).status == .forbidden)
            #expect(try await head(services) == before)
            // The import: both statements stored, shown with their entries and the events appended.
            let done = try await uploadStatement(client, browser, [("csrf_token", csrf), ("format", "")], file: mt940)
            #expect(done.status == .ok && done.html.contains("id=\"statement-import\""), "\(done.status) \(done.html)")
            #expect(
                done.html.contains("<td>imported</td><td class=\"num\">5</td><td class=\"num\">1650.07 EUR</td><td class=\"num\">6</td>"),
                "\(done.html)"
            )
            #expect(try await services.eventCount(type: "BankStatementReceived") == 2)
            #expect(try await services.eventCount(type: "BankEntryBooked") == 6)
            // Again: nothing new, said so.
            let again = try await uploadStatement(client, browser, [("csrf_token", csrf)], file: mt940)
            #expect(again.status == .ok && again.html.contains("<td>already_imported</td>"), "\(again.html)")
            #expect(try await services.eventCount(type: "BankEntryBooked") == 6)
        }
    }
}
