import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerService
import LedgerApp
import LedgerCore
import LedgerServices
import Testing

@Suite struct SettlementSettingsTests {
    func instant(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test func settlementKeysAreReadAndBadOnesNamed() throws {
        let defaults = try LedgerConfiguration.load(environment: [:]).settlement
        #expect(defaults.cutOff.timeZoneIdentifier == "UTC" && defaults.cutOff.secondsAfterMidnight == 79_200)
        #expect(defaults.fundingLagBusinessDays == 1 && !defaults.runAtCutOff && defaults.calendar.holidays.isEmpty)
        let set = try LedgerConfiguration.load(environment: [
            "LEDGERD_SETTLEMENT_TIME_ZONE": "Europe/Berlin", "LEDGERD_SETTLEMENT_CUT_OFF": "17:30",
            "LEDGERD_SETTLEMENT_HOLIDAYS": "2026-12-25, 2026-12-26", "LEDGERD_SETTLEMENT_FUNDING_LAG_DAYS": "2",
            "LEDGERD_SETTLEMENT_AUTO": "true",
        ]).settlement
        #expect(set.cutOff.timeZoneIdentifier == "Europe/Berlin" && set.cutOff.secondsAfterMidnight == 17 * 3600 + 1800)
        #expect(set.calendar.holidays == [BusinessDate("2026-12-25")!, BusinessDate("2026-12-26")!])
        #expect(set.fundingLagBusinessDays == 2 && set.runAtCutOff)
        let widest = try LedgerConfiguration.load(environment: [
            "LEDGERD_SETTLEMENT_PAGE_SIZE": "10000", "LEDGERD_SETTLEMENT_REPORT_PART_LINES": "10000",
        ]).settlement
        #expect(widest.submissionPageSize == AcquirerWire.maximumPageItems && widest.reportPartLines == AcquirerWire.maximumReportLines)
        for (key, value) in [
            ("LEDGERD_SETTLEMENT_TIME_ZONE", "Mars/Olympus"), ("LEDGERD_SETTLEMENT_CUT_OFF", "25:00"),
            ("LEDGERD_SETTLEMENT_HOLIDAYS", "christmas"), ("LEDGERD_SETTLEMENT_FUNDING_LAG_DAYS", "-1"),
            // More than the acquirer's wire takes in a page or answers in a report read (it used to allow 1,000,000: the
            // service refused such a page, and a report read in such parts came back short and incomplete).
            ("LEDGERD_SETTLEMENT_PAGE_SIZE", "10001"), ("LEDGERD_SETTLEMENT_REPORT_PART_LINES", "10001"),
            ("LEDGERD_SETTLEMENT_PAGE_SIZE", "0"), ("LEDGERD_SETTLEMENT_REPORT_PART_LINES", "0"),
        ] {
            #expect(throws: ConfigurationError.self, "\(key)=\(value)") { try LedgerConfiguration.load(environment: [key: value]) }
        }
    }

    /// The merchant account and fee schedules are settings of the ledger; bad ones are named. What the daemon hands its
    /// acquirer child (`--supervised-settings`) becomes the child's model: the same account and fees, the ledger's
    /// hold lifetimes ahead of the standard rules, its calendar and dispute rate.
    @Test func theMerchantAccountAndFeesAreReadAndTheAcquirerChildIsConfiguredFromThem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("acquirer-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let defaults = try LedgerConfiguration.load(environment: [:]).settlement
        #expect(defaults.merchantAccount == "OrderLedgerStore" && defaults.pricing == [.demo(currency: .usd)])
        let schedules = [
            PricingSchedule(currency: .usd, model: .blended(commission: FeeComponent(rate: Rate(numerator: 2, denominator: 100)))),
            PricingSchedule.demo(currency: .eur),
        ]
        let pricing = directory.appendingPathComponent("pricing.json")
        try LedgerJSON.encode(schedules).write(to: pricing)
        let configuration = try LedgerConfiguration.load(environment: [
            "LEDGERD_SETTLEMENT_MERCHANT_ACCOUNT": "AcmeStore", "LEDGERD_SETTLEMENT_PRICING_FILE": pricing.path,
            "LEDGERD_HOLD_LIFETIMES": "visa=3600", "LEDGERD_ACQUIRER_DISPUTE_RATE": "5", "LEDGERD_SETTLEMENT_HOLIDAYS": "2026-12-25",
        ])
        #expect(configuration.settlement.merchantAccount == "AcmeStore" && configuration.settlement.pricing == schedules)

        let settingsFile = directory.appendingPathComponent("settings.json")
        try LedgerJSON.encode(configuration.supervisedAcquirerSettings).write(to: settingsFile)
        let model = try AcquirerServiceConfiguration.model(modelFile: nil, supervisedSettingsFile: settingsFile.path, disputeRatePerMille: nil)
        #expect(model.merchantAccount == "AcmeStore" && model.pricing == schedules)
        #expect(model.holdLifetimes.first == HoldLifetimeRule(network: .visa, lifetimeSeconds: 3600))
        #expect(model.holdLifetimes.dropFirst().elementsEqual(HoldLifetimeRule.standard))
        #expect(model.calendar.holidays == [BusinessDate("2026-12-25")!] && model.disputes == .perMille(5))
        #expect(model.defaultCreditLimit == configuration.acquirerCreditLimit)
        #expect(model == AcquirerModelConfiguration(supervised: configuration.supervisedAcquirerSettings))

        let garbage = directory.appendingPathComponent("garbage.json")
        try Data("[{\"currency\": \"USD\"}]".utf8).write(to: garbage)
        let twice = directory.appendingPathComponent("twice.json")
        try LedgerJSON.encode([PricingSchedule.demo(currency: .usd), .demo(currency: .usd)]).write(to: twice)
        for (key, value) in [
            ("LEDGERD_SETTLEMENT_MERCHANT_ACCOUNT", "Acme Store"), ("LEDGERD_SETTLEMENT_MERCHANT_ACCOUNT", "a,b"),
            ("LEDGERD_SETTLEMENT_PRICING_FILE", garbage.path), ("LEDGERD_SETTLEMENT_PRICING_FILE", twice.path),
            ("LEDGERD_SETTLEMENT_PRICING_FILE", directory.appendingPathComponent("absent.json").path),
        ] {
            #expect(throws: ConfigurationError.self, "\(key)=\(value)") { try LedgerConfiguration.load(environment: [key: value]) }
        }
    }

    /// Issue 52: `LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS` entries `NAME` or `NAME:CUR[+CUR…]` give a currency's account; a
    /// currency listed nowhere settles under the ledger's own account. An unknown code or a currency under two accounts is
    /// refused at start.
    @Test func aCurrencysMerchantAccountIsReadFromTheAccountsList() throws {
        let settings = try LedgerConfiguration.load(environment: [
            "LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS": "LedgerCA:CAD, LedgerEU:EUR+GBP, LedgerOld"
        ]).settlement
        let cad = Currency(code: "CAD")!
        let gbp = Currency(code: "GBP")!
        #expect(settings.merchantAccounts == ["OrderLedgerStore", "LedgerCA", "LedgerEU", "LedgerOld"])
        #expect(settings.merchantAccount(for: cad) == "LedgerCA" && settings.merchantAccount(for: .eur) == "LedgerEU")
        #expect(settings.merchantAccount(for: gbp) == "LedgerEU" && settings.merchantAccount(for: .usd) == "OrderLedgerStore")
        for value in ["LedgerCA:XYZ", "LedgerCA:CAD,LedgerCA2:CAD", ":CAD", "LedgerCA:"] {
            #expect(throws: ConfigurationError.self, "\(value)") {
                try LedgerConfiguration.load(environment: ["LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS": value])
            }
        }
    }

    @Test func theNightlyRunSettlesTheLastBusinessDayWhoseCutOffPassed() throws {
        let settings = try LedgerConfiguration.load(environment: ["LEDGERD_SETTLEMENT_HOLIDAYS": "2026-06-22"]).settlement
        // Friday 2026-06-19: before 22:00 UTC it is Thursday's, after it Friday's.
        #expect(settings.lastClosedBusinessDay(now: instant("2026-06-19T21:59:59Z")) == BusinessDate("2026-06-18"))
        #expect(settings.lastClosedBusinessDay(now: instant("2026-06-19T22:00:00Z")) == BusinessDate("2026-06-19"))
        // The weekend and the Monday holiday still mean Friday.
        #expect(settings.lastClosedBusinessDay(now: instant("2026-06-22T23:00:00Z")) == BusinessDate("2026-06-19"))
        #expect(settings.lastClosedBusinessDay(now: instant("2026-06-23T22:30:00Z")) == BusinessDate("2026-06-23"))
    }
}
