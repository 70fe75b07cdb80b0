import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerApp
import LedgerBank
import LedgerBench
import LedgerCore
import LedgerEngine
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

/// Issue 53, the third leg end to end through the real router, services, acquirer model and PostgreSQL: a day settled
/// into two currencies, its payouts announced, then the bank's statements: one payout paid in full, one short by a fee,
/// an unexpected credit (exactly those three outcomes); the same statement again (nothing new); the short payout's
/// remainder on the next day's statement (the break resolved by that file, the event naming it); the journal books each
/// deposit from payouts in transit into the bank, balanced per currency.
extension SettlementRunTests {
    /// One MT940 statement: an account in a currency on a day, opening at zero, with credits (amount, `:86:` text).
    struct StatementText {
        var account: String
        var id: String
        var day: BusinessDate
        var credits: [(Money, String)]

        var text: String {
            let currency = credits[0].0.currency
            func amount(_ minor: Int64) -> String {
                Money(minorUnits: minor, currency: currency).decimalString.replacingOccurrences(of: ".", with: ",")
            }
            let date = String(day.description.replacingOccurrences(of: "-", with: "").dropFirst(2))
            var text = ":20:\(id)\n:25:\(account)\n:28C:\(id.suffix(3))/1\n:60F:C\(date)\(currency.code)0,\n"
            for (index, (money, remittance)) in credits.enumerated() {
                text += ":61:\(date)\(date.suffix(4))C\(amount(money.minorUnits))NTRFNONREF//BNK\(id)\(index + 1)\n:86:\(remittance)\n"
            }
            return text + ":62F:C\(date)\(currency.code)\(amount(credits.reduce(0) { $0 + $1.0.minorUnits }))\n-\n"
        }
    }

