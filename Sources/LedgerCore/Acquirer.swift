import LedgerMacros

import struct Foundation.Date

// MARK: - The interface

/// The card-acquiring side of the ledger: acquirer + network + issuer as one service.
///
/// A real acquirer adapter and the deterministic acquirer model (`LedgerAcquirer.AcquirerModel`)
/// both implement it, so the payment and settlement services never know which one they talk to.
///
/// Every operation is keyed by references *we* choose (the merchant reference of an authorization,
/// the modification reference of a capture/refund/…, the batch reference), so that a request can be
/// retried after a crash or timeout without being applied twice: the same reference with the same
/// request returns the original answer; the same reference with a different request is refused.
///
/// Declines are answers, not errors: an authorization the issuer refused returns a response whose
/// ``ResponseCode`` is not approved. Errors (``AcquirerError``) are operations the acquirer refuses
/// to process at all: capturing more than is open, touching an expired hold, an unknown reference, …
public protocol Acquirer: Sendable {
    /// Asks the issuer to approve and hold `request.amount`.
    func authorize(_ request: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse
    /// Incremental authorization: asks the issuer to add to an open hold. May be declined.
    func increment(_ request: IncrementRequest) async throws(AcquirerError) -> ModificationResponse
    /// Captures part or all of an open hold; a final capture releases the remainder.
    func capture(_ request: CaptureRequest) async throws(AcquirerError) -> ModificationResponse
    /// Voids / reverses part or all of the open amount of a hold.
    func reverse(_ request: ReversalRequest) async throws(AcquirerError) -> ModificationResponse
    /// Returns captured money to the cardholder (never more than captured − already refunded).
    func refund(_ request: RefundRequest) async throws(AcquirerError) -> ModificationResponse
    /// What the acquirer knows about an authorization we sent with `merchantReference`: used to resolve
    /// payments left pending by a crash or by an unknown outcome (91/96).
    func query(merchantReference: String) async throws(AcquirerError) -> PaymentQueryResult
    /// Submits a batch of the day's captures and refunds for settlement, its items in pages: the
    /// acquirer asks for page 0, 1, … (each once, in order) until `pages` returns nil — as a settlement file is uploaded in
    /// parts, so that neither side needs a whole batch in memory. Idempotent by the batch reference
    /// (the same items again get the same receipt). The report's lines are then read in pages with
    /// ``reportLines(batchNumber:from:count:)``.
    func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt
    /// Lines `from ..< from + count` of a settled batch's report (the MerchantPayout line is the last);
    /// fewer, or none, past its end.
    func reportLines(batchNumber: Int, from: Int, count: Int) async throws(AcquirerError) -> [SettlementReportLine]
    /// The bank deposit (payout) for a settled batch.
    func payout(batchNumber: Int) async throws(AcquirerError) -> PayoutNotice
    /// The acquirer's dispute notifications after feed position `after` (0: from the start), at most
    /// `limit`, in feed order. The feed only grows: a notification keeps its position for ever, so a
    /// reader that remembers the last position it recorded reads each notification at least once.
    func disputeNotifications(after: Int, limit: Int) async throws(AcquirerError) -> [AcquirerDisputeNotification]
}

// MARK: - Dispute notifications

/// The network's stage a dispute notification reports.
public enum DisputeStage: String, Hashable, Sendable, Codable, CaseIterable {
    case inquiry
    case chargeback
    case secondPresentment = "second_presentment"
    case chargebackReversed = "chargeback_reversed"
    case preArbitration = "pre_arbitration"
    case secondChargeback = "second_chargeback"
    case won, lost
}

/// One entry of the acquirer's dispute notification feed (`GET /v1/disputes/notifications`), as
/// acquirers report disputes: which dispute, which stage, on which payment.
@MemberwiseInit
public struct AcquirerDisputeNotification: Hashable, Sendable, Codable {
    /// The notification's position in the feed (1, 2, …): the reader's cursor.
    public var sequence: Int
    /// The acquirer's reference of the dispute (the settlement report's "Modification Reference" of its lines).
    public var disputeID: String
    public var stage: DisputeStage
    /// The stage's number among this dispute's notifications (1 for the notification that opens it):
    /// what makes recording a notification twice a no-op.
    public var stageNumber: Int
    /// Our reference of the disputed payment (the authorization's merchant reference: the order).
    public var merchantReference: String
    /// The acquirer's reference of the disputed payment.
    public var pspReference: String
    public var reason: DisputeReason
    public var amount: Money
    public var raisedAt: Date
}

// MARK: - Response codes

/// An ISO 8583 authorization response code ("00" approved, "51" insufficient funds, …).
///
/// A struct rather than an enum so that an adapter can pass through codes the ledger does not name,
/// while the ledger still decides on ``isApproved`` and ``isUnknownOutcome`` only.
public struct ResponseCode: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// Accepts exactly two ASCII letters or digits.
    public init?(rawValue: String) {
        guard rawValue.utf8.count == 2, rawValue.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            return nil
        }
        self.rawValue = rawValue
    }

    private init(known: String) { self.rawValue = known }

    public static let approved = ResponseCode(known: "00")
    public static let doNotHonor = ResponseCode(known: "05")
    public static let invalidCardNumber = ResponseCode(known: "14")
    public static let lostCard = ResponseCode(known: "41")
    public static let stolenCard = ResponseCode(known: "43")
    public static let insufficientFunds = ResponseCode(known: "51")
    public static let expiredCard = ResponseCode(known: "54")
    public static let transactionNotPermitted = ResponseCode(known: "57")
    public static let exceedsWithdrawalLimit = ResponseCode(known: "61")
    public static let restrictedCard = ResponseCode(known: "62")
    public static let exceedsFrequencyLimit = ResponseCode(known: "65")
    public static let issuerUnavailable = ResponseCode(known: "91")
    public static let systemError = ResponseCode(known: "96")

    /// Only "00" places a hold.
    public var isApproved: Bool { rawValue == "00" }

    /// 91 / 96: nobody knows whether the issuer placed a hold. The caller must resolve the outcome
    /// (``Acquirer/query(merchantReference:)``) or reverse it; it must never assume either answer.
    public var isUnknownOutcome: Bool { rawValue == "91" || rawValue == "96" }

    /// A short English meaning, for logs and back-office screens.
    public var meaning: String {
        switch rawValue {
        case "00": return "approved"
        case "05": return "do not honor"
        case "14": return "invalid card number"
        case "41": return "lost card"
        case "43": return "stolen card"
        case "51": return "insufficient funds"
        case "54": return "expired card"
        case "57": return "transaction not permitted to cardholder"
        case "61": return "exceeds withdrawal amount limit"
        case "62": return "restricted card"
        case "65": return "exceeds withdrawal frequency limit"
        case "91": return "issuer unavailable"
        case "96": return "system malfunction"
        default: return "response code \(rawValue)"
        }
    }

    public var description: String { "\(rawValue) (\(meaning))" }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let code = ResponseCode(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid response code \(raw)")
        }
        self = code
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

