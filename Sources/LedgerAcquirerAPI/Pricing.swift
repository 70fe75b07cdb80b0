import LedgerCore
import LedgerMacros

/// One fee component: a percentage of the gross amount plus a fixed amount, e.g. 1.40 % + 0.00.
///
/// The percentage is an exact ``Rate`` of the *percent* figure divided by 100 — configure
/// `Rate(decimal: "0.014")` for 1.4 %. The product is rounded once, by the schedule's named rule,
/// before the fixed part is added: fees are rounded per component per line.
@MemberwiseInit
public struct FeeComponent: Hashable, Sendable, Codable {
    public var rate: Rate
    /// Minor units of the settlement currency (fixed parts are per currency; see ``PricingSchedule``).
    public var fixedMinorUnits: Int64 = 0

    public static let zero = FeeComponent(rate: Rate(numerator: 0, denominator: 1))

    package func fee(on gross: Money, rounding: RoundingRule) throws(MoneyError) -> Money {
        try gross.applying(rate, rounding: rounding).adding(Money(minorUnits: fixedMinorUnits, currency: gross.currency))
    }
}

/// Interchange and scheme fee for one network × funding type (interchange++ pricing).
@MemberwiseInit
public struct InterchangeRule: Hashable, Sendable, Codable {
    public var network: CardNetwork
    public var fundingType: FundingType
    public var interchange: FeeComponent
    public var schemeFee: FeeComponent
}

/// How the acquirer charges: interchange++ (interchange + scheme fee + acquirer markup, each its own
/// column) or blended (one commission).
public enum PricingModel: Hashable, Sendable, Codable {
    /// `rules` are looked up by network × funding type; `fallback` covers combinations not listed.
    case interchangePlusPlus(rules: [InterchangeRule], fallback: InterchangeRule, markup: FeeComponent)
    /// One commission for every card.
    case blended(commission: FeeComponent)
}

/// The fees of one settlement line, each already rounded. `nil` columns are not part of this pricing model.
@MemberwiseInit
public struct FeeBreakdown: Hashable, Sendable, Codable {
    public var interchange: Money?
    public var schemeFee: Money?
    public var markup: Money?
    public var commission: Money?

    /// Sum of the components present (zero when none is).
    public func total(in currency: Currency) throws(MoneyError) -> Money {
        var sum = Money.zero(currency)
        for part in [interchange, schemeFee, markup, commission] {
            if let part { sum = try sum.adding(part) }
        }
        return sum
    }
}

/// The price list for one settlement currency: model, rounding rule, and whether refunds carry fees.
@MemberwiseInit
public struct PricingSchedule: Hashable, Sendable, Codable {
    public var currency: Currency
    public var model: PricingModel
    /// Rounding of each percentage component; half-up by default (the commercial rule).
    public var rounding: RoundingRule = .halfUp
    /// Whether refunds are charged the same fees as sales (some acquirers keep interchange on refunds).
    /// Off by default: a refund line's net equals its gross.
    public var feesOnRefunds: Bool = false

    /// The fees on `gross` (a positive amount in ``currency``) for a card of `network` × `funding`.
    public func fees(on gross: Money, network: CardNetwork, funding: FundingType) throws(MoneyError) -> FeeBreakdown {
        guard gross.currency == currency else { throw .currencyMismatch(currency, gross.currency) }
        switch model {
        case .blended(let commission):
            return FeeBreakdown(commission: try commission.fee(on: gross, rounding: rounding))
        case .interchangePlusPlus(let rules, let fallback, let markup):
            let rule = rules.first { $0.network == network && $0.fundingType == funding } ?? fallback
            return FeeBreakdown(
                interchange: try rule.interchange.fee(on: gross, rounding: rounding),
                schemeFee: try rule.schemeFee.fee(on: gross, rounding: rounding),
                markup: try markup.fee(on: gross, rounding: rounding)
            )
        }
    }

    /// An interchange++ schedule with plausible (not authoritative) rates, for demos and tests:
    /// consumer credit 1.40 %, debit 0.20 % + 0.05, prepaid 0.90 %, Amex 1.90 %; scheme 0.13 %;
    /// acquirer markup 0.80 %. On 5.00 Visa credit: 0.07 + 0.01 + 0.04 → net 4.88.
    public static func demo(currency: Currency = .usd) -> PricingSchedule {
        func pct(_ text: String) -> Rate { (try? Rate(decimal: text)) ?? Rate(numerator: 0, denominator: 1) }
        let scheme = FeeComponent(rate: pct("0.0013"))
        var rules: [InterchangeRule] = []
        for network in CardNetwork.allCases {
            rules.append(
                InterchangeRule(
                    network: network,
                    fundingType: .credit,
                    interchange: FeeComponent(rate: pct(network == .amex ? "0.019" : "0.014")),
                    schemeFee: scheme
                )
            )
            rules.append(
                InterchangeRule(
                    network: network,
                    fundingType: .debit,
                    interchange: FeeComponent(rate: pct("0.002"), fixedMinorUnits: 5),
                    schemeFee: scheme
                )
            )
            rules.append(
                InterchangeRule(
                    network: network,
                    fundingType: .prepaid,
                    interchange: FeeComponent(rate: pct("0.009")),
                    schemeFee: scheme
                )
            )
        }
        let fallback = InterchangeRule(network: .visa, fundingType: .credit, interchange: FeeComponent(rate: pct("0.014")), schemeFee: scheme)
        return PricingSchedule(
            currency: currency,
            model: .interchangePlusPlus(
                rules: rules,
                fallback: fallback,
                markup: FeeComponent(rate: pct("0.008"))
            )
        )
    }
}
