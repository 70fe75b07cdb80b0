import LedgerCore
import LedgerMacros

/// An authorization with its payment method resolved (``ResolvedCard``): what the durable acquirer
/// service journals instead of the request, so that no device PAN or cryptogram is ever stored.
@MemberwiseInit
public struct AuthorizationCommand: Hashable, Sendable, Codable {
    public var merchantReference: String
    public var amount: Money
    public var card: ResolvedCard
    public var captureIntent: CaptureIntent
    public var initiator: TransactionInitiator
    public var authorizationType: AuthorizationType
}

/// A test card the model knows by its gateway token, with a fixed issuer answer.
///
/// The tokens follow the names shoppers' developers know from gateway test modes. A card whose
/// ``issuerResponse`` is approved still has an open-to-buy: an authorization above what is left
/// is declined with 51, like a real credit line.
@MemberwiseInit
public struct TestCard: Hashable, Sendable, Codable {
    public var token: String
    public var network: CardNetwork
    public var fundingType: FundingType
    public var lastFour: String
    /// What the issuer answers for every authorization on this card (before the open-to-buy check).
    public var issuerResponse: ResponseCode
    /// The dispute the cardholder always raises once a capture on this card settles (nil: none).
    public var dispute: DisputeReason? = nil

    /// The built-in test cards. Declining cards are Visa credit cards, as in the usual gateway test sets.
    public static let standard: [TestCard] = [
        TestCard(token: "tok_visa", network: .visa, fundingType: .credit, lastFour: "4242", issuerResponse: .approved),
        TestCard(token: "tok_visa_debit", network: .visa, fundingType: .debit, lastFour: "5556", issuerResponse: .approved),
        TestCard(token: "tok_mastercard", network: .mastercard, fundingType: .credit, lastFour: "4444", issuerResponse: .approved),
        TestCard(token: "tok_mastercard_prepaid", network: .mastercard, fundingType: .prepaid, lastFour: "5100", issuerResponse: .approved),
        TestCard(token: "tok_amex", network: .amex, fundingType: .credit, lastFour: "8431", issuerResponse: .approved),
        TestCard(token: "tok_discover", network: .discover, fundingType: .credit, lastFour: "1117", issuerResponse: .approved),
        // Authorises and captures normally, then always draws a Visa 10.4 chargeback (fraud, card absent)
        // raised on the business day after its capture settles.
        TestCard(
            token: "tok_visa_chargeback_fraud",
            network: .visa,
            fundingType: .credit,
            lastFour: "0259",
            issuerResponse: .approved,
            dispute: .visaFraudCardAbsent
        ),
        TestCard(token: "tok_chargeDeclined", network: .visa, fundingType: .credit, lastFour: "0002", issuerResponse: .doNotHonor),
        TestCard(
            token: "tok_chargeDeclinedInsufficientFunds",
            network: .visa,
            fundingType: .credit,
            lastFour: "9995",
            issuerResponse: .insufficientFunds
        ),
        TestCard(token: "tok_chargeDeclinedExpiredCard", network: .visa, fundingType: .credit, lastFour: "0069", issuerResponse: .expiredCard),
        TestCard(
            token: "tok_chargeDeclinedProcessingError",
            network: .visa,
            fundingType: .credit,
            lastFour: "0119",
            issuerResponse: .issuerUnavailable
        ),
        TestCard(token: "tok_chargeDeclinedSystemError", network: .visa, fundingType: .credit, lastFour: "0127", issuerResponse: .systemError),
        TestCard(token: "tok_chargeDeclinedLostCard", network: .visa, fundingType: .credit, lastFour: "9987", issuerResponse: .lostCard),
        TestCard(token: "tok_chargeDeclinedStolenCard", network: .visa, fundingType: .credit, lastFour: "9979", issuerResponse: .stolenCard),
        TestCard(
            token: "tok_chargeDeclinedTransactionNotAllowed",
            network: .visa,
            fundingType: .credit,
            lastFour: "0036",
            issuerResponse: .transactionNotPermitted
        ),
        TestCard(token: "tok_chargeDeclinedRestrictedCard", network: .visa, fundingType: .credit, lastFour: "0044", issuerResponse: .restrictedCard),
        TestCard(
            token: "tok_chargeDeclinedExceedsAmountLimit",
            network: .visa,
            fundingType: .credit,
            lastFour: "0051",
            issuerResponse: .exceedsWithdrawalLimit
        ),
        TestCard(
            token: "tok_chargeDeclinedVelocityExceeded",
            network: .visa,
            fundingType: .credit,
            lastFour: "0085",
            issuerResponse: .exceedsFrequencyLimit
        ),
    ]
}

