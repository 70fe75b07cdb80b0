import LedgerCore
import LedgerMacros

import struct Foundation.Date

/// A day of the week, ISO numbering (Monday = 1 … Sunday = 7).
public enum Weekday: Int, Hashable, Sendable, Codable, CaseIterable {
    case monday = 1
    case tuesday, wednesday, thursday, friday, saturday, sunday
}

/// Which days the acquirer and the banks work: not a weekend day and not a holiday.
///
/// Holidays are configuration (a list of dates), not a rule engine: acquirers publish their
/// holiday calendars per year, and the model only needs to roll dates forward over them.
@MemberwiseInit
public struct BusinessCalendar: Hashable, Sendable, Codable {
    public var weekendDays: [Weekday] = [.saturday, .sunday]
    public var holidays: [BusinessDate] = []

    public func isBusinessDay(_ date: BusinessDate) -> Bool {
        !weekendDays.contains { $0.rawValue == date.isoWeekday } && !holidays.contains(date)
    }

    /// `date` itself if it is a business day, else the next one.
    public func businessDay(onOrAfter date: BusinessDate) -> BusinessDate {
        var day = date
        // A calendar whose every day is a weekend day would loop forever; cap the search at a year.
        for _ in 0..<366 where !isBusinessDay(day) { day = day.adding(days: 1) }
        return day
    }

    /// The date `count` business days after `date` (T+count). T+0 is `date` rolled forward.
    /// A Friday with T+1 gives Monday (or Tuesday when Monday is a holiday).
    public func adding(businessDays count: Int, to date: BusinessDate) -> BusinessDate {
        var day = businessDay(onOrAfter: date)
        for _ in 0..<max(0, count) { day = businessDay(onOrAfter: day.adding(days: 1)) }
        return day
    }
}

/// The time zone a report's times are written in: a name for the "TimeZone" column and a fixed
/// offset. Fixed on purpose: an offset that changes with daylight saving would make the same
/// instant print differently depending on the machine's tz database, and the model must be deterministic.
@MemberwiseInit
public struct ReportTimeZone: Hashable, Sendable, Codable {
    public var name: String
    public var secondsFromGMT: Int

    public static let utc = ReportTimeZone(name: "UTC", secondsFromGMT: 0)

    /// Whole seconds since the epoch, local to this zone, and split into day and second of day.
    package func localDayAndSecond(of instant: Date) -> (day: BusinessDate, secondOfDay: Int64) {
        let local = wholeSeconds(instant) + Int64(secondsFromGMT)
        let (day, second) = floorDivide(local, 86_400)
        return (BusinessDate(daysSinceEpoch: day), second)
    }

    /// `yyyy-MM-dd HH:mm:ss` in this zone.
    package func format(_ instant: Date) -> String {
        let (day, second) = localDayAndSecond(of: instant)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(day) \(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))"
    }

    /// Parses `yyyy-MM-dd HH:mm:ss` in this zone.
    package func parse(_ text: String) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, let day = BusinessDate(String(parts[0])) else { return nil }
        let clock = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let h = Int64(clock[0]), let m = Int64(clock[1]), let s = Int64(clock[2]), h < 24, m < 60, s < 60
        else {
            return nil
        }
        let seconds = day.daysSinceEpoch * 86_400 + h * 3600 + m * 60 + s - Int64(secondsFromGMT)
        return Date(timeIntervalSince1970: Double(seconds))
    }
}

/// The daily batch cut-off: captures submitted at or after this local time belong to the next
/// business day's batch.
@MemberwiseInit
public struct CutOff: Hashable, Sendable, Codable {
    public var timeZone: ReportTimeZone = .utc
    /// Seconds after local midnight (e.g. 22:00 = 79 200).
    public var secondsAfterMidnight: Int64 = 22 * 3600

    /// The business date of a batch closed at `instant`.
    package func businessDate(closingAt instant: Date, calendar: BusinessCalendar) -> BusinessDate {
        let (day, second) = timeZone.localDayAndSecond(of: instant)
        return calendar.businessDay(onOrAfter: second >= secondsAfterMidnight ? day.adding(days: 1) : day)
    }
}

/// Seconds since the epoch, rounded down: report times have whole-second resolution.
package func wholeSeconds(_ instant: Date) -> Int64 {
    Int64(instant.timeIntervalSince1970.rounded(.down))
}

package func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
    let q = value / divisor
    let r = value % divisor
    return r < 0 ? (q - 1, r + divisor) : (q, r)
}