    func postStatement(_ client: any TestClientProtocol, _ text: String) async throws -> [String: Any] {
        try await client.execute(
            uri: "/bank/statements",
            method: .post,
            headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "application/octet-stream"],
            body: ByteBuffer(string: text)
        ) { response in
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            return (try? JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8))) as? [String: Any] ?? [:]
        }
    }

    @Test func aSettledDaysPayoutsAreMatchedToTheBanksStatementsAndTheShortOneIsResolvedByTheNextFile() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        let pricing = try Self.twoCurrencyPricingFile()
        defer { try? FileManager.default.removeItem(atPath: pricing) }
        let environment = ["LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS": "OrderLedgerCA:CAD", "LEDGERD_SETTLEMENT_PRICING_FILE": pricing]
        let acquirer = Self.twoCurrencyAcquirer(clock: clock)
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }, environment: environment) { client, services in
            _ = try await CatalogImport.parse(Self.canadianCatalog, format: "json").run(
                client: services.client,
                now: clock.now,
                logger: TestCluster.logger
            )
            try await capture(client, try await storefront.placeOrder(client))
            _ = try await payAndCaptureInCAD(client)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let run = try await settle(client, "2026-06-17")
            #expect(run.batches.count == 2)
            let usd = try await view(client, "OrderLedgerStore-USD-2026-06-17")
            let cad = try await view(client, "OrderLedgerCA-CAD-2026-06-17")
            let usdReference = try #require(usd.payoutReference)
            let cadReference = try #require(cad.payoutReference)
            let usdPayout = try Money(decimal: try #require(usd.payout), currency: .usd)
            let cadPayout = try Money(decimal: try #require(cad.payout), currency: Self.cad)
            #expect(usd.valueDate == "2026-06-18" && cad.valueDate == "2026-06-18")

            // The bank's statement of 18 June: USD paid in full and a credit nobody announced; CAD short by a 1.00 fee.
            clock.set(Self.instant("2026-06-18T18:00:00Z"))
            let day = BusinessDate("2026-06-18")!
            let first =
                StatementText(
                    account: "US-0042",
                    id: "STMT-U-001",
                    day: day,
                    credits: [
                        (usdPayout, "/EREF/\(usdReference)/REMI/Acquirer payout"),
                        (Money(minorUnits: 1234, currency: .usd), "/REMI/Supplier refund 0815"),
                    ]
                ).text
                + StatementText(
                    account: "CA-0007",
                    id: "STMT-C-001",
                    day: day,
                    credits: [(Money(minorUnits: cadPayout.minorUnits - 100, currency: Self.cad), "/EREF/\(cadReference)/REMI/Acquirer payout")]
                ).text
            let reply = try await postStatement(client, first)
            let matching = reply["matching"] as? [String: Any] ?? [:]
            #expect(matching["matched"] as? Int == 2, "\(reply)")
            #expect(matching["breaks"] as? [String: Int] == ["amount_differs": 1, "unexpected_credit": 1], "\(reply)")

            // Exactly the three outcomes: USD matched in full, CAD short by 1.00, 12.34 USD unexpected.
            var (state, _) = try await services.bank.matchState()
            #expect(
                state.received == [
                    "OrderLedgerStore-USD-2026-06-17": usdPayout.minorUnits, "OrderLedgerCA-CAD-2026-06-17": cadPayout.minorUnits - 100,
                ]
            )
            #expect(state.matches.map(\.outstanding.minorUnits).sorted() == [0, 100])
            let open = state.openBreaks
            #expect(open.map(\.breakClass) == [.amountDiffers, .unexpectedCredit], "\(open.map(\.detail))")
            #expect(open.first?.difference == Money(minorUnits: -100, currency: Self.cad))
            #expect(open.first?.payouts.map(\.batchID) == ["OrderLedgerCA-CAD-2026-06-17"])
            #expect(open.last?.actual == Money(minorUnits: 1234, currency: .usd))

            // The console: the CAD batch's three legs, Today's payout lines and the two open bank breaks.
            let browser = ConsoleTests.Browser(client)
            try await browser.signIn(TestApp.operatorKey)
            let cadPage = try await browser.request("/console/settlements/OrderLedgerCA-CAD-2026-06-17")
            #expect(cadPage.html.contains("id=\"three-legs\""), "\(cadPage.html)")
            #expect(
                cadPage.html.contains(
                    "differs: received \(Money(minorUnits: cadPayout.minorUnits - 100, currency: Self.cad).decimalString) CAD of \(cadPayout.decimalString) CAD"
                ),
                "\(cadPage.html)"
            )
            #expect(cadPage.html.contains("<td class=\"break-class\">amount_differs</td>"))
            var today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"payouts-arrived\">1<") && today.html.contains("id=\"payouts-differing\">1<"), "\(today.html)")
            #expect(today.html.contains("id=\"bank-open-breaks\">2<") && today.html.contains("unexpected_credit"))

            // The same statement re-sent: nothing new.
            let head = try await services.store.head().position
            let again = try await postStatement(client, first)
            #expect((again["matching"] as? [String: Any])?["appended"] as? Int == 0, "\(again)")
            #expect(try await services.store.head().position == head)

            // The next day's statement carries the CAD remainder: matched, and the break resolved naming that file.
            clock.set(Self.instant("2026-06-19T18:00:00Z"))
            let next = StatementText(
                account: "CA-0007",
                id: "STMT-C-002",
                day: BusinessDate("2026-06-19")!,
                credits: [(Money(minorUnits: 100, currency: Self.cad), "/EREF/\(cadReference)/REMI/Fee refunded")]
            ).text
            let resolvedReply = try await postStatement(client, next)
            let file = try #require(resolvedReply["file_sha256"] as? String)
            (state, _) = try await services.bank.matchState()
            #expect(state.openBreaks.map(\.breakClass) == [.unexpectedCredit])
            let resolution = try #require(state.resolutions[open[0].breakID])
            #expect(resolution.file == file && resolution.reason.contains(String(file.prefix(12))), "\(resolution)")
            #expect(state.received["OrderLedgerCA-CAD-2026-06-17"] == cadPayout.minorUnits)

            // A clerk resolves the unexpected credit with a note, on Today's form (its CSRF token; an empty note refused).
            // Signed in again: a day passed on the app's clock, past the session's life.
            try await browser.signIn(TestApp.operatorKey)
            today = try await browser.request("/console/today")
            #expect(today.html.contains("id=\"payouts-arrived\">2<") && today.html.contains("id=\"payouts-differing\">0<"), "\(today.html)")
            let unexpected = try #require(state.openBreaks.first)
            let action = "/console/bank/breaks/\(unexpected.breakID)/resolve"
            #expect(today.html.contains("action=\"\(action)\""), "\(today.html)")
            let before = try await services.store.head().position
            let forged = try await browser.request(action, method: .post, form: [("csrf_token", "forged"), ("reason", "x")])
            #expect(forged.status == .forbidden)
            let empty = try await browser.request(action, method: .post, form: [("csrf_token", ConsoleTests.csrf(today.html)), ("reason", "")])
            #expect(
                empty.status.code >= 400 && empty.status.code < 500 && empty.html.contains("bank-reason-\(unexpected.breakID)-error"),
                "\(empty.html)"
            )
            #expect(try await services.store.head().position == before)
            let done = try await browser.request(
                action,
                method: .post,
                form: [("csrf_token", ConsoleTests.csrf(today.html)), ("batch_id", ""), ("reason", "supplier refund, booked by hand")]
            )
            #expect(done.status == .seeOther && done.location == "/console/today?done=resolve", "\(done.html)")
            #expect(try await services.store.head().position == before + 1)
            (state, _) = try await services.bank.matchState()
            #expect(state.openBreaks.isEmpty && state.resolutions[unexpected.breakID]?.resolvedBy == "operator:env-operator-1")
            today = try await browser.request("/console/today?done=resolve")
            #expect(today.html.contains("id=\"bank-open-breaks\">0<") && today.html.contains("The resolution was recorded."))

            // The journal: each matched deposit from 1300 payouts in transit into 1000 bank, balanced per currency.
            let (status, text) = try await get(
                client,
                "/journal?from=\(RFC3339.format(Self.instant("2026-06-17T00:00:00Z").epochMicroseconds))&to=\(RFC3339.format(Date().addingTimeInterval(60).epochMicroseconds))"
            )
            #expect(status == .ok, "\(text)")
            let journal = try WireJSON.decode(JournalReply.self, from: text)
            let deposits = journal.entries.filter { $0.eventType == "BankPayoutMatched" }
            #expect(deposits.map(\.currency).sorted() == ["CAD", "CAD", "USD"])
            for currency in [Currency.usd, Self.cad] {
                let bank = try journal.totals.filter { $0.account == "1000" && $0.currency == currency.code }
                    .reduce(0) { $0 + (try Money(decimal: $1.debit, currency: currency).minorUnits) }
                #expect(bank == (currency == .usd ? usdPayout : cadPayout).minorUnits, "\(currency.code)")
            }
            try await expectJournalBalancedPerCurrency(client, from: Self.instant("2026-06-17T00:00:00Z"), to: Date().addingTimeInterval(60))
        }
    }
}

