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
        let cssClass: String
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
        let legend: [Series]
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

    /// A series' colour class and name (the legend's order).
    struct Series {
        let name: String
        let cssClass: String
    }

    static let series = [
        Series(name: "gross", cssClass: "bar-gross"), Series(name: "fees", cssClass: "bar-fees"), Series(name: "net", cssClass: "bar-net"),
    ]

    /// Per business day in `days` (`YYYY-MM-DD`, oldest first), in the currency with the most batches, three bars side
    /// by side: the settled gross (a closed batch's credits less debits), the fees the acquirer cleared (interchange,
    /// scheme fees, markup and commission) and the net it cleared; a batch not cleared yet has its gross only. Nil when
    /// no batch has closed.
    static func settled(batches: [SettlementBatchState], days: [String]) -> View? {
        let closed = batches.filter { $0.closed != nil }
        guard !closed.isEmpty, !days.isEmpty else { return nil }
        var perCurrency: [String: Int] = [:]
        for batch in closed { perCurrency[batch.opened.currency.code, default: 0] += 1 }
        guard let code = perCurrency.max(by: { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) })?.key,
            let currency = closed.first(where: { $0.opened.currency.code == code })?.opened.currency
        else { return nil }
        // [day: [gross, fees, net]] in minor units.
        var byDay: [String: [Int64]] = [:]
        for batch in closed where batch.opened.currency.code == code {
            var sums = byDay[batch.opened.businessDate.description] ?? [0, 0, 0]
            let close = batch.closed!
            sums[0] += close.grossCredit.minorUnits - close.grossDebit.minorUnits
            if let cleared = batch.cleared {
                let fees = [cleared.interchange, cleared.schemeFees, cleared.markup, cleared.commission]
                sums[1] += fees.reduce(0) { $0 + $1.minorUnits.magnitude.clampedToInt64 }
                sums[2] += cleared.net.minorUnits
            }
            byDay[batch.opened.businessDate.description] = sums
        }
        let largest = max(byDay.values.flatMap { $0 }.max() ?? 0, 1)
        let left = 8
        let slot = (width - 2 * left) / days.count
        let barWidth = max(1, (slot - 2) / 3)
        var bars: [Bar] = []
        for (index, day) in days.enumerated() {
            guard let sums = byDay[day] else { continue }
            for (kind, value) in sums.enumerated() where value > 0 {
                let height = max(1, Int(value * Int64(plotHeight) / largest))
                bars.append(
                    Bar(
                        x: left + index * slot + 1 + kind * barWidth,
                        y: 10 + plotHeight - height,
                        width: barWidth,
                        height: height,
                        label: "\(day) \(series[kind].name): \(decimal(value, currency)) \(code)",
                        cssClass: series[kind].cssClass
                    )
                )
            }
        }
        let ticks = [
            Tick(x: left, y: height - 8, label: days[0], anchor: "start"),
            Tick(x: width - left, y: height - 8, label: days[days.count - 1], anchor: "end"),
        ]
        return View(
            title: "Settled gross, fees and net per business day, last 30 days (\(code))",
            width: width,
            height: height,
            left: left,
            right: width - left,
            baseline: 10 + plotHeight,
            bars: bars,
            ticks: ticks,
            legend: series
        )
    }
}

extension UInt64 {
    /// The value as an `Int64`, or `Int64.max` beyond it.
    fileprivate var clampedToInt64: Int64 { self > UInt64(Int64.max) ? Int64.max : Int64(self) }
}
