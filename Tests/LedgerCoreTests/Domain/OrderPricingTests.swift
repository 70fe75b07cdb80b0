import Foundation
import LedgerCoreTestSupport
import Testing

@testable import LedgerCore

struct OrderPricingTests {
    func line(_ id: String, _ price: Money, _ quantity: Int64 = 1) -> PricingLine {
        PricingLine(productID: pid(id), name: id, unitPrice: price, quantity: quantity)
    }

    @Test func workedExampleClockWithStandardShipping() throws {
        let priced = try OrderPricing.price(lines: [line("clock", usd("50.00"))], shipping: usd("5.00"), policy: .storefront).get()
        #expect(priced.amounts.subtotal == usd("50.00"))
        #expect(priced.amounts.shipping == usd("5.00"))
        #expect(priced.amounts.tax == usd("4.00"))
        #expect(priced.amounts.total == usd("59.00"))
        #expect(priced.amounts.total.minorUnits == 5900)
        #expect(priced.lines == [OrderLine(productID: pid("clock"), name: "clock", unitPrice: usd("50.00"), quantity: 1, lineTotal: usd("50.00"))])
        #expect(OrderPricing.check(claimedMinorUnits: 5900, currencyCode: "USD", against: priced.amounts) == .match(expected: priced.amounts))
    }

    @Test func storefrontPolicyIsEightPercentHalfUpWithoutShipping() {
        #expect(TaxPolicy.storefront.rate == Rate(numerator: 8, denominator: 100))
        #expect(TaxPolicy.storefront.rounding == .halfUp)
        #expect(TaxPolicy.storefront.appliesToShipping == false)
    }

    @Test func shippingIsTaxedOnlyWhenThePolicySaysSo() throws {
        let taxed = TaxPolicy(rate: Rate(numerator: 8, denominator: 100), rounding: .halfUp, appliesToShipping: true)
        let amounts = try OrderPricing.price(lines: [line("clock", usd("50.00"))], shipping: usd("5.00"), policy: taxed).get().amounts
        #expect(amounts.tax == usd("4.40") && amounts.total == usd("59.40"))
    }

    @Test func quantityMultipliesThePrice() throws {
        let amounts = try OrderPricing.price(lines: [line("pen", usd("25.00"), 3)], shipping: usd("15.00"), policy: .storefront).get().amounts
        #expect(amounts.subtotal == usd("75.00") && amounts.tax == usd("6.00") && amounts.total == usd("96.00"))
    }