// MARK: - Card facts

/// The card network (scheme) that routes an authorization; decides hold lifetimes and fees.
public enum CardNetwork: String, Hashable, Sendable, Codable, CaseIterable {
    case visa, mastercard, amex, discover
}

/// How the card is funded; interchange differs by it.
public enum FundingType: String, Hashable, Sendable, Codable, CaseIterable {
    case credit, debit, prepaid
}

/// Who started the transaction. Networks give merchant-initiated holds a shorter life (Visa: ~4 days 18 hours).
public enum TransactionInitiator: String, Hashable, Sendable, Codable, CaseIterable {
    /// Customer-initiated (the shopper is present, e.g. the Apple Pay sheet).
    case customer
    /// Merchant-initiated (e.g. a re-authorization without the shopper).
    case merchant
}

/// The kind of authorization requested; Mastercard gives pre-authorizations 30 days, final ones 7.
public enum AuthorizationType: String, Hashable, Sendable, Codable, CaseIterable {
    /// The amount is final and will be captured within the network's short window.
    case final
    /// An estimate that may be incremented and captured later.
    case preAuthorization
}

/// Whether the acquirer captures at authorization time (a "sale") or waits for an explicit capture.
public enum CaptureIntent: String, Hashable, Sendable, Codable, CaseIterable {
    /// Authorize only; capture later (the ledger captures when the order ships).
    case manual
    /// Authorize and capture the full amount at once.
    case immediate
}

/// A network token as decrypted from an Apple Pay payment token (device PAN + cryptogram).
///
/// Cardholder data: not `Codable`, and its description is redacted, so it cannot end up in events
/// or logs by accident. Keep ``lastFour`` and the network, never the number.
@MemberwiseInit
public struct NetworkTokenData: Hashable, Sendable, CustomStringConvertible {
    /// The network; `nil` lets the acquirer derive it from the number's prefix.
    public var network: CardNetwork?
    /// The device primary account number (DPAN).
    public var tokenNumber: String
    /// Expiration as `YYMMDD` (Apple Pay's `applicationExpirationDate`).
    public var expiration: String
    /// The online payment cryptogram (base64).
    public var cryptogram: String
    /// The electronic commerce indicator, if the token carried one.
    public var eci: String?

