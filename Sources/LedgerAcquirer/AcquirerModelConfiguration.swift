import LedgerAcquirerAPI
import LedgerCore
import LedgerMacros

import struct Foundation.Date

/// How long an uncaptured hold lives, per network, initiator and authorization type.
/// The first rule that matches wins; a `nil` field matches anything.
@MemberwiseInit
public struct HoldLifetimeRule: Hashable, Sendable, Codable {
    public var network: CardNetwork?
    public var initiator: TransactionInitiator?
    public var authorizationType: AuthorizationType?
    public var lifetimeSeconds: Int64

    func matches(_ network: CardNetwork?, _ initiator: TransactionInitiator, _ type: AuthorizationType) -> Bool {
        (self.network == nil || self.network == network) && (self.initiator == nil || self.initiator == initiator)
            && (self.authorizationType == nil || self.authorizationType == type)
    }

    static let day: Int64 = 86_400

    /// Card-not-present lifetimes as networks publish them (approximately; providers differ):
    /// Visa customer-initiated 7 days, merchant-initiated 4 days 18 hours; Mastercard final 7 days,
    /// pre-authorization 30 days; Discover 10 days; others 7 days.
    public static let standard: [HoldLifetimeRule] = [
        HoldLifetimeRule(network: .visa, initiator: .merchant, lifetimeSeconds: 4 * day + 18 * 3600),
        HoldLifetimeRule(network: .visa, lifetimeSeconds: 7 * day),
        HoldLifetimeRule(network: .mastercard, authorizationType: .preAuthorization, lifetimeSeconds: 30 * day),
        HoldLifetimeRule(network: .mastercard, lifetimeSeconds: 7 * day),
        HoldLifetimeRule(network: .discover, lifetimeSeconds: 10 * day),
        HoldLifetimeRule(lifetimeSeconds: 7 * day),
    ]
}

/// What the model answers for a 91/96 card: whether the issuer actually placed the hold.
public enum UnknownOutcomeBehaviour: String, Hashable, Sendable, Codable {
    /// Nothing was placed: a query by reference says "not found" (the default).
    case notPlaced
    /// The hold was placed but the answer was lost on the way back: the caller sees 91/96, a query
    /// finds the approved payment, and a retry with the same reference returns the approval.
    case placedButAnswerLost
}

/// Everything that shapes the model's behaviour besides the seed and the commands.
/// Documented field by field because the daemon reads it from its configuration file.
@MemberwiseInit
public struct AcquirerModelConfiguration: Hashable, Sendable, Codable {
    /// The "Company Account" column.
    public var companyAccount: String = "OrderLedgerCompany"
    /// The "Merchant Account" column and the payout's merchant.
    public var merchantAccount: String = "OrderLedgerStore"
    /// The test cards the issuer side knows (tokens not listed answer 14).
    public var testCards: [TestCard] = TestCard.standard
    /// Open-to-buy of a card without an override; the card account's currency is this one's.
    /// Authorizations in another currency are declined with 57 (the model does no FX).
    public var defaultCreditLimit: Money = Money(minorUnits: 1_000_000, currency: .usd)
    /// Per-token credit limits (token → limit), looked up in order.
    public var creditLimits: [CreditLimit] = []
    /// Hold lifetimes; first match wins. A hold expires at authorization time + lifetime.
    public var holdLifetimes: [HoldLifetimeRule] = HoldLifetimeRule.standard
    /// What a 91/96 card means for the hold.
    public var unknownOutcome: UnknownOutcomeBehaviour = .notPlaced
    /// Price lists per settlement currency; a batch in a currency without one is refused.
    public var pricing: [PricingSchedule] = [.demo(currency: .usd)]
    /// Daily batch cut-off (also the time zone of report dates).
    public var cutOff: CutOff = CutOff()
    /// Weekends and holidays.
    public var calendar: BusinessCalendar = BusinessCalendar()
    /// Payout value date = batch business date + this many business days (T+1 by default).
    public var fundingLagBusinessDays: Int = 1
    /// Seeded misbehaviours; all off by default.
    public var faults: FaultConfiguration = .none
    /// Cardholders' disputes: per settled capture, a chargeback fires for the captures whose
    /// modification reference is a target and otherwise with the probability (`ledgerd acquirer serve
    /// --dispute-rate`, per mille), on Visa and Mastercard payments only; off by default. Test cards
    /// with a ``TestCard/dispute`` always draw theirs. A payment draws at most one dispute.
    public var disputes: FaultKnob = .off

    /// At least one second: a hold must outlive the instant it is placed (an immediate capture happens then).
    func holdLifetime(network: CardNetwork?, initiator: TransactionInitiator, type: AuthorizationType) -> Int64 {
        max(1, holdLifetimes.first { $0.matches(network, initiator, type) }?.lifetimeSeconds ?? 7 * HoldLifetimeRule.day)
    }

    /// The dispute a test card always draws, by the hold's account key.
    func alwaysDisputes(accountKey: String) -> DisputeReason? {
        testCards.first { "token:" + $0.token == accountKey }?.dispute
    }

    func creditLimit(forAccount key: String) -> Money {
        creditLimits.first { "token:" + $0.token == key }?.limit ?? defaultCreditLimit
    }
}

/// A per-card credit limit override (the issuer-side open-to-buy of a test card).
@MemberwiseInit
public struct CreditLimit: Hashable, Sendable, Codable {
    public var token: String
    public var limit: Money
}

extension SettlementReportCSV {
    /// A reader/writer for the reports of a model with `configuration` (UTC plus its cut-off zone).
    public init(for configuration: AcquirerModelConfiguration) {
        self.init(timeZones: [.utc, configuration.cutOff.timeZone])
    }
}
