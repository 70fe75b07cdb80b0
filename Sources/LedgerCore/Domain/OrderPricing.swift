import LedgerMacros

// Pricing of an order: Σ(price × quantity) + shipping + tax, in exact integer minor units.
//
// Tax is levied on the goods only, not on shipping, by default: that is what the storefront app
// computes (total = price + shipping + price × 0.08), and the server must arrive at the same number
// or every payment would be refused as a mismatch. ``TaxPolicy/appliesToShipping`` exists for
// merchants whose jurisdiction taxes shipping; the app would have to change with it.
//
// Tax is rounded once per order (on the subtotal), not per line: per-line rounding can differ from the
// app's single multiplication by a cent on multi-line orders, and the rule must be the same on both sides.

/// How tax is computed: a rate, the named rounding rule that brings it to a whole minor unit, and
/// whether shipping is taxed. Configuration, not code; ``storefront`` is the app's rule.
@MemberwiseInit
public struct TaxPolicy: Hashable, Sendable, Codable {
    @DecimalRate public var rate: Rate
    public var rounding: RoundingRule
    public var appliesToShipping: Bool = false

    /// 8 % of the goods, rounded half-up to the minor unit, shipping untaxed.
    public static let storefront = TaxPolicy(rate: Rate(numerator: 8, denominator: 100), rounding: .halfUp)

    enum CodingKeys: String, CodingKey {
        case rate, rounding
        case appliesToShipping = "applies_to_shipping"
    }
}

/// One priced line of an order, frozen at the moment the order is opened (later price changes do not touch it).
@MemberwiseInit
public struct OrderLine: Hashable, Sendable, Codable {
    public var productID: ProductID
    public var name: String
    @DecimalMoney public var unitPrice: Money
    public var quantity: Int64
    /// unitPrice × quantity, exact.
    @DecimalMoney public var lineTotal: Money

    enum CodingKeys: String, CodingKey {
        case productID = "product_id"
        case name
        case unitPrice = "unit_price"
        case quantity
        case lineTotal = "line_total"
    }
}

/// The money breakdown of an order, with the tax rule that produced it, so that an auditor can
/// recompute the total from the event alone.
@MemberwiseInit
public struct OrderAmounts: Hashable, Sendable, Codable {
    /// Σ line totals.
    @DecimalMoney public var subtotal: Money
    @DecimalMoney public var shipping: Money
    @DecimalMoney public var tax: Money
    /// subtotal + shipping + tax: the amount to authorize.
    @DecimalMoney public var total: Money
    public var taxPolicy: TaxPolicy

    public var currency: Currency { total.currency }

    enum CodingKeys: String, CodingKey {
        case subtotal, shipping, tax, total
        case taxPolicy = "tax_policy"
    }
}

/// A line to price: the product's current catalog facts and the quantity wanted.
@MemberwiseInit
public struct PricingLine: Hashable, Sendable {
    public var productID: ProductID
    public var name: String
    public var unitPrice: Money
    public var quantity: Int64
}

/// Why an order could not be priced.
public enum PricingError: Error, Hashable, Sendable, CustomStringConvertible {
    case noLines
    case nonPositiveQuantity(ProductID, Int64)
    case negativePrice(Money)
    /// Lines or shipping in different currencies.
    case currencyMismatch(expected: Currency, found: Currency)
    /// A product, sum or tax beyond Int64 minor units: refused, never wrapped or trapped.
    case overflow

    public var description: String {
        switch self {
        case .noLines: return "an order needs at least one line"
        case .nonPositiveQuantity(let id, let q): return "quantity \(q) of \(id) must be positive"
        case .negativePrice(let m): return "price \(m) is negative"
        case .currencyMismatch(let expected, let found): return "currency \(found) where \(expected) was expected"
        case .overflow: return "amount out of range"
        }
    }
}

/// The priced order: frozen lines and the amounts.
public struct PricedOrder: Hashable, Sendable {
    public var lines: [OrderLine]
    public var amounts: OrderAmounts
}

