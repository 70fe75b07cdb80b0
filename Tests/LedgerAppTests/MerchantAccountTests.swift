import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

/// Issue 52, merchant accounts end to end, through the real router, services and acquirer model: captures in USD
/// settle under the ledger's account, captures in CAD under `OrderLedgerCA` (`LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS=
/// OrderLedgerCA:CAD`); each batch carries its account, the acquirer's report names it on every line, one uploaded
/// report of both accounts is routed line by line to each account's batch, and a report of a third account is refused
/// with nothing stored.
extension SettlementRunTests {
    static let cad = Currency(code: "CAD")!

    /// A catalog with a product and a shipping method priced in CAD.
    static let canadianCatalog = """
        {"products": [{"id": "maple", "name": "Maple Syrup", "description": "A can of syrup", "price": "40.00", "currency": "CAD", "stock": 10}],
         "shipping_methods": [{"name": "Canada Post", "description": "Three days", "transit_days": 3, "price": "5.00", "currency": "CAD"}]}
        """

    /// The acquirer model of these tests: fee schedules in USD and CAD, and a Mastercard whose account is in CAD.
    static func twoCurrencyAcquirer(clock: SimulatedClock) -> AcquirerModel {
        var model = AcquirerModelConfiguration()
        model.pricing = [.demo(currency: .usd), .demo(currency: cad)]
        model.creditLimits = [CreditLimit(token: "tok_mastercard", limit: Money(minorUnits: 10_000_000, currency: cad))]
        return AcquirerModel(seed: 52, configuration: model, clock: { clock.now })
    }

    /// A pricing file with the same schedules, for the ledger's expected fees.
    static func twoCurrencyPricingFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledgerd-pricing-\(UUID().uuidString).json").path
        try LedgerJSON.encode([PricingSchedule.demo(currency: .usd), .demo(currency: cad)]).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Pays for the CAD product (48.20 CAD: 40.00, 8 % tax, 5.00 shipping) with the CAD card, and captures it.
    func payAndCaptureInCAD(_ client: any TestClientProtocol) async throws -> String {
        let body = StorefrontDriver.paymentBody(
            source: "tok_mastercard",
            amount: 4820,
            product: "Maple Syrup",
            method: "Canada Post",
            extra: ["currency": "CAD"]
        )
        let (status, text) = try await storefront.pay(client, body)
        #expect(status == .ok, "\(text)")
        let id = try WireJSON.decode(PaymentReply.self, from: text).orderId
        try await capture(client, id)
        return id
    }

    /// Every journal entry of the day balances in its currency, and so do the day's totals per currency.
    func expectJournalBalancedPerCurrency(_ client: any TestClientProtocol, from: Date, to: Date) async throws {
        let (status, text) = try await get(
            client,
            "/journal?from=\(RFC3339.format(from.epochMicroseconds))&to=\(RFC3339.format(to.epochMicroseconds))"
        )
        #expect(status == .ok, "\(text)")
        let journal = try WireJSON.decode(JournalReply.self, from: text)
        for entry in journal.entries {
            let currency = try #require(Currency(code: entry.currency))
            func units(_ text: String) throws -> Int64 { try Money(decimal: text, currency: currency).minorUnits }
            let debit = try entry.lines.reduce(0) { $0 + (try units($1.debit)) }
            let credit = try entry.lines.reduce(0) { $0 + (try units($1.credit)) }
            #expect(debit == credit && debit > 0, "entry \(entry.position) \(entry.eventType) in \(entry.currency) does not balance")
        }
        var sums: [String: Int64] = [:]
        for total in journal.totals {
            let currency = try #require(Currency(code: total.currency))
            sums[total.currency, default: 0] +=
                try Money(decimal: total.debit, currency: currency).minorUnits - Money(decimal: total.credit, currency: currency).minorUnits
        }
        #expect(Set(sums.keys) == ["CAD", "USD"] && sums.values.allSatisfy { $0 == 0 }, "\(sums)")
    }

