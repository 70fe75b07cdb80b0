import LedgerMacros

import struct Foundation.Date

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

    /// The reference the answer is about.
    public var merchantReference: String {
        switch self {
        case .found(let details): details.authorization.merchantReference
        case .notFound(let reference): reference
        }
    }
}