    @Test func taxRoundsHalfUpAtHalfACent() throws {
        // 10 % of 0.05 is exactly half a cent.
        let tenPercent = TaxPolicy(rate: try Rate(decimal: "0.1"), rounding: .halfUp)
        let half = try OrderPricing.price(lines: [line("x", usd("0.05"))], shipping: usd("0.00"), policy: tenPercent).get().amounts
        #expect(half.tax == usd("0.01") && half.total == usd("0.06"))
        let halfEven = TaxPolicy(rate: try Rate(decimal: "0.1"), rounding: .halfEven)
        #expect(try OrderPricing.price(lines: [line("x", usd("0.05"))], shipping: usd("0.00"), policy: halfEven).get().amounts.tax == usd("0.00"))
        // Just below half: 10 % of 0.04 = 0.004 → 0.00.
        #expect(try OrderPricing.price(lines: [line("x", usd("0.04"))], shipping: usd("0.00"), policy: tenPercent).get().amounts.tax == usd("0.00"))
        // 8 % of 0.07 = 0.0056 → 0.01; of 0.06 = 0.0048 → 0.00.
        #expect(try OrderPricing.price(lines: [line("x", usd("0.07"))], shipping: usd("0.00"), policy: .storefront).get().amounts.tax == usd("0.01"))
        #expect(try OrderPricing.price(lines: [line("x", usd("0.06"))], shipping: usd("0.00"), policy: .storefront).get().amounts.tax == usd("0.00"))
        // Pencil: 8 % of 0.50 = 0.04 exactly.
        #expect(
            try OrderPricing.price(lines: [line("pencil", usd("0.50"))], shipping: usd("0.00"), policy: .storefront).get().amounts.total
                == usd("0.54")
        )
    }

    @Test func taxIsRoundedOncePerOrderNotPerLine() throws {
        // Per line: 0.0056 → 0.01 twice = 0.02. Per order: 0.0112 → 0.01.
        let amounts = try OrderPricing.price(lines: [line("a", usd("0.07")), line("b", usd("0.07"))], shipping: usd("0.00"), policy: .storefront)
            .get().amounts
        #expect(amounts.tax == usd("0.01"))
        #expect(amounts.total == usd("0.15"))
    }

    @Test func zeroDigitCurrencyRoundsToWholeUnits() throws {
        let yen = Money(minorUnits: 1_250, currency: .jpy)
        let amounts = try OrderPricing.price(lines: [line("x", yen)], shipping: .zero(.jpy), policy: .storefront).get().amounts
        #expect(amounts.tax == Money(minorUnits: 100, currency: .jpy))  // 100.0 exactly
        let odd = Money(minorUnits: 1_256, currency: .jpy)  // 100.48 → 100
        #expect(try OrderPricing.price(lines: [line("x", odd)], shipping: .zero(.jpy), policy: .storefront).get().amounts.tax.minorUnits == 100)
    }

    @Test func overflowIsRefusedNotTrapped() {
        #expect(OrderPricing.price(lines: [line("x", usd("50.00"), .max)], shipping: usd("5.00"), policy: .storefront).failure == .overflow)
        let huge = Money(minorUnits: .max / 2 + 1, currency: .usd)
        #expect(OrderPricing.price(lines: [line("a", huge), line("b", huge)], shipping: usd("0.00"), policy: .storefront).failure == .overflow)
        // Fits as a subtotal, but the tax multiplication (× 8) does not.
        let big = Money(minorUnits: .max / 4, currency: .usd)
        #expect(OrderPricing.price(lines: [line("a", big)], shipping: usd("0.00"), policy: .storefront).failure == .overflow)
        // Fits through tax, overflows adding shipping.
        let edge = Money(minorUnits: .max - 10, currency: .usd)
        #expect(
            OrderPricing.price(
                lines: [line("a", edge)],
                shipping: usd("5.00"),
                policy: TaxPolicy(rate: Rate(numerator: 0, denominator: 1), rounding: .halfUp)
            ).failure == .overflow
        )
    }

    @Test func invalidInputs() {
        #expect(OrderPricing.price(lines: [], shipping: usd("5.00"), policy: .storefront).failure == .noLines)
        #expect(
            OrderPricing.price(lines: [line("x", usd("1.00"), 0)], shipping: usd("5.00"), policy: .storefront).failure
                == .nonPositiveQuantity(pid("x"), 0)
        )
        #expect(
            OrderPricing.price(lines: [line("x", usd("1.00"), -2)], shipping: usd("5.00"), policy: .storefront).failure
                == .nonPositiveQuantity(pid("x"), -2)
        )
        #expect(
            OrderPricing.price(lines: [line("x", usd("-1.00"))], shipping: usd("5.00"), policy: .storefront).failure == .negativePrice(usd("-1.00"))
        )
        #expect(
            OrderPricing.price(lines: [line("x", usd("1.00"))], shipping: usd("-5.00"), policy: .storefront).failure == .negativePrice(usd("-5.00"))
        )
        #expect(
            OrderPricing.price(lines: [line("x", usd("1.00")), line("y", eur("1.00"))], shipping: usd("5.00"), policy: .storefront).failure
                == .currencyMismatch(expected: .usd, found: .eur)
        )
        #expect(
            OrderPricing.price(lines: [line("x", usd("1.00"))], shipping: eur("5.00"), policy: .storefront).failure
                == .currencyMismatch(expected: .usd, found: .eur)
        )
    }

    @Test func claimedAmountChecks() throws {
        let amounts = try OrderPricing.price(lines: [line("clock", usd("50.00"))], shipping: usd("5.00"), policy: .storefront).get().amounts
        #expect(
            OrderPricing.check(claimedMinorUnits: 5500, currencyCode: "USD", against: amounts)
                == .amountMismatch(claimedMinorUnits: 5500, expected: amounts)
        )
        #expect(
            OrderPricing.check(claimedMinorUnits: 5901, currencyCode: "USD", against: amounts)
                == .amountMismatch(claimedMinorUnits: 5901, expected: amounts)
        )
        #expect(OrderPricing.check(claimedMinorUnits: -5900, currencyCode: "USD", against: amounts).isMatch == false)
        #expect(
            OrderPricing.check(claimedMinorUnits: 5900, currencyCode: "EUR", against: amounts) == .currencyMismatch(claimed: .eur, expected: amounts)
        )
        #expect(
            OrderPricing.check(claimedMinorUnits: 5900, currencyCode: "XXX", against: amounts) == .unsupportedCurrency(code: "XXX", expected: amounts)
        )
        #expect(OrderPricing.check(claimedMinorUnits: 5900, currencyCode: "", against: amounts) == .unsupportedCurrency(code: "", expected: amounts))
        #expect(OrderPricing.check(claimedMinorUnits: 5900, currencyCode: "usd", against: amounts).isMatch)
    }
}