/// The figure (issue 53): ``BankMatchingScenario`` (the one `ledgerd bench bank` runs) of `LEDGERD_BANK_MATCH_ENTRIES`
/// credits (5,000 by default; 100,000 for the issue's figure): its payouts announced, then its MT940 statement — most
/// credits naming their payout, every 100th paying by amount alone, every 100th short by a fee, every 1000th
/// unexpected — imported and matched through the route in one call. Prints the wall time, the process's CPU time and
/// the load average; checks the outcome is the one planted (matches by rule, breaks by class) and every credit and
/// payout is accounted for.
@Suite(.machine(.shared)) struct BankMatchingFigureTests {
    @Test func aStatementOfManyCreditsIsImportedAndMatchedInOneCall() async throws {
        let count = Int(ProcessInfo.processInfo.environment["LEDGERD_BANK_MATCH_ENTRIES"] ?? "") ?? 5_000
        let scenario = BankMatchingScenario(count: count, tag: "FIG")
        let now = TestApp.instant("2026-12-04T18:00:00Z")
        let bytes = Array(scenario.statement().utf8)
        try await TestApp.withApp(clock: { now }) { client, services in
            try await scenario.announce(on: services.writer, at: now)
            let cpu = ProcessFigures.cpuSeconds()
            let started = ContinuousClock.now
            let reply = try await client.execute(
                uri: "/bank/statements",
                method: .post,
                headers: [.authorization: "Bearer \(TestApp.operatorKey)"],
                body: ByteBuffer(bytes: bytes)
            ) { ($0.status, String(buffer: $0.body)) }
            let elapsed = ContinuousClock.now - started
            let load = ProcessFigures.loadAverage()
            print(
                "bank import and matching: \(count) credits (\(bytes.count) bytes) in \(elapsed), CPU \(ProcessFigures.cpuSeconds() - cpu) s, load \(load)"
            )
            #expect(reply.0 == .ok, "\(reply.1.prefix(300))")
            let expected = scenario.expected
            let matching = (try? JSONSerialization.jsonObject(with: Data(reply.1.utf8)) as? [String: Any])?["matching"] as? [String: Any] ?? [:]
            #expect(matching["matched"] as? Int == expected.matched, "\(matching)")
            #expect(matching["breaks"] as? [String: Int] == expected.breaks, "\(matching)")
            // By rule, from the stream itself.
            let (state, _) = try await services.bank.matchState()
            let byRule = Dictionary(grouping: state.matches, by: \.rule).mapValues(\.count)
            #expect(BankMatchingScenario.Outcome(matchedByRule: byRule, breaks: matching["breaks"] as? [String: Int] ?? [:]) == expected)
            #expect(state.received.count == scenario.payouts && state.consumed.count == count)
        }
    }
}
