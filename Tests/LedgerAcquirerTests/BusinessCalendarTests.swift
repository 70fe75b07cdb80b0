import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import Testing

struct BusinessCalendarTests {
    @Test("business dates: parsing, weekdays and day arithmetic across months and leap years")
    func dates() throws {
        #expect(date("2025-01-06").isoWeekday == 1)
        #expect(date("2025-01-10").isoWeekday == 5)
        #expect(date("1970-01-01").isoWeekday == 4)
        #expect(date("2024-02-28").adding(days: 1) == date("2024-02-29"))
        #expect(date("2024-12-31").adding(days: 1) == date("2025-01-01"))
        #expect(date("1969-12-31").daysSinceEpoch == -1)
        #expect(BusinessDate("2025-02-29") == nil && BusinessDate("2025-1-01") == nil && BusinessDate("x") == nil)
        #expect(date("2025-03-09").description == "2025-03-09")
        for offset in stride(from: Int64(-800_000), through: 800_000, by: 997) {
            #expect(BusinessDate(daysSinceEpoch: offset).daysSinceEpoch == offset)
        }
    }

    @Test("a Friday batch with T+1 pays on Monday; a Monday holiday moves it to Tuesday")
    func fridayToMonday() {
        let calendar = BusinessCalendar()
        #expect(calendar.adding(businessDays: 1, to: date("2025-01-10")) == date("2025-01-13"))
        #expect(calendar.adding(businessDays: 2, to: date("2025-01-09")) == date("2025-01-13"))
        #expect(calendar.adding(businessDays: 1, to: date("2025-01-06")) == date("2025-01-07"))
        #expect(calendar.adding(businessDays: 0, to: date("2025-01-11")) == date("2025-01-13"))
        let withHoliday = BusinessCalendar(holidays: [date("2025-01-13")])
        #expect(withHoliday.adding(businessDays: 1, to: date("2025-01-10")) == date("2025-01-14"))
        #expect(!withHoliday.isBusinessDay(date("2025-01-13")) && withHoliday.isBusinessDay(date("2025-01-14")))
    }

    @Test(
        "the model dates batches by cut-off and pays after the funding lag",
        arguments: [
            // close time (UTC)        business date  value date (T+1, holiday 2025-01-20)
            (at("2025-01-10", 12), "2025-01-10", "2025-01-13"),  // Friday before cut-off → Monday
            (at("2025-01-10", 22), "2025-01-13", "2025-01-14"),  // Friday at cut-off → Monday's batch
            (at("2025-01-11", 9), "2025-01-13", "2025-01-14"),  // Saturday → Monday's batch
            (at("2025-01-17", 8), "2025-01-17", "2025-01-21"),  // Friday, Monday holiday → Tuesday
        ]
    )
    func modelDates(closeAt: Date, business: String, value: String) throws {
        let config = AcquirerModelConfiguration(calendar: BusinessCalendar(holidays: [date("2025-01-20")]))
        var scenario = try SettlementScenario(configuration: config)
        let report = try scenario.settle(at: closeAt)
        #expect(report.businessDate == date(business))
        #expect(report.payout.valueDate == date(value))
    }

    @Test("cut-off in a merchant time zone and a T+2 funding lag")
    func timeZoneAndLag() throws {
        let zone = ReportTimeZone(name: "EST", secondsFromGMT: -5 * 3600)
        let config = AcquirerModelConfiguration(cutOff: CutOff(timeZone: zone, secondsAfterMidnight: 18 * 3600), fundingLagBusinessDays: 2)
        var scenario = try SettlementScenario(configuration: config)
        // 2025-01-07 22:30 UTC is 17:30 EST on Tuesday: before the 18:00 cut-off.
        let report = try scenario.settle(at: at("2025-01-07", 22, 30))
        #expect(report.businessDate == date("2025-01-07"))
        #expect(report.payout.valueDate == date("2025-01-09"))
        #expect(report.lines.allSatisfy { $0.timeZone == "EST" })
    }
}
