import LedgerCore
import LedgerMacros

/// What the ledger's configuration says about its acquirer account, handed to the acquirer service the daemon runs
/// as its child, so that both sides work from one source: the merchant account the batches and payouts are for, the
/// fee schedules reconciliation expects, the calendar and funding lag, and the knobs a demo sets on the test
/// issuer (credit limit, hold lifetimes, dispute rate). The child turns it into its model's configuration
/// (`AcquirerModelConfiguration(supervised:)` in the acquirer service); the ledger never builds that model itself.
@MemberwiseInit
public struct SupervisedAcquirerSettings: Hashable, Sendable, Codable {
    public var merchantAccount: String
    public var pricing: [PricingSchedule]
    public var calendar: BusinessCalendar
    public var fundingLagBusinessDays: Int
    /// Open-to-buy of a test card without an override.
    public var defaultCreditLimit: Money
    /// Hold lifetimes per network that override the network's standard rule, sorted by network.
    public var holdLifetimes: [NetworkHoldLifetime]
    /// Chargebacks per mille of settled Visa/Mastercard captures.
    public var disputeRatePerMille: Int
}

/// An uncaptured hold's lifetime on one card network.
@MemberwiseInit
public struct NetworkHoldLifetime: Hashable, Sendable, Codable {
    public var network: CardNetwork
    public var seconds: Int64
}
