import LedgerMacros

/// An amount of money: integer minor units of one ISO 4217 currency. Never binary floating point.
///
/// At the API edge amounts are decimal strings ("50.00"); ``init(decimal:currency:)`` parses them
/// exactly and refuses more fraction digits than the currency has (no silent rounding).
/// Arithmetic is checked: mixing currencies or overflowing Int64 is a ``MoneyError``, not a wrap.
/// Rounding happens only where a rule is named (``RoundingRule``), e.g. when applying a tax rate.
@MemberwiseInit
public struct Money: Hashable, Sendable, Codable, CustomStringConvertible {
    public let minorUnits: Int64
    public let currency: Currency

    public static func zero(_ currency: Currency) -> Money { Money(minorUnits: 0, currency: currency) }

    /// Parses a decimal string such as `"50.00"`, `"0.5"`, `"12"` or `"-3.10"`.
    /// Refused: empty strings, signs other than a leading `-`, exponents, grouping separators,
    /// more fraction digits than the currency's minor unit, and values beyond Int64 minor units.
    ///
    /// Read over the UTF-8 bytes: every byte of an amount it takes is an ASCII digit, `-` or `.`, so any other byte
    /// (a non-ASCII digit, a combining mark) refuses the text, as reading `Character`s did. The refusals come in the same
    /// order (not an amount, then too many fraction digits, then out of range); `MoneyTests.theByteParserAnswersAsTheCharacterParser`
    /// holds it to the `Character` parser it replaced (issue 57: that one, with Foundation's `padding`, was 4–6 % of
    /// the expiry sweep's CPU, every event with money decoding through it).
    public init(decimal text: String, currency: Currency) throws(MoneyError) {
        let bytes = text.utf8
        var negative = false
        var point = false
        var wholeDigits = 0
        var fractionDigits = 0
        var first = true
        for byte in bytes {
            defer { first = false }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if point { fractionDigits += 1 } else { wholeDigits += 1 }
            case UInt8(ascii: "-") where first:
                negative = true
            case UInt8(ascii: ".") where !point:
                point = true
            default:
                throw .invalidAmount(text)
            }
        }
        guard wholeDigits > 0, !point || fractionDigits > 0 else { throw .invalidAmount(text) }
        guard fractionDigits <= currency.minorUnitDigits else { throw .tooManyFractionDigits(text, currency) }
        var units: Int64 = 0
        func append(_ digit: Int64) throws(MoneyError) {
            let (times10, o1) = units.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times10.addingReportingOverflow(digit)
            guard !o1 && !o2 else { throw .overflow }
            units = plus
        }
        for byte in bytes where byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { try append(Int64(byte &- UInt8(ascii: "0"))) }
        for _ in fractionDigits..<currency.minorUnitDigits { try append(0) }
        self.init(minorUnits: negative ? -units : units, currency: currency)
    }

    /// The amount as a decimal string with exactly the currency's fraction digits ("50.00", "-0.05", "500").
    public var decimalString: String {
        let digits = currency.minorUnitDigits
        let magnitude = minorUnits.magnitude
        let sign = minorUnits < 0 ? "-" : ""
        guard digits > 0 else { return sign + String(magnitude) }
        let per = UInt64(currency.minorUnitsPerMajor)
        let fraction = String(magnitude % per)
        return sign + String(magnitude / per) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }

    public var description: String { "\(decimalString) \(currency.code)" }

    public var isNegative: Bool { minorUnits < 0 }
    public var isZero: Bool { minorUnits == 0 }

    public func adding(_ other: Money) throws(MoneyError) -> Money {
        guard other.currency == currency else { throw .currencyMismatch(currency, other.currency) }
        let (sum, overflow) = minorUnits.addingReportingOverflow(other.minorUnits)
        guard !overflow else { throw .overflow }
        return Money(minorUnits: sum, currency: currency)
    }

    public func subtracting(_ other: Money) throws(MoneyError) -> Money {
        guard other.currency == currency else { throw .currencyMismatch(currency, other.currency) }
        let (difference, overflow) = minorUnits.subtractingReportingOverflow(other.minorUnits)
        guard !overflow else { throw .overflow }
        return Money(minorUnits: difference, currency: currency)
    }

    public func multiplied(by quantity: Int64) throws(MoneyError) -> Money {
        let (product, overflow) = minorUnits.multipliedReportingOverflow(by: quantity)
        guard !overflow else { throw .overflow }
        return Money(minorUnits: product, currency: currency)
    }

    /// This amount times `rate`, rounded to a whole minor unit by `rule` (e.g. 8 % tax, half up).
    public func applying(_ rate: Rate, rounding rule: RoundingRule) throws(MoneyError) -> Money {
        let (product, overflow) = minorUnits.multipliedReportingOverflow(by: rate.numerator)
        guard !overflow else { throw .overflow }
        return Money(minorUnits: rule.divide(product, by: rate.denominator), currency: currency)
    }

    /// Compares two amounts of the same currency.
    public func compare(_ other: Money) throws(MoneyError) -> Int {
        guard other.currency == currency else { throw .currencyMismatch(currency, other.currency) }
        return minorUnits < other.minorUnits ? -1 : (minorUnits == other.minorUnits ? 0 : 1)
    }
}

