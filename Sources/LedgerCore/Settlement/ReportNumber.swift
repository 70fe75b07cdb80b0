// Numbers as the acquirers write them in their reports (docs/report-formats.md, "Numbers"): Adyen's
// and Stripe's exports write `.11` for 0.11, a sign on any amount (a credited commission is `-0.11`),
// and exchange rates at 15 fraction digits (`0.006733333333333`). The API's amounts stay strict
// (``Money/init(decimal:currency:)``); these rules are the reports' only.

/// Reads a report's amounts and exchange rates exactly (integer arithmetic, never binary floating point).
public enum ReportNumber {
    /// Why a number was refused: the phrase after the value in the error a clerk reads.
    public enum Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        /// `1,234.56`, `1.234,56`, `1 234.56`, `1'234.56`: grouping is not guessed (`,` and `.` swap by locale).
        case thousandsSeparator
        case notANumber
        case tooManyFractionDigits(Int)
        case negative
        case outOfRange

        public var description: String {
            switch self {
            case .thousandsSeparator: "has a thousands separator: write the amount without grouping (1234.56)"
            case .notANumber: "is not a decimal number"
            case .tooManyFractionDigits(let digits): "has more than \(digits) fraction digits"
            case .negative: "is negative"
            case .outOfRange: "is out of range"
            }
        }
    }

    /// The most fraction digits an exchange rate may have (the rate is kept as an exact ratio with a
    /// denominator of 10^digits; Adyen writes 15).
    public static let rateFractionDigits = 18

    /// An amount: an optional `+` or `-`, digits with an optional fraction, the whole part may be empty
    /// (`.11`, `-.5`); at most the currency's fraction digits (never rounded). Spaces around it are ignored.
    public static func money(_ text: String, currency: Currency) throws(Refusal) -> Money {
        let (negative, whole, fraction) = try parts(text)
        let digits = currency.minorUnitDigits
        guard fraction.count <= digits else { throw .tooManyFractionDigits(digits) }
        var units = try integer(whole, from: 0)
        units = try integer(fraction, from: units)
        for _ in fraction.count..<digits { units = try times10(units, plus: 0) }
        return Money(minorUnits: negative ? -units : units, currency: currency)
    }

    /// An exchange rate, kept exactly: `0.006733333333333` is 6733333333333 / 10^15, written back with the
    /// same 15 digits (``Rate`` keeps the denominator). At most ``rateFractionDigits`` fraction digits and
    /// a value below 2^63 / 10^digits; never negative.
    public static func exchangeRate(_ text: String) throws(Refusal) -> Rate {
        let (negative, whole, fraction) = try parts(text)
        guard !negative else { throw .negative }
        guard fraction.count <= rateFractionDigits else { throw .tooManyFractionDigits(rateFractionDigits) }
        var denominator: Int64 = 1
        for _ in 0..<fraction.count { denominator *= 10 }
        return Rate(numerator: try integer(fraction, from: try integer(whole, from: 0)), denominator: denominator)
    }

    /// Sign, whole digits and fraction digits of a decimal text, read on its UTF-8 bytes: a report has millions of
    /// amounts, and walking them as `Character`s (grapheme breaking) and building strings of their parts was a large
    /// part of an import's time per line (docs/report-formats.md, "Measure"). Every character these rules name is ASCII
    /// but the grouping spaces (U+00A0, U+202F), looked for by their bytes.
    private static func parts(_ text: String) throws(Refusal) -> (Bool, Substring.UTF8View, Substring.UTF8View) {
        let utf8 = text.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, utf8[start] == space { start = utf8.index(after: start) }
        while start < end, utf8[utf8.index(before: end)] == space { end = utf8.index(before: end) }
        var negative = false
        if start < end, utf8[start] == minus || utf8[start] == plus {
            negative = utf8[start] == minus
            start = utf8.index(after: start)
        }
        // A grouping separator between digits: refused by name rather than as "not a number".
        var dot: String.Index?
        var i = start
        var previous: UInt8 = 0
        var beforePrevious: UInt8 = 0
        while i < end {
            let byte = utf8[i]
            switch byte {
            case comma, apostrophe, space, underscore: throw .thousandsSeparator
            case point:
                guard dot == nil else { throw .thousandsSeparator }
                dot = i
            case 0xA0 where previous == 0xC2: throw .thousandsSeparator  // U+00A0
            case 0xAF where previous == 0x80 && beforePrevious == 0xE2: throw .thousandsSeparator  // U+202F
            default: break
            }
            beforePrevious = previous
            previous = byte
            i = utf8.index(after: i)
        }
        let whole = utf8[start..<(dot ?? end)]
        let fraction = dot.map { utf8[utf8.index(after: $0)..<end] } ?? utf8[end..<end]
        // `.11` is a number; `.`, `5.` and the empty text are not.
        guard !(whole.isEmpty && fraction.isEmpty), dot == nil || !fraction.isEmpty,
            whole.allSatisfy(isDigit), fraction.allSatisfy(isDigit)
        else { throw .notANumber }
        return (negative, whole, fraction)
    }

    private static let space = UInt8(ascii: " ")
    private static let minus = UInt8(ascii: "-")
    private static let plus = UInt8(ascii: "+")
    private static let comma = UInt8(ascii: ",")
    private static let apostrophe = UInt8(ascii: "'")
    private static let underscore = UInt8(ascii: "_")
    private static let point = UInt8(ascii: ".")

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `value` followed by the decimal `digits` (ASCII), overflow refused.
    private static func integer(_ digits: Substring.UTF8View, from value: Int64) throws(Refusal) -> Int64 {
        var value = value
        for byte in digits { value = try times10(value, plus: Int64(byte - 0x30)) }
        return value
    }

    private static func times10(_ value: Int64, plus digit: Int64) throws(Refusal) -> Int64 {
        let (times10, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(digit)
        guard !o1 && !o2 else { throw .outOfRange }
        return sum
    }
}