    public var lastFour: String { String(tokenNumber.suffix(4)) }

    public var description: String { "NetworkTokenData(network: \(network?.rawValue ?? "?"), number: ••••\(lastFour))" }
}

/// What pays: a gateway card token (e.g. `tok_visa`) or a decrypted network token.
public enum PaymentMethodData: Hashable, Sendable, CustomStringConvertible {
    case token(String)
    case networkToken(NetworkTokenData)

    public var description: String {
        switch self {
        case .token(let token): return "token(\(token))"
        case .networkToken(let data): return data.description
        }
    }
}

// MARK: - Requests

/// A request to authorize (and possibly capture) an amount. `merchantReference` is our idempotency key.
@MemberwiseInit
public struct AuthorizationRequest: Hashable, Sendable {
    public var merchantReference: String
    public var amount: Money
    public var paymentMethod: PaymentMethodData
    public var captureIntent: CaptureIntent = .manual
    public var initiator: TransactionInitiator = .customer
    public var authorizationType: AuthorizationType = .final
}

/// A request to add `amount` to the open hold of `authorizationReference` (incremental authorization).
@MemberwiseInit
public struct IncrementRequest: Hashable, Sendable, Codable {
    public var authorizationReference: String
    public var modificationReference: String
    public var amount: Money
}

/// A request to capture `amount` of an open hold. Several captures are allowed; `isFinal` releases the rest.
@MemberwiseInit
public struct CaptureRequest: Hashable, Sendable, Codable {
    public var authorizationReference: String
    public var modificationReference: String
    public var amount: Money
    public var isFinal: Bool
}

/// A request to void / reverse part of a hold's open amount, or all of it when `amount` is `nil`.
@MemberwiseInit
public struct ReversalRequest: Hashable, Sendable, Codable {
    public var authorizationReference: String
    public var modificationReference: String
    public var amount: Money?
}

/// A request to refund `amount` of what was captured on `authorizationReference`.
@MemberwiseInit
public struct RefundRequest: Hashable, Sendable, Codable {
    public var authorizationReference: String
    public var modificationReference: String
    public var amount: Money
}

// MARK: - Responses

/// The money picture of one hold. At every moment
/// `authorized + incremented = captured + reversed + expired + open` (``satisfiesIdentity``).
/// `reversed` includes the remainder released by a final capture. `refunded` is outside the identity:
/// it is bounded by `captured` instead.
@MemberwiseInit
public struct HoldBalance: Hashable, Sendable, Codable {
    public var authorized: Money
    public var incremented: Money
    public var captured: Money
    public var reversed: Money
    public var expired: Money
    public var open: Money
    public var refunded: Money

    /// Checks the accounting identity in exact integer arithmetic (all amounts share one currency).
    public var satisfiesIdentity: Bool {
        let parts = [authorized, incremented, captured, reversed, expired, open, refunded]
        guard parts.allSatisfy({ $0.currency == authorized.currency && !$0.isNegative }) else { return false }
        let (left, o1) = authorized.minorUnits.addingReportingOverflow(incremented.minorUnits)
        let right = [captured, reversed, expired, open].reduce((0 as Int64, false)) { acc, money in
            let (sum, o) = acc.0.addingReportingOverflow(money.minorUnits)
            return (sum, acc.1 || o)
        }
        return !o1 && !right.1 && left == right.0 && refunded.minorUnits <= captured.minorUnits
    }
}

/// The acquirer's answer to an authorization. Declines are answers too (see ``responseCode``).
@MemberwiseInit
public struct AuthorizationResponse: Hashable, Sendable, Codable {
    public var merchantReference: String
    /// The acquirer's reference for the payment; `nil` when the outcome is unknown (no answer came back).
    public var pspReference: String?
    public var responseCode: ResponseCode
    /// The issuer's approval code; only on approvals.
    public var authCode: String?
    public var amount: Money
    /// When the issuer releases the hold if it is not captured; only on approvals.
    public var holdExpiresAt: Date?
    public var network: CardNetwork?
    public var fundingType: FundingType?
    public var lastFour: String?
    public var processedAt: Date
    /// The capture made at once when the request's capture intent was `.immediate` and it was approved.
    public var immediateCapture: ModificationResponse?
}

