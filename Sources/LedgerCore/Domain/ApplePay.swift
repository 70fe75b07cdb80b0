import LedgerMacros

import struct Foundation.Date

// Apple Pay tokens the ledger processes itself (domain.md §4). The cryptography is `LedgerPayments`'
// business; what the ledger records about a token is here, as pure values.
//
// - Every accepted token leaves one `ApplePayTokenAccepted` on its own stream, `applepay-<digest>`
//   (digest: lowercase hex SHA-256 of the token's transaction id bytes), appended with "no stream" in
//   the same append that opens the order. A second use of the transaction id conflicts on that stream,
//   so a replay can never open a second order, however the requests race.
// - A rejected token that is genuinely Apple's (its signature and chain verified) may leave one
//   `ApplePayTokenRejected` on `applepay_rejected-<digest>`, also appended with "no stream": at most one
//   audit event per genuine token, so replaying a captured token cannot grow the log. Tokens that do not
//   verify are anyone's input and are only logged and counted, never appended.
//
// Neither event carries cardholder data: no device PAN beyond its last four digits, no cryptogram, no
// expiry. These events belong to no aggregate that a decider folds, so they are not part of
// ``DomainEvent``; replays of the log skip them (``DomainEvent/knownTypes``). They are registered in the
// ``EventCatalogue`` and decode as ``LedgerEvent`` cases.

/// A token was accepted for an order: the marker that makes its transaction id single-use.
@MemberwiseInit
public struct ApplePayTokenAccepted: LedgerEventPayload {
    public static let eventType = "ApplePayTokenAccepted"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.applePayTokenAccepted

    public var orderID: OrderID
    /// The token's `header.transactionId` as lowercase hex.
    public var transactionID: String
    /// `visa`, `mastercard`, … when the device PAN's range says; nil otherwise.
    public var network: String?
    public var lastFour: String
    /// `3DSecure` (or `EMV`).
    public var paymentDataType: String
    /// The order total the token was checked against (equal to the token's amount and currency).
    @DecimalMoney public var amount: Money
    /// The CMS signing time of the token.
    @LedgerTimestamp public var signedAt: Date

    enum CodingKeys: String, CodingKey {
        case orderID = "order_id"
        case transactionID = "transaction_id"
        case network
        case lastFour = "last_four"
        case paymentDataType = "payment_data_type"
        case amount
        case signedAt = "signed_at"
    }
}

/// A genuine (signature-verified) token was refused: the audit trace of the attempt.
@MemberwiseInit
public struct ApplePayTokenRejected: LedgerEventPayload {
    public static let eventType = "ApplePayTokenRejected"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.applePayTokenRejected

    /// The stable reason code, e.g. `signing_time_stale`, `amount_mismatch`, `replayed_transaction`.
    public var reason: String
    /// The human explanation (never cardholder data).
    public var message: String
    /// The token's `header.transactionId` as lowercase hex (known to be Apple's: the signature verified).
    public var transactionID: String
    /// The CMS signing time of the token.
    @LedgerTimestamp public var signedAt: Date
    @LedgerTimestamp public var rejectedAt: Date

    enum CodingKeys: String, CodingKey {
        case reason, message
        case transactionID = "transaction_id"
        case signedAt = "signed_at"
        case rejectedAt = "rejected_at"
    }
}

/// The ledger's rules for Apple Pay tokens, as pure functions.
public enum ApplePayLedger {
    /// The stream whose existence means "this transaction id was used": `applepay-<digest>`.
    /// - Parameter transactionDigest: lowercase hex SHA-256 of the transaction id bytes (64 characters).
    public static func markerStream(transactionDigest: String) -> StreamID {
        StreamID(category: "applepay", id: transactionDigest)
    }

    /// The stream of the (single) rejection audit event of a genuine token: `applepay_rejected-<digest>`.
    public static func rejectionStream(transactionDigest: String) -> StreamID {
        StreamID(category: "applepay_rejected", id: transactionDigest)
    }

    /// The result of comparing a token's decrypted amount with the order's server-computed total.
    public enum AmountCheck: Hashable, Sendable {
        case match
        /// The token's ISO 4217 numeric currency is not the order's (or not a currency the ledger knows).
        case currencyMismatch(tokenCurrency: String, expected: Currency)
        case amountMismatch(tokenMinorUnits: Int, expected: Money)

        public var isMatch: Bool { self == .match }

        public var description: String {
            switch self {
            case .match: return "the token's amount is the order total"
            case .currencyMismatch(let token, let expected):
                return "the token's currency \(token) is not the order's \(expected.code) (\(expected.numericCode))"
            case .amountMismatch(let token, let expected):
                return "the token's amount \(token) is not the order total \(expected.minorUnits) (\(expected))"
            }
        }
    }

    /// Checks the token's `currencyCode` (ISO 4217 numeric, e.g. `"840"`) and `transactionAmount` (minor
    /// units) against the order total. Both must be equal: the shopper approved exactly this amount.
    public static func check(tokenAmount: Int, tokenCurrencyCode: String, against total: Money) -> AmountCheck {
        guard let currency = Currency(numericCode: tokenCurrencyCode), currency == total.currency else {
            return .currencyMismatch(tokenCurrency: tokenCurrencyCode, expected: total.currency)
        }
        guard Int64(exactly: tokenAmount) == total.minorUnits else {
            return .amountMismatch(tokenMinorUnits: tokenAmount, expected: total)
        }
        return .match
    }

    /// The total of the order a plan opens, if it opens one (what ``check(tokenAmount:tokenCurrencyCode:against:)``
    /// compares against: the server's own pricing, never the app's claim).
    public static func openedOrderTotal(_ plan: AppendPlan) -> Money? {
        for event in plan.events {
            if case .order(.opened(let opened)) = event { return opened.amounts.total }
        }
        return nil
    }
}