/// The card an authorization resolves to: the model's view of the payment method, without the PAN.
@MemberwiseInit
public struct ResolvedCard: Hashable, Sendable, Codable {
    /// The open-to-buy account key. For network tokens it is network + last four + expiry, because
    /// the model's state is persisted and must never hold a device PAN.
    public var accountKey: String
    public var network: CardNetwork?
    public var fundingType: FundingType?
    public var lastFour: String?
    /// The issuer's answer before the open-to-buy check.
    public var issuerResponse: ResponseCode

    /// Resolves a payment method against the configured test cards. Unknown tokens and numbers that
    /// fail the Luhn check answer 14; an expired network token answers 54; a token without a
    /// cryptogram answers 05.
    static func resolve(_ method: PaymentMethodData, cards: [TestCard], today: BusinessDate) -> ResolvedCard {
        switch method {
        case .token(let token):
            guard let card = cards.first(where: { $0.token == token }) else {
                return ResolvedCard(
                    accountKey: "token:" + token,
                    network: nil,
                    fundingType: nil,
                    lastFour: nil,
                    issuerResponse: .invalidCardNumber
                )
            }
            return ResolvedCard(
                accountKey: "token:" + token,
                network: card.network,
                fundingType: card.fundingType,
                lastFour: card.lastFour,
                issuerResponse: card.issuerResponse
            )
        case .networkToken(let data):
            let digits = Array(data.tokenNumber.utf8)
            guard (12...19).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                luhnValid(digits), let network = data.network ?? network(ofNumber: digits)
            else {
                return ResolvedCard(
                    accountKey: "networkToken:invalid",
                    network: data.network,
                    fundingType: nil,
                    lastFour: nil,
                    issuerResponse: .invalidCardNumber
                )
            }
            let key = "networkToken:\(network.rawValue):\(data.lastFour):\(data.expiration)"
            var response = ResponseCode.approved
            if let expiry = expiryDate(data.expiration), expiry < today {
                response = .expiredCard
            } else if expiryDate(data.expiration) == nil {
                response = .expiredCard
            } else if data.cryptogram.isEmpty {
                response = .doNotHonor
            }
            return ResolvedCard(
                accountKey: key,
                network: network,
                fundingType: .credit,
                lastFour: data.lastFour,
                issuerResponse: response
            )
        }
    }

    static func luhnValid(_ digits: [UInt8]) -> Bool {
        var sum = 0
        for (index, byte) in digits.reversed().enumerated() {
            var digit = Int(byte - 0x30)
            if index % 2 == 1 {
                digit *= 2
                if digit > 9 { digit -= 9 }
            }
            sum += digit
        }
        return sum % 10 == 0
    }

    /// Network from the number's prefix (IIN ranges, simplified to what the model needs).
    static func network(ofNumber digits: [UInt8]) -> CardNetwork? {
        let prefix = digits.prefix(6).reduce(0) { $0 * 10 + Int($1 - 0x30) }
        let two = prefix / 10_000
        let four = prefix / 100
        switch true {
        case digits.first == 0x34: return .visa
        case (51...55).contains(two) || (222_100...272_099).contains(prefix): return .mastercard
        case two == 34 || two == 37: return .amex
        case four == 6011 || two == 65 || (644...649).contains(prefix / 1000): return .discover
        default: return nil
        }
    }

    /// The last day of validity of a `YYMMDD` expiration (cards are valid through the given day).
    static func expiryDate(_ text: String) -> BusinessDate? {
        guard text.utf8.count == 6, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let yy = Int(text.prefix(2)), let mm = Int(text.dropFirst(2).prefix(2)), let dd = Int(text.suffix(2))
        else {
            return nil
        }
        return BusinessDate(year: 2000 + yy, month: mm, day: dd)
    }
}