/// Which change to a hold a ``ModificationResponse`` answers.
public enum ModificationKind: String, Hashable, Sendable, Codable, CaseIterable {
    case increment, capture, reversal, refund
}

/// The acquirer's answer to an increment, capture, reversal or refund.
/// Only increments can be declined (by the issuer); the others either apply or throw ``AcquirerError``.
@MemberwiseInit
public struct ModificationResponse: Hashable, Sendable, Codable {
    public var kind: ModificationKind
    public var authorizationReference: String
    public var modificationReference: String
    /// The acquirer's reference of the payment the modification belongs to.
    public var pspReference: String
    /// The acquirer's reference of this modification (the settlement report's "Modification Reference").
    public var modificationPSPReference: String
    public var responseCode: ResponseCode
    /// The amount applied (for a full reversal: the open amount that was reversed).
    public var amount: Money
    public var isFinal: Bool
    public var processedAt: Date
    /// The hold after this modification.
    public var balance: HoldBalance
    /// What an approved final capture released of the open amount (the open amount before it less
    /// the captured amount); nil for every other modification. The balance alone cannot tell a
    /// release from an earlier partial reversal (both count as `reversed`), so a recorder whose hold
    /// lacks that reversal would compute the same balance with a larger release: this names the
    /// release, and a ledger whose open amount does not give it knows it missed something.
    public var released: Money? = nil
}

/// Where a payment stands at the acquirer.
public enum PaymentStatus: String, Hashable, Sendable, Codable, CaseIterable {
    /// The issuer refused; no hold exists.
    case declined
    /// A hold exists with an open amount.
    case open
    /// Nothing is open any more: fully captured, final-captured or fully reversed.
    case closed
    /// The hold's lifetime passed; its open amount was released.
    case expired
}

/// What the acquirer knows about one payment: its authorization answer, state and modifications.
@MemberwiseInit
public struct PaymentDetails: Hashable, Sendable, Codable {
    public var authorization: AuthorizationResponse
    public var status: PaymentStatus
    /// `nil` for a declined authorization (no hold).
    public var balance: HoldBalance?
    /// Applied (and declined) modifications, oldest first.
    public var modifications: [ModificationResponse]
}

/// The answer to a query by our reference: the acquirer either knows the payment or does not.
/// "Not found" after an unknown outcome means no hold was placed and the order can be released.
public enum PaymentQueryResult: Hashable, Sendable, Codable {
    case found(PaymentDetails)
    case notFound(merchantReference: String)
}

// MARK: - Settlement

/// A calendar day without time or zone (a batch's business date, a payout's value date), "YYYY-MM-DD".
///
/// Day arithmetic is exact integer arithmetic on days since 1970-01-01 (proleptic Gregorian),
/// so it never depends on the machine's time zone or calendar settings.
public struct BusinessDate: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// Fails for dates that do not exist (2025-02-30) or years outside 1…9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1,
            day <= BusinessDate.daysIn(month: month, year: year)
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
        else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// The day `daysSinceEpoch` days after 1970-01-01 (H. Hinnant's civil-from-days).
    public init(daysSinceEpoch: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.year = Int(yoe + era * 400 + (m <= 2 ? 1 : 0))
        self.month = Int(m)
        self.day = Int(d)
    }

    /// Days since 1970-01-01 (negative before).
    public var daysSinceEpoch: Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public func adding(days: Int64) -> BusinessDate { BusinessDate(daysSinceEpoch: daysSinceEpoch + days) }

    /// ISO weekday: 1 = Monday … 7 = Sunday.
    public var isoWeekday: Int {
        // 1970-01-01 was a Thursday (4).
        let offset = (daysSinceEpoch + 3) % 7
        return Int(offset < 0 ? offset + 7 : offset) + 1
    }

    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (lhs: BusinessDate, rhs: BusinessDate) -> Bool { lhs.daysSinceEpoch < rhs.daysSinceEpoch }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = BusinessDate(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid date \(text)")
        }
        self = date
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Whether a batch item is a capture (money in) or a refund (money out).
public enum SettlementItemKind: String, Hashable, Sendable, Codable, CaseIterable {
    case capture, refund
}

/// One capture or refund we submit for settlement, by the references we sent when we made it.
@MemberwiseInit
public struct SettlementItem: Hashable, Sendable, Codable {
    public var kind: SettlementItemKind
    public var authorizationReference: String
    public var modificationReference: String
    public var amount: Money
}

