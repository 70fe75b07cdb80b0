import Foundation
import LedgerAcquirer
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
        for (key, value) in [
            ("LEDGERD_SETTLEMENT_TIME_ZONE", "Mars/Olympus"), ("LEDGERD_SETTLEMENT_CUT_OFF", "25:00"),
            ("LEDGERD_SETTLEMENT_HOLIDAYS", "christmas"), ("LEDGERD_SETTLEMENT_FUNDING_LAG_DAYS", "-1"),
        ] {
            #expect(throws: ConfigurationError.self, "\(key)=\(value)") { try LedgerConfiguration.load(environment: [key: value]) }
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