/// The result of comparing the amount the app claims with the amount the server computed.
public enum AmountCheck: Hashable, Sendable {
    case match(expected: OrderAmounts)
    /// Same currency, different number of minor units.
    case amountMismatch(claimedMinorUnits: Int64, expected: OrderAmounts)
    /// A currency the ledger knows, but not the order's.
    case currencyMismatch(claimed: Currency, expected: OrderAmounts)
    /// A code the ledger does not accept at all (``Currency/known``).
    case unsupportedCurrency(code: String, expected: OrderAmounts)

    public var isMatch: Bool { if case .match = self { return true } else { return false } }
}

/// The pricing functions. Pure; all arithmetic is checked Int64 minor units.
public enum OrderPricing {
    /// Prices `lines` plus `shipping` under `policy`. The currency is the first line's; every other
    /// amount must share it.
    public static func price(lines: [PricingLine], shipping: Money, policy: TaxPolicy) -> Result<PricedOrder, PricingError> {
        guard let first = lines.first else { return .failure(.noLines) }
        let currency = first.unitPrice.currency
        var priced: [OrderLine] = []
        priced.reserveCapacity(lines.count)
        var subtotal = Money.zero(currency)
        do throws(PricingError) {
            for line in lines {
                guard line.unitPrice.currency == currency else {
                    throw .currencyMismatch(expected: currency, found: line.unitPrice.currency)
                }
                guard line.quantity > 0 else { throw .nonPositiveQuantity(line.productID, line.quantity) }
                guard !line.unitPrice.isNegative else { throw .negativePrice(line.unitPrice) }
                let lineTotal = try checked { () throws(MoneyError) in try line.unitPrice.multiplied(by: line.quantity) }
                subtotal = try checked { () throws(MoneyError) in try subtotal.adding(lineTotal) }
                priced.append(
                    OrderLine(
                        productID: line.productID,
                        name: line.name,
                        unitPrice: line.unitPrice,
                        quantity: line.quantity,
                        lineTotal: lineTotal
                    )
                )
            }
            guard shipping.currency == currency else { throw .currencyMismatch(expected: currency, found: shipping.currency) }
            guard !shipping.isNegative else { throw .negativePrice(shipping) }
            let taxBase =
                policy.appliesToShipping
                ? try checked { () throws(MoneyError) in try subtotal.adding(shipping) }
                : subtotal
            let tax = try checked { () throws(MoneyError) in try taxBase.applying(policy.rate, rounding: policy.rounding) }
            let total = try checked { () throws(MoneyError) in try subtotal.adding(shipping).adding(tax) }
            return .success(
                PricedOrder(
                    lines: priced,
                    amounts: OrderAmounts(subtotal: subtotal, shipping: shipping, tax: tax, total: total, taxPolicy: policy)
                )
            )
        } catch {
            return .failure(error)
        }
    }

    /// Compares the app's claimed amount (`amount` in minor units and `currency` of `POST /payment`)
    /// with the computed breakdown. The currency code is matched case-insensitively, as ISO 4217 codes are.
    public static func check(claimedMinorUnits: Int64, currencyCode: String, against expected: OrderAmounts) -> AmountCheck {
        guard let claimed = Currency(code: currencyCode) else {
            return .unsupportedCurrency(code: currencyCode, expected: expected)
        }
        guard claimed == expected.currency else { return .currencyMismatch(claimed: claimed, expected: expected) }
        guard claimedMinorUnits == expected.total.minorUnits else {
            return .amountMismatch(claimedMinorUnits: claimedMinorUnits, expected: expected)
        }
        return .match(expected: expected)
    }

    private static func checked<T>(_ body: () throws(MoneyError) -> T) throws(PricingError) -> T {
        do { return try body() } catch {
            switch error {
            case .currencyMismatch(let a, let b): throw .currencyMismatch(expected: a, found: b)
            case .overflow, .invalidAmount, .tooManyFractionDigits: throw .overflow
            }
        }
    }
}