/// What a settlement batch is, without its items: our reference (the idempotency key), its currency
/// and, optionally, the business date the merchant closed it for (see ``SettlementBatchRequest``).
@MemberwiseInit
public struct SettlementBatchHeader: Hashable, Sendable, Codable {
    public var batchReference: String
    public var currency: Currency
    public var businessDate: BusinessDate?
}

/// The acquirer's acknowledgement of a settled batch: its number, report length and payout.
@MemberwiseInit
public struct SettlementReceipt: Hashable, Sendable, Codable {
    public var batchReference: String
    public var batchNumber: Int
    public var businessDate: BusinessDate
    /// Lines of the report, the MerchantPayout line included.
    public var lineCount: Int
    public var payout: PayoutNotice

    public init(_ report: SettlementReport) {
        self.init(
            batchReference: report.batchReference,
            batchNumber: report.batchNumber,
            businessDate: report.businessDate,
            lineCount: report.lines.count,
            payout: report.payout
        )
    }
}

/// A batch of captures and refunds in one currency, items included: what the acquirer settles once
/// every page is in. `batchReference` is our idempotency key for the batch.
@MemberwiseInit
public struct SettlementBatchRequest: Hashable, Sendable, Codable {
    public var batchReference: String
    public var currency: Currency
    public var items: [SettlementItem]
    /// The business date the merchant closed the batch for. When nil the acquirer derives it from
    /// the submission time and its cut-off (a batch submitted at or after the cut-off belongs to the
    /// next business day) — so a ledger that closes its day at the cut-off and submits right after
    /// names the date it closed.
    public var businessDate: BusinessDate?

    public init(_ header: SettlementBatchHeader, items: [SettlementItem]) {
        self.init(batchReference: header.batchReference, currency: header.currency, items: items, businessDate: header.businessDate)
    }

    public var header: SettlementBatchHeader {
        SettlementBatchHeader(batchReference: batchReference, currency: currency, businessDate: businessDate)
    }
}

/// The "Type" column of a settlement report line. Open set: a parser keeps types it does not name.
public struct SettlementLineType: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let settled = SettlementLineType(rawValue: "Settled")
    public static let refunded = SettlementLineType(rawValue: "Refunded")
    public static let chargeback = SettlementLineType(rawValue: "Chargeback")
    public static let fee = SettlementLineType(rawValue: "Fee")
    public static let merchantPayout = SettlementLineType(rawValue: "MerchantPayout")

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One row of a settlement report, in the widely used column layout (see domain §2).
/// Amount columns are `nil` when the report leaves them empty; money in a column is never negative
/// (debit and credit columns carry the sign).
@MemberwiseInit
public struct SettlementReportLine: Hashable, Sendable, Codable {
    public var companyAccount: String
    public var merchantAccount: String
    public var pspReference: String
    public var merchantReference: String
    public var paymentMethod: String
    /// Whole seconds; written in ``timeZone``.
    public var creationDate: Date?
    public var timeZone: String
    public var type: SettlementLineType
    public var modificationReference: String
    public var grossCurrency: Currency?
    public var grossDebit: Money?
    public var grossCredit: Money?
    public var exchangeRate: Rate?
    public var netCurrency: Currency?
    public var netDebit: Money?
    public var netCredit: Money?
    public var commission: Money?
    public var markup: Money?
    public var schemeFees: Money?
    public var interchange: Money?
    public var paymentMethodVariant: String
    public var modificationMerchantReference: String
    public var batchNumber: Int

    /// Gross credit − gross debit in minor units of the gross currency (0 when both are empty).
    public var signedGrossMinorUnits: Int64 { (grossCredit?.minorUnits ?? 0) - (grossDebit?.minorUnits ?? 0) }

    /// Net credit − net debit in minor units of the net currency (0 when both are empty).
    public var signedNetMinorUnits: Int64 { (netCredit?.minorUnits ?? 0) - (netDebit?.minorUnits ?? 0) }

    /// Commission + markup + scheme fees + interchange, in minor units of the net currency.
    public var totalFeesMinorUnits: Int64 {
        [commission, markup, schemeFees, interchange].reduce(0) { $0 + ($1?.minorUnits ?? 0) }
    }
}

