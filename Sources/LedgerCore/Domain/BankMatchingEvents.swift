import LedgerMacros

// Payouts matched to the bank's deposits (issue 53): every payout the acquirer announced (`SettlementPayoutScheduled`)
// is expected as a credit on the bank statement within its funding window; the matching's outcomes are events of one
// stream, `bank_matching-payouts`, so that every pass reads one stream and appends after its version (two imports at
// once: one appends, the other reads again). A match books the deposit (1000 bank ← 1300 payouts in transit); a
// break names its class and what it saw, and is resolved by a later file (automatically, naming the file) or by a
// clerk's note. docs/bank-statements.md has the rules and examples.

/// An announced payout as the matching names it: its batch, the acquirer's payout reference, its merchant account and
/// the amount announced.
@MemberwiseInit
public struct BankPayoutRef: Hashable, Sendable, Codable {
    public var batchID: String
    public var payoutReference: String
    public var merchantAccount: String
    @DecimalMoney public var amount: Money

    enum CodingKeys: String, CodingKey {
        case batchID = "batch_id"
        case payoutReference = "payout_reference"
        case merchantAccount = "merchant_account"
        case amount
    }
}

/// A credit of a bank statement as the matching names it: where it is (its statement's stream and its entry), what it
/// says (amount, value date, references) and its position in the log (where the next pass starts reading).
@MemberwiseInit
public struct BankDepositRef: Hashable, Sendable, Codable {
    /// The statement's stream (`bank_statement-…`) and the entry's 1-based place in it.
    public var stream: String
    public var account: String
    public var statementID: String
    public var entry: Int
    @DecimalMoney public var amount: Money
    public var valueDate: BusinessDate?
    public var bankReference: String?
    public var ownerReference: String?
    public var endToEndIDs: [String]
    public var remittanceInformation: String
    /// The log position of its `BankEntryBooked`.
    public var position: Int64

    enum CodingKeys: String, CodingKey {
        case stream, account
        case statementID = "statement_id"
        case entry, amount
        case valueDate = "value_date"
        case bankReference = "bank_reference"
        case ownerReference = "owner_reference"
        case endToEndIDs = "end_to_end_ids"
        case remittanceInformation = "remittance_information"
        case position
    }

    /// The deposit's identity: its statement's stream and its entry.
    public var key: String { "\(stream)#\(entry)" }
}

/// How a payout and the bank's deposits failed to agree.
public enum BankBreakClass: String, Hashable, Sendable, Codable, CaseIterable {
    /// The payout's funding window has passed (by the business calendar) and no deposit paid it.
    case payoutNotReceived = "payout_not_received"
    /// Deposits arrived for the payout (by its reference) but their sum is not the amount announced.
    case amountDiffers = "amount_differs"
    /// A credit that no announced payout explains.
    case unexpectedCredit = "unexpected_credit"
    /// A credit seen before (the same deposit in another statement, or a payout already paid in full paid again).
    case depositSeenTwice = "deposit_seen_twice"
}

/// Deposits were matched to payouts: the deposits' sum is booked (1000 bank ← 1300 payouts in transit).
@MemberwiseInit
public struct BankPayoutMatched: LedgerEventPayload {
    public static let eventType = "BankPayoutMatched"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.bankPayoutMatched

    public var matchID: String
    /// `reference` (the payout's or batch's reference in the deposit), `amount` (amount, currency and value date in
    /// the window), `amount_group` (several payouts of one day paid in one deposit).
    public var rule: String
    public var payouts: [BankPayoutRef]
    public var deposits: [BankDepositRef]
    /// The deposits' sum: what this match books.
    @DecimalMoney public var amount: Money
    /// What the payouts still lack after this match (announced − received, all deposits so far); zero: paid in full.
    @DecimalMoney public var outstanding: Money
    /// The SHA-256 of the statement file whose import ran the matching ("" when none did).
    public var file: String

    enum CodingKeys: String, CodingKey {
        case matchID = "match_id"
        case rule, payouts, deposits, amount, outstanding, file
    }
}

/// A bank break: what was expected, what arrived, and why they disagree.
@MemberwiseInit
public struct BankBreakFound: LedgerEventPayload {
    public static let eventType = "BankBreakFound"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.bankBreakFound

    public var breakID: String
    public var breakClass: BankBreakClass
    public var payouts: [BankPayoutRef]
    public var deposits: [BankDepositRef]
    /// The payouts' announced sum, the deposits' sum, and actual − expected (negative: short).
    @DecimalMoney public var expected: Money
    @DecimalMoney public var actual: Money
    @DecimalMoney public var difference: Money
    public var detail: String
    public var file: String

    enum CodingKeys: String, CodingKey {
        case breakID = "break_id"
        case breakClass = "break_class"
        case payouts, deposits, expected, actual, difference, detail, file
    }
}

/// A bank break was resolved: by a later file that explains it (`file` names it, `resolvedBy` is the matching) or by a
/// clerk's note (`resolvedBy` the clerk, `file` empty). The shape of ``ReconciliationBreakResolved``, plus the file.
@MemberwiseInit
public struct BankBreakResolved: LedgerEventPayload {
    public static let eventType = "BankBreakResolved"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.bankBreakResolved

    public var breakID: String
    public var reason: String
    public var resolvedBy: String
    public var file: String

    enum CodingKeys: String, CodingKey {
        case breakID = "break_id"
        case reason
        case resolvedBy = "resolved_by"
        case file
    }
}

/// The matching's stream.
public enum BankMatching {
    public static let stream = StreamID(category: "bank_matching", id: "payouts")
    /// Who resolves a break when a later file explains it.
    public static let actor = "bank-matching"
}
