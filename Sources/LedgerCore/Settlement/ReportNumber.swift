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
        guard fraction.count <= currency.minorUnitDigits else { throw .tooManyFractionDigits(currency.minorUnitDigits) }
        let units = try integer(whole + fraction + String(repeating: "0", count: currency.minorUnitDigits - fraction.count))
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
        return Rate(numerator: try integer(whole + fraction), denominator: denominator)
    }

    /// Sign, whole digits and fraction digits of a decimal text.
    private static func parts(_ text: String) throws(Refusal) -> (Bool, Substring, Substring) {
        var body = Substring(text).drop { $0 == " " }
        while body.last == " " { body = body.dropLast() }
        let negative = body.first == "-"
        if body.first == "-" || body.first == "+" { body = body.dropFirst() }
        // A grouping separator between digits: refused by name rather than as "not a number".
        if body.contains(where: { $0 == "," || $0 == "'" || $0 == " " || $0 == "\u{00A0}" || $0 == "\u{202F}" || $0 == "_" })
            || body.filter({ $0 == "." }).count > 1
        {
            throw .thousandsSeparator
        }
        let split = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = split[0]
        let fraction = split.count > 1 ? split[1] : ""
        // `.11` is a number; `.`, `5.` and the empty text are not.
        guard !(whole.isEmpty && fraction.isEmpty), split.count == 1 || !fraction.isEmpty,
            whole.allSatisfy({ $0.isASCII && $0.isNumber }), fraction.allSatisfy({ $0.isASCII && $0.isNumber })
        else { throw .notANumber }
        return (negative, whole, fraction)
    }

    private static func integer(_ digits: Substring) throws(Refusal) -> Int64 {
        var value: Int64 = 0
        for character in digits {
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times10.addingReportingOverflow(Int64(character.wholeNumberValue!))
            guard !o1 && !o2 else { throw .outOfRange }
            value = plus
        }
        return value
    }
}