/// The deposit the acquirer makes (or will make) to the merchant's bank account for one batch.
@MemberwiseInit
public struct PayoutNotice: Hashable, Sendable, Codable {
    public var payoutReference: String
    public var batchNumber: Int
    public var merchantAccount: String
    /// The day the money is credited to the bank account.
    public var valueDate: BusinessDate
    /// Negative when refunds and fees exceed captures (the merchant owes the acquirer).
    public var amount: Money
}

/// The acquirer's settlement report for one batch: its lines (ending with the MerchantPayout line)
/// and the payout they lead to.
@MemberwiseInit
public struct SettlementReport: Hashable, Sendable, Codable {
    public var batchReference: String
    public var batchNumber: Int
    public var companyAccount: String
    public var merchantAccount: String
    public var businessDate: BusinessDate
    public var closedAt: Date
    public var currency: Currency
    public var lines: [SettlementReportLine]
    public var payout: PayoutNotice
}

// MARK: - Errors

/// An operation the acquirer refused to process (as opposed to a decline, which is an answer).
///
/// A struct with an open set of codes (the ServiceRunnerError pattern), so adapters can add codes
/// without breaking exhaustive switches; the ledger maps codes to its own errors in one place.
public struct AcquirerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of refusal this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case unknownReference, duplicateReference, currencyMismatch, invalidAmount, amountExceedsOpen
            case holdClosed, holdExpired, notAuthorized, refundExceedsCaptured, alreadySettled
            case settlementMismatch, unknownBatch, invalidRequest, unavailable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The code named `name` (its ``description``), as an adapter reads it back off the wire.
        public init?(name: String) {
            guard let base = Base(rawValue: name) else { return nil }
            self.base = base
        }

        /// No authorization, modification or batch with that reference.
        public static let unknownReference = Code(.unknownReference)
        /// The reference was already used for a different request (idempotency conflict).
        public static let duplicateReference = Code(.duplicateReference)
        /// The amount's currency differs from the hold's or the batch's.
        public static let currencyMismatch = Code(.currencyMismatch)
        /// Zero, negative or otherwise unusable amount.
        public static let invalidAmount = Code(.invalidAmount)
        /// Capture or reversal above the hold's open amount.
        public static let amountExceedsOpen = Code(.amountExceedsOpen)
        /// The hold is fully captured, final-captured or fully reversed.
        public static let holdClosed = Code(.holdClosed)
        /// The hold's lifetime has passed.
        public static let holdExpired = Code(.holdExpired)
        /// The authorization was declined; there is no hold to modify.
        public static let notAuthorized = Code(.notAuthorized)
        /// Refund above captured − already refunded.
        public static let refundExceedsCaptured = Code(.refundExceedsCaptured)
        /// The capture or refund was already settled in an earlier batch.
        public static let alreadySettled = Code(.alreadySettled)
        /// A batch item does not match what the acquirer recorded (kind, amount, hold).
        public static let settlementMismatch = Code(.settlementMismatch)
        /// No settled batch with that number.
        public static let unknownBatch = Code(.unknownBatch)
        /// The request is malformed (e.g. an empty reference).
        public static let invalidRequest = Code(.invalidRequest)
        /// The acquirer could not be reached (adapters only); the outcome is unknown.
        public static let unavailable = Code(.unavailable)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The reference the refusal is about, when there is one.
    public let reference: String?
    /// Human-readable detail for logs; never shown to shoppers verbatim.
    public let message: String

    public init(_ code: Code, reference: String? = nil, _ message: String) {
        self.code = code
        self.reference = reference
        self.message = message
    }

    public var description: String {
        "AcquirerError.\(code)" + (reference.map { " [\($0)]" } ?? "") + ": \(message)"
    }
}

extension SettlementBatchHeader {
    /// Walks a batch's pages as ``Acquirer/submitBatch(_:pages:)`` defines them — page 0, 1, … once each, in
    /// order, until `pages` returns nil — handing each to `take` with its index; returns how many there were.
    /// A page that cannot be read fails the upload as `.unavailable` (nothing is settled yet, so the batch may
    /// be submitted again with the same reference).
    public func forEachPage(
        _ pages: @Sendable (Int) async throws -> [SettlementItem]?,
        _ take: ([SettlementItem], Int) async throws(AcquirerError) -> Void
    ) async throws(AcquirerError) -> Int {
        var index = 0
        while true {
            let page: [SettlementItem]?
            do { page = try await pages(index) } catch {
                throw AcquirerError(.unavailable, reference: batchReference, "the batch upload failed at page \(index): \(error)")
            }
            guard let page else { return index }
            try await take(page, index)
            index += 1
        }
    }
}
