import LedgerCore

/// Charts as server-rendered SVG: bars computed here (integer arithmetic on minor units, no floating point near money),
/// drawn by the template with presentation attributes and the stylesheet's classes (no inline style, which the
/// Content-Security-Policy would refuse).
package enum ConsoleChart {
    struct Bar {
        let x: Int
        let y: Int
        let width: Int
        let height: Int
        let label: String
    }

    struct Tick {
        let x: Int
        let y: Int
        let label: String
        /// `start` or `end` (SVG's `text-anchor`): the last label ends at the right edge rather than overflowing it.
        let anchor: String
    }

    struct View {
        let title: String
        let width: Int
        let height: Int
        let left: Int
        let right: Int
        let baseline: Int
        let bars: [Bar]
        let ticks: [Tick]
    }

    /// `minorUnits` of `currency` as a decimal string (`1234` USD → `12.34`).
    package static func decimal(_ minorUnits: Int64, _ currency: Currency) -> String {
        let perMajor = currency.minorUnitsPerMajor
        let magnitude = minorUnits.magnitude
        let major = magnitude / UInt64(perMajor)
        let minor = magnitude % UInt64(perMajor)
        let sign = minorUnits < 0 ? "-" : ""
        guard currency.minorUnitDigits > 0 else { return "\(sign)\(major)" }
        let fraction = String(minor)
        return "\(sign)\(major).\(String(repeating: "0", count: currency.minorUnitDigits - fraction.count))\(fraction)"
    }

    static let width = 640
    static let height = 180
    static let plotHeight = 140

    /// The settled gross (credits less debits of each closed batch) per business day in `days` (`YYYY-MM-DD`, oldest
    /// first), in the currency with the most batches; nil when no batch has closed.
    static func settledGross(batches: [SettlementBatchState], days: [String]) -> View? {
        let closed = batches.filter { $0.closed != nil }
        guard !closed.isEmpty, !days.isEmpty else { return nil }
        var perCurrency: [String: Int] = [:]
        for batch in closed { perCurrency[batch.opened.currency.code, default: 0] += 1 }
        guard let code = perCurrency.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) })?.key else { return nil }
        var byDay: [String: Int64] = [:]
        var currency: Currency?
        for batch in closed where batch.opened.currency.code == code {
            guard let gross = try? batch.closed!.grossCredit.subtracting(batch.closed!.grossDebit) else { continue }
            currency = gross.currency
            byDay[batch.opened.businessDate.description, default: 0] += gross.minorUnits
        }
        guard let currency else { return nil }
        let largest = max(byDay.values.max() ?? 0, 1)
        let left = 8
        let slot = (width - 2 * left) / days.count
        let bars = days.enumerated().compactMap { index, day -> Bar? in
            guard let value = byDay[day], value > 0 else { return nil }
            let height = max(1, Int(value * Int64(plotHeight) / largest))
            return Bar(
                x: left + index * slot + 1,
                y: 10 + plotHeight - height,
                width: max(1, slot - 2),
                height: height,
                label: "\(day): \(decimal(value, currency)) \(code)"
            )
        }
        let ticks = [
            Tick(x: left, y: height - 8, label: days[0], anchor: "start"),
            Tick(x: width - left, y: height - 8, label: days[days.count - 1], anchor: "end"),
        ]
        return View(
            title: "Settled gross per business day, last 30 days (\(code))",
            width: width,
            height: height,
            left: left,
            right: width - left,
            baseline: 10 + plotHeight,
            bars: bars,
            ticks: ticks
        )
    }
}
