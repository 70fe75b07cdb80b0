import LedgerCore
import LedgerMacros

import struct Foundation.Data

/// The acquirer service's wire API, shaped like Adyen's Checkout/Payments API: the paths, the headers
/// and the bodies both sides use. Answers are the core's `Codable` answer types in the canonical JSON
/// (``LedgerJSON``); refusals are ``AcquirerWireError``.
///
/// | method and path | body | answer |
/// |---|---|---|
/// | `POST /v1/payments` | ``AuthorisationBody`` | `AuthorizationResponse` |
/// | `POST /v1/payments/{pspReference}/captures` | `CaptureRequest` | `ModificationResponse` |
/// | `POST /v1/payments/{pspReference}/amountUpdates` | `IncrementRequest` | `ModificationResponse` |
/// | `POST /v1/payments/{pspReference}/cancels` | `ReversalRequest` | `ModificationResponse` |
/// | `POST /v1/cancels` (technical cancel, by our reference) | `ReversalRequest` | `ModificationResponse` |
/// | `POST /v1/payments/{pspReference}/refunds` | `RefundRequest` | `ModificationResponse` |
/// | `GET /v1/payments?merchantReference=R` | — | `PaymentQueryResult` |
/// | `POST /v1/payments/queries` (a read, no key) | ``PaymentQueriesBody`` | `[PaymentQueryResult]`, in the references' order |
/// | `PUT /v1/settlement/batches/{batchReference}/pages/{n}` | `[SettlementItem]` | 204 |
/// | `POST /v1/settlement/batches` | ``BatchSubmissionBody`` | `SettlementReceipt` |
/// | `GET /v1/settlement/reports/{batchNumber}?from=F&count=C` | — | `[SettlementReportLine]` |
/// | `GET /v1/payouts/{batchNumber}` | — | `PayoutNotice` |
/// | `GET /v1/disputes/notifications?after=N&limit=L` | — | `[AcquirerDisputeNotification]` (the feed after position N) |
/// | `GET /health` (no key) | — | `ok` |
///
/// Every request but `/health` carries `X-API-Key`; every request that changes something carries
/// `Idempotency-Key`: the same key with the same body returns the first answer byte for byte, the same
/// key with another body is refused (409 `duplicateReference`).
public enum AcquirerWire {
    public static let apiKeyHeader = "X-API-Key"
    public static let idempotencyKeyHeader = "Idempotency-Key"
    public static let version = "v1"
    /// The highest page number of a settlement batch (the journal's `batch_pages.page` is a PostgreSQL `integer`: a
    /// larger one was a 500).
    public static let maximumPage = Int(Int32.max)
    /// Most items in one settlement page the service accepts.
    public static let maximumPageItems = 10_000
    /// Most report lines one page request returns.
    public static let maximumReportLines = 10_000
    /// Most merchant references one `POST /payments/queries` asks about.
    public static let maximumQueryReferences = 1_000
    /// Most dispute notifications one feed request returns.
    public static let maximumDisputeNotifications = 1_000
}

/// The body of an authorisation. Card data travels only here, never into the service's journal or logs.
@MemberwiseInit
public struct AuthorisationBody: Hashable, Sendable, Codable {
    public var merchantReference: String
    public var amount: Money
    public var paymentMethod: WirePaymentMethod
    public var captureIntent: CaptureIntent
    public var initiator: TransactionInitiator
    public var authorizationType: AuthorizationType

    public init(_ request: AuthorizationRequest) {
        self.init(
            merchantReference: request.merchantReference,
            amount: request.amount,
            paymentMethod: WirePaymentMethod(request.paymentMethod),
            captureIntent: request.captureIntent,
            initiator: request.initiator,
            authorizationType: request.authorizationType
        )
    }

    public var request: AuthorizationRequest {
        AuthorizationRequest(
            merchantReference: merchantReference,
            amount: amount,
            paymentMethod: paymentMethod.data,
            captureIntent: captureIntent,
            initiator: initiator,
            authorizationType: authorizationType
        )
    }
}

/// A payment method on the wire: a gateway token or a network token. The description is redacted.
@MemberwiseInit
public struct WirePaymentMethod: Hashable, Sendable, Codable, CustomStringConvertible {
    /// `scheme` (a gateway token) or `networkToken`; any other is refused when the body is decoded (it was read as a
    /// gateway token: schemathesis's invalid phase had an authorisation with `"type": "x"` approved).
    public var type: Kind
    public var token: String?
    public var network: CardNetwork?
    public var number: String?
    public var expiryDate: String?
    public var cryptogram: String?
    public var eci: String?

    public init(_ data: PaymentMethodData) {
        switch data {
        case .token(let token): self.init(type: .scheme, token: token)
        case .networkToken(let t):
            self.init(type: .networkToken, network: t.network, number: t.tokenNumber, expiryDate: t.expiration, cryptogram: t.cryptogram, eci: t.eci)
        }
    }

    public var data: PaymentMethodData {
        if type == .networkToken {
            return .networkToken(
                NetworkTokenData(network: network, tokenNumber: number ?? "", expiration: expiryDate ?? "", cryptogram: cryptogram ?? "", eci: eci)
            )
        }
        return .token(token ?? "")
    }

    public var description: String { data.description }

    /// What kind of payment method it is.
    public enum Kind: String, Hashable, Sendable, Codable {
        case scheme, networkToken
    }
}

/// The body of `POST /payments/queries`: at most ``AcquirerWire/maximumQueryReferences`` merchant references.
@MemberwiseInit
public struct PaymentQueriesBody: Hashable, Sendable, Codable {
    public var merchantReferences: [String]
}

/// A settlement batch once its pages are uploaded: its header and how many pages to take, in order.
@MemberwiseInit
public struct BatchSubmissionBody: Hashable, Sendable, Codable {
    public var header: SettlementBatchHeader
    public var pages: Int
}

/// A refusal on the wire: `{"error": {"code", "message", "reference"?}}`; `code` is an ``AcquirerError/Code`` name.
@MemberwiseInit
public struct AcquirerWireError: Hashable, Sendable, Codable {
    public var error: AcquirerWireErrorDetail

    public init(_ error: AcquirerError) {
        self.init(error: AcquirerWireErrorDetail(code: error.code.description, message: error.message, reference: error.reference))
    }

    /// The HTTP status of a refusal: unknown references 404, idempotency conflicts 409, malformed
    /// requests 400, an unavailable acquirer 503, every other refusal 422 (as Adyen answers them).
    public static func status(of code: AcquirerError.Code) -> Int {
        switch code {
        case .unknownReference, .unknownBatch: return 404
        case .duplicateReference: return 409
        case .invalidRequest: return 400
        case .unavailable: return 503
        default: return 422
        }
    }

    /// The error as the ledger's adapter raises it (an unknown code becomes `invalidRequest`).
    public var acquirerError: AcquirerError {
        AcquirerError(AcquirerError.Code(name: error.code) ?? .invalidRequest, reference: error.reference, error.message)
    }
}

/// The inside of ``AcquirerWireError``.
@MemberwiseInit
public struct AcquirerWireErrorDetail: Hashable, Sendable, Codable {
    public var code: String
    public var message: String
    public var reference: String?
}
