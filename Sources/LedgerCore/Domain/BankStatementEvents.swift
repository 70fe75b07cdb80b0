import Crypto
import LedgerMacros

// A bank statement in the log (issue 53): each statement (account, statement id, sequence) is a stream of its own,
// `bank_statement-<key>`, holding one `BankStatementReceived` (what the statement says about itself and how many
// entries follow) and then its entries as `BankEntryBooked`, one event per entry in the statement's order. The same
// statement imported again (the same file, or the statement in another file) finds its stream and appends nothing; an
// import stopped between pages resumes at the first entry not yet recorded. docs/bank-statements.md has the rules.

/// A statement balance as recorded: signed minor units and the day it is struck.
@MemberwiseInit
public struct BankStatementBalance: Hashable, Sendable, Codable {
    @DecimalMoney public var amount: Money
    public var date: BusinessDate?
}

/// A bank statement was imported: its identity, its balances and the number of entries its stream holds after it.
@MemberwiseInit
public struct BankStatementReceived: LedgerEventPayload {
    public static let eventType = "BankStatementReceived"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.bankStatementReceived

    /// `camt.053`, `camt.054`, `mt940` or `bai2`.
    public var format: String
    public var account: String
    public var statementID: String
    public var sequence: String
    public var currency: Currency
    public var opening: BankStatementBalance?
    public var closing: BankStatementBalance?
    /// The entries that follow on the stream (``BankEntryBooked``), and their signed sum (booked entries only).
    public var entryCount: Int
    @DecimalMoney public var net: Money
    /// The SHA-256 (hex) of the file it came in, and of the statement's own content (header and entries as read), by
    /// which a statement sent again with other content is told apart.
    public var fileSHA256: String
    public var contentSHA256: String

    enum CodingKeys: String, CodingKey {
        case format, account
        case statementID = "statement_id"
        case sequence, currency, opening, closing
        case entryCount = "entry_count"
        case net
        case fileSHA256 = "file_sha256"
        case contentSHA256 = "content_sha256"
    }

    /// The statement's stream: `bank_statement-` and 32 hex digits of the SHA-256 of its account, id and sequence (a
    /// bank's ids may hold any character; the payload keeps them as written).
    public static func stream(account: String, statementID: String, sequence: String) -> StreamID {
        let digest = SHA256.hash(data: Array("\(account)\n\(statementID)\n\(sequence)".utf8))
        return StreamID(category: "bank_statement", id: String(Hex.encode(Array(digest)).prefix(32)))
    }
}

/// One entry of a statement: money into (positive) or out of (negative) the account, with the references matching
/// reads.
@MemberwiseInit
public struct BankEntryBooked: LedgerEventPayload {
    public static let eventType = "BankEntryBooked"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.bankEntryBooked

    public var account: String
    public var statementID: String
    /// 1-based position in its statement.
    public var entry: Int
    @DecimalMoney public var amount: Money
    public var bookingDate: BusinessDate?
    public var valueDate: BusinessDate?
    public var bankReference: String?
    public var ownerReference: String?
    public var endToEndIDs: [String]
    public var remittanceInformation: String
    public var transactionCode: String
    public var reversal: Bool
    /// False for camt's pending entries: recorded, not counted in the balance.
    public var booked: Bool

    enum CodingKeys: String, CodingKey {
        case account
        case statementID = "statement_id"
        case entry, amount
        case bookingDate = "booking_date"
        case valueDate = "value_date"
        case bankReference = "bank_reference"
        case ownerReference = "owner_reference"
        case endToEndIDs = "end_to_end_ids"
        case remittanceInformation = "remittance_information"
        case transactionCode = "transaction_code"
        case reversal, booked
    }
}
