import Foundation
import LedgerAcquirerAPI
import LedgerCore

/// The end-of-day settlement configuration:
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `LEDGERD_SETTLEMENT_TIME_ZONE` | `UTC` | the merchant's IANA time zone, in which the day closes |
/// | `LEDGERD_SETTLEMENT_CUT_OFF` | `22:00` | local cut-off `HH:MM`: captures recorded before it close with that business day |
/// | `LEDGERD_SETTLEMENT_HOLIDAYS` | — | comma-separated `YYYY-MM-DD` bank holidays (weekends are Saturday and Sunday) |
/// | `LEDGERD_SETTLEMENT_FUNDING_LAG_DAYS` | `1` | payout value date = business date + this many business days |
/// | `LEDGERD_SETTLEMENT_AUTO` | `false` | `serve` settles each business day itself once its cut-off has passed |
/// | `LEDGERD_SETTLEMENT_MERCHANT_ACCOUNT` | `OrderLedgerStore` | the merchant account at the acquirer: the batches' and payouts' account |
/// | `LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS` | — | the other accounts, `NAME` or `NAME:CUR[+CUR…]`: a capture in a listed currency settles under that account |
/// | `LEDGERD_SETTLEMENT_PRICING_FILE` | — | JSON list of fee schedules (`PricingSchedule`) the contract sets; default: the demo schedule in USD |
///
/// The ledger's merchant account and fee schedules are the ledger's own settings (reconciliation expects fees from
/// them); the acquirer service the daemon supervises is configured from them too (``SupervisedAcquirerSettings``).
public struct SettlementSettings: Sendable {
    public var cutOff: SettlementCutOff
    public var calendar: BusinessCalendar
    public var fundingLagBusinessDays: Int
    public var runAtCutOff: Bool
    /// Items per page sent to the acquirer (at least 1).
    public var submissionPageSize: Int
    /// Report lines per page read back from the acquirer and per stored report part (at least 1).
    public var reportPartLines: Int
    /// The merchant account at the acquirer: which batches and payouts are this ledger's.
    public var merchantAccount: String
    /// The contract's price lists per settlement currency, for the fees reconciliation expects.
    public var pricing: [PricingSchedule]
    /// Every merchant account the ledger settles under (`LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS`; ``merchantAccount``
    /// always one of them): an uploaded report line naming another is refused, naming it.
    public var merchantAccounts: [String]
    /// Strict reading of uploaded reports (`LEDGERD_SETTLEMENT_REPORT_STRICT`): a record type no mapping knows is
    /// refused (422, naming row, column and value) instead of kept as an `unmapped_record` break.
    public var strictRecordTypes: Bool
    /// The account each listed currency settles under (`NAME:CUR+CUR` in `LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS`): how a
    /// capture gets its merchant account. A currency listed nowhere settles under ``merchantAccount``.
    public var accountByCurrency: [Currency: String]

    /// The merchant account when none is configured.
    public static let defaultMerchantAccount = "OrderLedgerStore"

    public init(
        cutOff: SettlementCutOff = SettlementCutOff(timeZoneIdentifier: "UTC", secondsAfterMidnight: 22 * 3600)!,
        calendar: BusinessCalendar = BusinessCalendar(),
        fundingLagBusinessDays: Int = 1,
        runAtCutOff: Bool = false,
        submissionPageSize: Int = 10_000,
        reportPartLines: Int = 10_000,
        merchantAccount: String = SettlementSettings.defaultMerchantAccount,
        pricing: [PricingSchedule] = [.demo(currency: .usd)],
        merchantAccounts: [String] = [],
        strictRecordTypes: Bool = false,
        accountByCurrency: [Currency: String] = [:]
    ) {
        self.cutOff = cutOff
        self.calendar = calendar
        self.fundingLagBusinessDays = fundingLagBusinessDays
        self.runAtCutOff = runAtCutOff
        self.submissionPageSize = max(1, submissionPageSize)
        self.reportPartLines = max(1, reportPartLines)
        self.merchantAccount = merchantAccount
        self.pricing = pricing
        let mapped = accountByCurrency.values.sorted().filter { !merchantAccounts.contains($0) }
        var known = [merchantAccount]
        for account in merchantAccounts + mapped where !known.contains(account) { known.append(account) }
        self.merchantAccounts = known
        self.strictRecordTypes = strictRecordTypes
        self.accountByCurrency = accountByCurrency
    }

    /// The merchant account a batch in `currency` settles under.
    public func merchantAccount(for currency: Currency) -> String {
        accountByCurrency[currency] ?? merchantAccount
    }

    /// The most recent business day whose cut-off has passed at `now` (what a nightly run settles).
    public func lastClosedBusinessDay(now: Date) -> BusinessDate {
        var day = BusinessDate(daysSinceEpoch: Int64((now.timeIntervalSince1970 / 86_400).rounded(.down)) + 1)
        for _ in 0..<400 {
            if calendar.isBusinessDay(day) && cutOff.instant(closing: day) <= now { return day }
            day = day.adding(days: -1)
        }
        return day
    }

    /// The business day whose batch an item recorded at `instant` settles in: the first business day,
    /// on or after the instant's local date, whose cut-off is after the instant.
    public func businessDay(settling instant: Date) -> BusinessDate {
        var day = cutOff.localDate(of: instant)
        for _ in 0..<400 {
            if calendar.isBusinessDay(day) && cutOff.instant(closing: day) > instant { return day }
            day = day.adding(days: 1)
        }
        return day
    }
}
