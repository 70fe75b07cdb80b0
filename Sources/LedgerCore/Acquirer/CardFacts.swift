import LedgerMacros

import struct Foundation.Date

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
