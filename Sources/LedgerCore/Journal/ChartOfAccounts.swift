/// The journal's chart of accounts (docs/journal.md): what each account holds. The codes follow the
/// usual numbering (1xxx assets, 2xxx liabilities, 4xxx income, 6xxx expenses) so that a merchant can
/// map each one to an account of their own general ledger.
public enum JournalAccount: String, CaseIterable, Sendable, Hashable, Codable {
    /// The merchant's bank account, where payouts arrive.
    case bank = "1000"
    /// Captured card payments not yet in a settlement batch: what the acquirer owes for captures less refunds.
    case cardReceivable = "1100"
    /// Settled batches' gross less their fees, not yet announced as a payout.
    case acquirerClearing = "1200"
    /// Balances a settlement report carried between batches (Adyen `Balancetransfer`): this batch's loss, another's gain.
    case batchTransfers = "1210"
    /// Money the acquirer withholds as a security deposit (Adyen `DepositCorrection`, `ReserveAdjustment`).
    case acquirerReserve = "1250"
    /// A report line's conversion between its gross currency and its net currency: each currency's side balances here.
    case currencyConversion = "1290"
    /// Payouts the acquirer announced, not yet in the bank.
    case payoutsInTransit = "1300"
    /// Sales tax collected with captures, owed to the tax authority.
    case salesTaxPayable = "2100"
    /// Goods sold (the order lines).
    case sales = "4000"
    /// Shipping charged to the customer.
    case shippingIncome = "4100"
    /// Captured beyond the order's total (an incremental authorization's extra).
    case otherIncome = "4200"
    /// Refunds to customers, net of the tax they return (contra-income).
    case refunds = "4900"
    /// Chargebacks: disputed payments the issuers took back, less what came back (contra-income).
    case chargebacks = "4950"
    /// Interchange fees charged by the card issuers.
    case interchangeFees = "6100"
    /// Card scheme (network) fees.
    case schemeFees = "6110"
    /// The acquirer's markup.
    case acquirerMarkup = "6120"
    /// The acquirer's commission.
    case acquirerCommission = "6130"
    /// The acquirer's costs outside a line's fee columns (Adyen `Fee`, `MiscCosts`, `PaymentCost`, `AuthorisationSchemeFee`).
    case acquirerCosts = "6140"
    /// The acquirer's monthly invoices deducted from a batch (Adyen `InvoiceDeduction`).
    case acquirerInvoices = "6150"
    /// The part of a batch's gross − net that its fee lines do not explain (zero when the report adds up).
    case settlementDifferences = "6190"
    /// The rounding of a converted amount: a line's net + fees − its gross at the rate as given.
    case exchangeRounding = "6195"

    /// The account's code, e.g. `1100`.
    public var code: String { rawValue }

    /// The account's name.
    public var name: String {
        switch self {
        case .bank: "Bank"
        case .cardReceivable: "Card receivable"
        case .acquirerClearing: "Acquirer clearing"
        case .payoutsInTransit: "Payouts in transit"
        case .salesTaxPayable: "Sales tax payable"
        case .sales: "Sales"
        case .shippingIncome: "Shipping income"
        case .otherIncome: "Other income"
        case .refunds: "Refunds"
        case .chargebacks: "Chargebacks"
        case .interchangeFees: "Interchange fees"
        case .schemeFees: "Scheme fees"
        case .acquirerMarkup: "Acquirer markup"
        case .acquirerCommission: "Acquirer commission"
        case .settlementDifferences: "Settlement differences"
        case .batchTransfers: "Batch transfers"
        case .acquirerReserve: "Acquirer reserve"
        case .currencyConversion: "Currency conversion"
        case .acquirerCosts: "Acquirer costs"
        case .acquirerInvoices: "Acquirer invoices"
        case .exchangeRounding: "Exchange rounding"
        }
    }
}

/// One side of a journal entry: an account debited or credited an amount (integer minor units, ≥ 0;
/// exactly one of `debit` and `credit` is non-zero).
public struct JournalLine: Sendable, Hashable {
    public var account: JournalAccount
    public var debitMinorUnits: Int64
    public var creditMinorUnits: Int64

    public init(account: JournalAccount, debitMinorUnits: Int64, creditMinorUnits: Int64) {
        self.account = account
        self.debitMinorUnits = debitMinorUnits
        self.creditMinorUnits = creditMinorUnits
    }
}

/// The journal entry of one event that moves money: its lines, in one currency.
public struct JournalEntry: Sendable, Hashable {
    /// The event's position in the log.
    public var position: Int64
    /// The event's type, e.g. `HoldCaptured`.
    public var eventType: String
    /// When the ledger recorded the event (its ledger time), microseconds since the epoch.
    public var recordedAtMicros: Int64
    /// When it took effect (the application's time), microseconds since the epoch.
    public var effectiveAtMicros: Int64
    /// The order id, the settlement batch id or the dispute id the entry belongs to.
    public var reference: String
    public var currency: Currency
    public var lines: [JournalLine]

    public init(
        position: Int64,
        eventType: String,
        recordedAtMicros: Int64,
        effectiveAtMicros: Int64,
        reference: String,
        currency: Currency,
        lines: [JournalLine]
    ) {
        self.position = position
        self.eventType = eventType
        self.recordedAtMicros = recordedAtMicros
        self.effectiveAtMicros = effectiveAtMicros
        self.reference = reference
        self.currency = currency
        self.lines = lines
    }

    public var totalDebitMinorUnits: Int64 { lines.reduce(0) { $0 + $1.debitMinorUnits } }
    public var totalCreditMinorUnits: Int64 { lines.reduce(0) { $0 + $1.creditMinorUnits } }
    /// Σ debits = Σ credits.
    public var isBalanced: Bool { totalDebitMinorUnits == totalCreditMinorUnits }
}