/// A non-negative exact decimal ratio, e.g. a tax rate of 0.08 = 8/100. Parsed from a decimal
/// string so that configuration never passes through binary floating point.
public struct Rate: Hashable, Sendable, Codable, CustomStringConvertible {
    public let numerator: Int64
    public let denominator: Int64

    public init(numerator: Int64, denominator: Int64) {
        precondition(denominator > 0 && numerator >= 0, "a rate is a non-negative ratio")
        self.numerator = numerator
        self.denominator = denominator
    }

    /// Parses `"0.08"`, `"8.25"`, `"0"`; at most 9 fraction digits.
    public init(decimal text: String) throws(MoneyError) {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        guard !whole.isEmpty, whole.count <= 9, fraction.count <= 9,
            (whole + fraction).allSatisfy({ $0.isASCII && $0.isNumber }), parts.count == 1 || !fraction.isEmpty
        else {
            throw .invalidAmount(text)
        }
        var denominator: Int64 = 1
        for _ in 0..<fraction.count { denominator *= 10 }
        self.init(numerator: Int64(whole + fraction)!, denominator: denominator)
    }

    public var description: String { "\(numerator)/\(denominator)" }
}

/// How a quotient is rounded to a whole minor unit. Named at every use; there is no default.
public enum RoundingRule: String, Hashable, Sendable, Codable, CaseIterable {
    /// Halves away from zero (0.5 → 1, -0.5 → -1): the "commercial" rule, the ledger's default for tax.
    case halfUp = "half_up"
    /// Halves to the even neighbour (banker's rounding).
    case halfEven = "half_even"
    /// Toward zero (truncate).
    case down
    /// Away from zero.
    case up

    /// `dividend / divisor` (divisor > 0) rounded by this rule, in exact integer arithmetic.
    public func divide(_ dividend: Int64, by divisor: Int64) -> Int64 {
        precondition(divisor > 0, "divisor must be positive")
        let quotient = dividend / divisor
        let remainder = dividend % divisor
        if remainder == 0 { return quotient }
        let awayFromZero: Int64 = dividend < 0 ? -1 : 1
        let twiceRemainder = remainder.magnitude * 2
        switch self {
        case .down: return quotient
        case .up: return quotient + awayFromZero
        case .halfUp: return twiceRemainder >= divisor.magnitude ? quotient + awayFromZero : quotient
        case .halfEven:
            if twiceRemainder > divisor.magnitude { return quotient + awayFromZero }
            if twiceRemainder < divisor.magnitude { return quotient }
            return quotient % 2 == 0 ? quotient : quotient + awayFromZero
        }
    }
}

/// Why an amount was refused or an operation on money failed.
public enum MoneyError: Error, Hashable, Sendable, CustomStringConvertible {
    case invalidAmount(String)
    case tooManyFractionDigits(String, Currency)
    case currencyMismatch(Currency, Currency)
    case overflow

    public var description: String {
        switch self {
        case .invalidAmount(let text): return "\"\(text)\" is not a decimal amount"
        case .tooManyFractionDigits(let text, let currency):
            return "\"\(text)\" has more than \(currency.minorUnitDigits) fraction digits for \(currency.code)"
        case .currencyMismatch(let a, let b): return "cannot combine \(a.code) with \(b.code)"
        case .overflow: return "amount out of range"
        }
    }
}
