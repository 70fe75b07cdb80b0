import LedgerAcquirer
import LedgerCore
import Testing

@Suite struct MoneyTests {
    @Test(
        arguments: [
            ("50.00", 5000), ("0.50", 50), ("0.5", 50), ("12", 1200), ("-3.10", -310), ("0", 0), ("92233720368547758.07", Int64.max),
        ] as [(String, Int64)]
    )
    func parsesDecimalStrings(text: String, minor: Int64) throws {
        #expect(try Money(decimal: text, currency: .usd).minorUnits == minor)
    }

    @Test(arguments: ["", "-", ".5", "5.", "1.234", "1e3", "+1", "1,000", " 1", "1.2.3", "٣", "92233720368547758.08", "--1"])
    func refusesAnythingElse(text: String) {
        #expect(throws: MoneyError.self) { try Money(decimal: text, currency: .usd) }
    }

    /// The byte parser (`Money(decimal:currency:)`) answers every text as the `Character` parser it replaced: the same
    /// amount, or the same refusal. 300,000 texts from one seed, of digits, points, signs, exponents, separators, spaces, a
    /// non-ASCII digit and a combining mark, up to 24 characters, in currencies of 0, 2 and 3 fraction digits.
    @Test func theByteParserAnswersAsTheCharacterParser() throws {
        let alphabet: [String] = ["0", "1", "5", "9", "0", "7", ".", ".", "-", "-", "+", "e", ",", " ", "٣", "\u{0301}", "x"]
        var generator = SeededRandom(seed: 57)  // SplitMix64, the acquirer model's own
        var outcomes: [String: Int] = [:]
        for round in 0..<300_000 {
            let currency = [Currency.usd, .jpy, Currency(code: "BHD")!][round % 3]
            var text = ""
            // Mostly amount-like texts (digits with one point), some of any shape, some near Int64's limit.
            switch generator.next() % 4 {
            case 0:
                for _ in 0..<Int(generator.next() % 25) { text += alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            case 1:
                text = (generator.next() % 2 == 0 ? "-" : "") + String(generator.next() % 10_000_000_000_000_000_000)
                if generator.next() % 2 == 0 { text += "." + String(generator.next() % 10_000) }
            default:
                text = String(generator.next() % 100_000) + "." + String(generator.next() % 1_000)
            }
            let byBytes = Result { () throws(MoneyError) -> Money in try Money(decimal: text, currency: currency) }
            let byCharacters = Result { () throws(MoneyError) -> Money in try Self.characterParse(text, currency: currency) }
            #expect(byBytes == byCharacters, "\(text) in \(currency.code)")
            switch byBytes {
            case .success: outcomes["amount", default: 0] += 1
            case .failure(.invalidAmount): outcomes["not an amount", default: 0] += 1
            case .failure(.tooManyFractionDigits): outcomes["too many fraction digits", default: 0] += 1
            case .failure(.overflow): outcomes["out of range", default: 0] += 1
            case .failure(.currencyMismatch): outcomes["currency mismatch", default: 0] += 1
            }
        }
        // Every answer was met often: a generator that made only refusals (or only amounts) would compare little.
        for kind in ["amount", "not an amount", "too many fraction digits", "out of range"] {
            #expect(outcomes[kind, default: 0] >= 1_000, "\(kind): \(outcomes)")
        }
    }

    /// The parser before issue 57's session 10, over `Character`s: the reference for the test above.
    static func characterParse(_ text: String, currency: Currency) throws(MoneyError) -> Money {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        guard !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }),
            fraction.allSatisfy({ $0.isASCII && $0.isNumber }), parts.count == 1 || !fraction.isEmpty
        else {
            throw .invalidAmount(text)
        }
        guard fraction.count <= currency.minorUnitDigits else { throw .tooManyFractionDigits(text, currency) }
        var units: Int64 = 0
        for character in whole + fraction + String(repeating: "0", count: currency.minorUnitDigits - fraction.count) {
            let digit = Int64(character.wholeNumberValue!)
            let (times10, o1) = units.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times10.addingReportingOverflow(digit)
            guard !o1 && !o2 else { throw .overflow }
            units = plus
        }
        return Money(minorUnits: negative ? -units : units, currency: currency)
    }

    @Test func respectsTheCurrencyMinorUnit() throws {
        #expect(try Money(decimal: "500", currency: .jpy).minorUnits == 500)
        #expect(throws: MoneyError.tooManyFractionDigits("5.0", .jpy)) { try Money(decimal: "5.0", currency: .jpy) }
        #expect(try Money(decimal: "1.234", currency: Currency(code: "KWD")!).minorUnits == 1234)
    }

    @Test func formatsWithExactlyTheMinorUnitDigits() {
        #expect(Money(minorUnits: 5000, currency: .usd).decimalString == "50.00")
        #expect(Money(minorUnits: 5, currency: .usd).decimalString == "0.05")
        #expect(Money(minorUnits: -5, currency: .usd).decimalString == "-0.05")
        #expect(Money(minorUnits: 500, currency: .jpy).decimalString == "500")
        #expect(Money(minorUnits: Int64.min, currency: .usd).decimalString == "-92233720368547758.08")
    }

    @Test func arithmeticIsCheckedForCurrencyAndOverflow() throws {
        let a = Money(minorUnits: 100, currency: .usd)
        #expect(try a.adding(a).minorUnits == 200)
        #expect(throws: MoneyError.currencyMismatch(.usd, .eur)) { try a.adding(Money(minorUnits: 1, currency: .eur)) }
        #expect(throws: MoneyError.overflow) { try Money(minorUnits: .max, currency: .usd).adding(a) }
        #expect(throws: MoneyError.overflow) { try Money(minorUnits: .max / 2 + 1, currency: .usd).multiplied(by: 2) }
    }

    @Test func taxAtEightPercentRoundsHalfUp() throws {
        let rate = try Rate(decimal: "0.08")
        // 0.50 × 0.08 = 0.04 exactly; 0.06 × 0.08 = 0.0048 → 0.00; 0.07 × 0.08 = 0.0056 → 0.01
        #expect(try Money(minorUnits: 50, currency: .usd).applying(rate, rounding: .halfUp).minorUnits == 4)
        #expect(try Money(minorUnits: 6, currency: .usd).applying(rate, rounding: .halfUp).minorUnits == 0)
        #expect(try Money(minorUnits: 7, currency: .usd).applying(rate, rounding: .halfUp).minorUnits == 1)
        // 0.25 × 0.02 = 0.005: the tie goes up under half-up, to even (0) under half-even.
        let two = try Rate(decimal: "0.02")
        #expect(try Money(minorUnits: 25, currency: .usd).applying(two, rounding: .halfUp).minorUnits == 1)
        #expect(try Money(minorUnits: 25, currency: .usd).applying(two, rounding: .halfEven).minorUnits == 0)
    }

    @Test func roundingRulesAgreeWithExactArithmetic() {
        // Exhaustive over a small grid: compare against rounding done on the exact rational.
        for dividend in Int64(-300)...300 {
            for divisor in Int64(1)...12 {
                let q = dividend / divisor
                let r = dividend % divisor
                let sign: Int64 = dividend < 0 ? -1 : 1
                #expect(RoundingRule.down.divide(dividend, by: divisor) == q)
                #expect(RoundingRule.up.divide(dividend, by: divisor) == (r == 0 ? q : q + sign))
                let twice = 2 * abs(r)
                let halfUp = r == 0 ? q : (twice >= divisor ? q + sign : q)
                #expect(RoundingRule.halfUp.divide(dividend, by: divisor) == halfUp)
                let halfEven = r == 0 ? q : (twice > divisor ? q + sign : (twice < divisor ? q : (q % 2 == 0 ? q : q + sign)))
                #expect(RoundingRule.halfEven.divide(dividend, by: divisor) == halfEven)
            }
        }
    }

    @Test func currenciesByCodeAndNumber() {
        #expect(Currency(code: "usd") == .usd)
        #expect(Currency(numericCode: "840") == .usd)
        #expect(Currency(code: "XXX") == nil)
        #expect(Currency.jpy.minorUnitsPerMajor == 1)
    }
}