    @Test func twoMerchantAccountsEndToEndAndAReportOfAThirdIsRefused() async throws {
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
            let usdOrder = try await storefront.placeOrder(client)
            try await capture(client, usdOrder)
            _ = try await payAndCaptureInCAD(client)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let run = try await settle(client, "2026-06-17")

            // One batch per account, each under its own.
            #expect(run.batches.map(\.batchId).sorted() == ["OrderLedgerCA-CAD-2026-06-17", "OrderLedgerStore-USD-2026-06-17"])
            var lines: [String: [SettlementReportLine]] = [:]
            for batch in run.batches {
                let account = batch.currency == "CAD" ? "OrderLedgerCA" : "OrderLedgerStore"
                #expect(try await view(client, batch.batchId).merchantAccount == account)
                #expect(batch.stage == .payoutScheduled, "\(batch.batchId)")
                let reconciled = try await reconciliation(client, batch.batchId)
                #expect(reconciled.merchantAccount == account)
                #expect(reconciled.breaks.isEmpty && reconciled.matched == 1, "\(batch.batchId): \(reconciled.breaks.map(\.detail))")
                // The acquirer's report names the batch's account on every line, its payout line too.
                let (_, csv) = try await get(client, "/settlements/\(batch.batchId)/report.csv")
                lines[account] = try SettlementReportCSV().parse(csv)
                #expect(lines[account]?.map(\.merchantAccount) == [account, account], "\(batch.batchId)")
            }
            try await expectJournalBalancedPerCurrency(client, from: Self.instant("2026-06-17T00:00:00Z"), to: Date().addingTimeInterval(60))

            // One uploaded report carrying both accounts' lines: each line reconciled in its account's batch.
            let both = try Self.sdr((lines["OrderLedgerStore"] ?? []) + (lines["OrderLedgerCA"] ?? []))
            var (status, text) = try await postReport(client, both)
            #expect(status == .ok, "\(text)")
            let usd = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(usd.batchId == "OrderLedgerStore-USD-2026-06-17" && usd.merchantAccount == "OrderLedgerStore")
            #expect(usd.breaks.isEmpty && usd.matched == 1, "\(usd.breaks.map(\.detail))")
            let canadian = try await reconciliation(client, "OrderLedgerCA-CAD-2026-06-17")
            let routed = try #require(canadian.reconciliations.first { $0.report == usd.report }, "no upload reconciled in the CAD batch")
            #expect(routed.breaks.isEmpty && routed.matched == 1, "\(routed.breaks.map(\.detail))")

            // The same report with the CAD lines under a third account: refused naming it, nothing stored or appended.
            let head = try await services.store.head().position
            let stored = try await storedReports(services)
            let third = both.replacingOccurrences(of: ",OrderLedgerCA,", with: ",OrderLedgerJP,")
            (status, text) = try await postReport(client, third)
            #expect(status == .unprocessableContent, "\(text)")
            #expect(text.contains("Merchant Account \\\"OrderLedgerJP\\\" is not a merchant account of this ledger"), "\(text)")
            #expect(try await services.store.head().position == head)
            #expect(try await storedReports(services) == stored)

            // The console shows each batch's account: on its page and on Today.
            let browser = ConsoleTests.Browser(client)
            try await browser.signIn(TestApp.auditorKey)
            let page = try await browser.request("/console/settlements/OrderLedgerCA-CAD-2026-06-17")
            #expect(page.status == .ok && page.html.contains("OrderLedgerCA"), "\(page.html)")
            let today = try await browser.request("/console/today")
            #expect(today.html.contains("merchant account <code>OrderLedgerStore</code>"), "\(today.html)")
        }
    }

    /// Issue 52, step 2: captures in USD and CAD under one merchant account, settled by the acquirer model in one run
    /// into two payouts (one per settlement currency), each reconciled with 0 breaks, the journal balanced per currency.
    @Test func capturesInTwoCurrenciesSettleIntoTwoPayoutsWithNoBreaks() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        let pricing = try Self.twoCurrencyPricingFile()
        defer { try? FileManager.default.removeItem(atPath: pricing) }
        let acquirer = Self.twoCurrencyAcquirer(clock: clock)
        let environment = ["LEDGERD_SETTLEMENT_PRICING_FILE": pricing]
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }, environment: environment) { client, services in
            _ = try await CatalogImport.parse(Self.canadianCatalog, format: "json").run(
                client: services.client,
                now: clock.now,
                logger: TestCluster.logger
            )
            for _ in 0..<2 {
                try await capture(client, try await storefront.placeOrder(client))
                _ = try await payAndCaptureInCAD(client)
            }
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let run = try await settle(client, "2026-06-17")
            #expect(run.batches.map(\.batchId).sorted() == ["OrderLedgerStore-CAD-2026-06-17", "OrderLedgerStore-USD-2026-06-17"])
            // Two payouts, each in its currency: the nets of its two captures (59.00 USD or 48.20 CAD each, less fees).
            var payouts: [String: PayoutNotice] = [:]
            for batch in run.batches {
                let currency = try #require(Currency(code: batch.currency))
                let viewed = try await view(client, batch.batchId)
                let number = try #require(viewed.batchNumber)
                payouts[batch.currency] = try await acquirer.payout(batchNumber: Int(number))
                let payout = try #require(payouts[batch.currency])
                #expect(payout.amount.currency == currency && payout.merchantAccount == "OrderLedgerStore")
                #expect(try Money(decimal: try #require(viewed.payout), currency: currency) == payout.amount)
                let gross: Int64 = batch.currency == "CAD" ? 9_640 : 11_800
                #expect(payout.amount.minorUnits > 0 && payout.amount.minorUnits < gross, "\(batch.batchId): \(payout.amount)")
                let reconciled = try await reconciliation(client, batch.batchId)
                #expect(reconciled.breaks.isEmpty && reconciled.matched == 2, "\(batch.batchId): \(reconciled.breaks.map(\.detail))")
            }
            #expect(payouts.count == 2 && payouts["USD"]?.payoutReference != payouts["CAD"]?.payoutReference)
            try await expectJournalBalancedPerCurrency(client, from: Self.instant("2026-06-17T00:00:00Z"), to: Date().addingTimeInterval(60))
        }
    }
}
