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
