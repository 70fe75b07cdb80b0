import Foundation
import LedgerMacros

/// The decrypted Apple Pay payment data, typed, plus the token's transaction id.
///
/// This value carries cardholder data (the device PAN and the one-time cryptogram) so that the caller can
/// hand it to the processing network. It deliberately is **not** `Encodable`, and its `description`,
/// `debugDescription` and reflection (`dump`, `print`, string interpolation, logging) are redacted: PAN
/// masked to its last four digits, cryptogram and EMV data omitted. What the ledger may store or print is
/// ``redactedSummary``.
@MemberwiseInit
public struct ApplePayPaymentData: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// `paymentDataType` as Apple sends it.
    public enum PaymentDataType: String, Sendable, Hashable, Codable {
        case threeDSecure = "3DSecure"
        case emv = "EMV"
    }

    /// The type-specific payment data.
    public enum Details: Sendable, Hashable {
        /// 3-D Secure: the online payment cryptogram (base64) and optional ECI indicator.
        case threeDSecure(onlinePaymentCryptogram: String, eciIndicator: String?)
        /// EMV: the EMV data (base64) and optional encrypted PIN data (hex).
        case emv(emvData: String, encryptedPINData: String?)
    }

    /// Device (tokenized) PAN. Cardholder data: never log or store it; use ``last4``.
    public let applicationPrimaryAccountNumber: String
    /// Card expiration as `YYMMDD`.
    public let applicationExpirationDate: String
    /// ISO 4217 numeric currency code, e.g. `"840"`.
    public let currencyCode: String
    /// Amount in the currency's minor units (an integer, never floating point).
    public let transactionAmount: Int
    /// Cardholder name, when the payload carries one.
    public let cardholderName: String?
    /// Hex identifier of the device manufacturer.
    public let deviceManufacturerIdentifier: String
    public let paymentDataType: PaymentDataType
    public let details: Details
    /// The token header's transaction id as canonical lowercase hex; the ledger uses it to reject replays.
    public let transactionId: String

    /// The last four digits of the device PAN.
    public var last4: String { String(applicationPrimaryAccountNumber.suffix(4)) }

    /// The ECI indicator, for 3-D Secure payloads that carry one.
    public var eciIndicator: String? {
        if case .threeDSecure(_, let eci) = details { return eci }
        return nil
    }

    /// The card network, derived from the device PAN's leading digits (network-assigned token BIN ranges);
    /// `nil` when the range is not one of the major networks.
    public var network: CardNetwork? { CardNetwork(pan: applicationPrimaryAccountNumber) }

    /// What may be stored and printed: no PAN beyond its last four digits, no cryptogram.
    public var redactedSummary: RedactedSummary {
        RedactedSummary(
            last4: last4,
            expirationDate: applicationExpirationDate,
            currencyCode: currencyCode,
            transactionAmount: transactionAmount,
            paymentDataType: paymentDataType.rawValue,
            eciIndicator: eciIndicator,
            transactionId: transactionId,
            network: network?.rawValue
        )
    }

    public var description: String {
        "ApplePayPaymentData(pan: ••••\(last4), expiry: \(applicationExpirationDate), currency: \(currencyCode), "
            + "amount: \(transactionAmount), type: \(paymentDataType.rawValue), eci: \(eciIndicator ?? "none"), "
            + "cryptogram: <redacted>, transactionId: \(transactionId))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "pan": "••••\(last4)",
                "applicationExpirationDate": applicationExpirationDate,
                "currencyCode": currencyCode,
                "transactionAmount": transactionAmount,
                "paymentDataType": paymentDataType.rawValue,
                "eciIndicator": eciIndicator ?? "none",
                "paymentData": "<redacted>",
                "transactionId": transactionId,
            ],
            displayStyle: .struct
        )
    }

    /// The storable, printable projection of a payment: safe for events, logs and the inspect tool.
    @MemberwiseInit
    public struct RedactedSummary: Sendable, Hashable, Codable {
        public var last4: String
        /// `YYMMDD`.
        public var expirationDate: String
        /// ISO 4217 numeric.
        public var currencyCode: String
        /// Minor units.
        public var transactionAmount: Int
        /// `3DSecure` or `EMV`.
        public var paymentDataType: String
        public var eciIndicator: String?
        public var transactionId: String
        /// `visa`, `mastercard`, … when derivable.
        public var network: String?

        /// Pretty, key-sorted JSON (stable output for the inspect tool and for golden tests).
        public func prettyJSON() -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            // Encoding a struct of strings and integers cannot fail; fall back to an empty object regardless.
            guard let data = try? encoder.encode(self) else { return "{}" }
            return String(decoding: data, as: UTF8.self)
        }
    }

    // MARK: Decoding the plaintext

    /// Parses decrypted plaintext. Errors describe the shape only, never the values.
    static func parse(plaintext: [UInt8], transactionId: String) throws(ApplePayError) -> ApplePayPaymentData {
        let raw: RawPayload
        do {
            raw = try JSONDecoder().decode(RawPayload.self, from: Data(plaintext))
        } catch {
            throw ApplePayError(
                .malformedPaymentData,
                "The decrypted payment data is not the documented JSON (or transactionAmount is not an integer)."
            )
        }
        let pan = raw.applicationPrimaryAccountNumber
        guard (12...19).contains(pan.count), pan.allSatisfy(\.isASCIIDigit) else {
            throw ApplePayError(.malformedPaymentData, "applicationPrimaryAccountNumber is not 12 to 19 digits.")
        }
        guard raw.applicationExpirationDate.count == 6, raw.applicationExpirationDate.allSatisfy(\.isASCIIDigit) else {
            throw ApplePayError(.malformedPaymentData, "applicationExpirationDate is not YYMMDD.")
        }
        guard raw.currencyCode.count == 3, raw.currencyCode.allSatisfy(\.isASCIIDigit) else {
            throw ApplePayError(.malformedPaymentData, "currencyCode is not an ISO 4217 numeric code.")
        }
        guard raw.transactionAmount >= 0 else {
            throw ApplePayError(.malformedPaymentData, "transactionAmount is negative.")
        }
        guard let type = PaymentDataType(rawValue: raw.paymentDataType) else {
            throw ApplePayError(.malformedPaymentData, "paymentDataType is neither 3DSecure nor EMV.")
        }
        let details: Details
        switch type {
        case .threeDSecure:
            guard let cryptogram = raw.paymentData.onlinePaymentCryptogram, !cryptogram.isEmpty else {
                throw ApplePayError(.malformedPaymentData, "3DSecure payment data lacks onlinePaymentCryptogram.")
            }
            details = .threeDSecure(onlinePaymentCryptogram: cryptogram, eciIndicator: raw.paymentData.eciIndicator)
        case .emv:
            guard let emvData = raw.paymentData.emvData, !emvData.isEmpty else {
                throw ApplePayError(.malformedPaymentData, "EMV payment data lacks emvData.")
            }
            details = .emv(emvData: emvData, encryptedPINData: raw.paymentData.encryptedPINData)
        }
        return ApplePayPaymentData(
            applicationPrimaryAccountNumber: pan,
            applicationExpirationDate: raw.applicationExpirationDate,
            currencyCode: raw.currencyCode,
            transactionAmount: raw.transactionAmount,
            cardholderName: raw.cardholderName,
            deviceManufacturerIdentifier: raw.deviceManufacturerIdentifier,
            paymentDataType: type,
            details: details,
            transactionId: transactionId
        )
    }

    /// The plaintext as Apple documents it. `transactionAmount` decodes as `Int`, so a fractional or
    /// out-of-range number is rejected instead of being rounded through floating point.
    private struct RawPayload: Decodable {
        struct PaymentData: Decodable {
            var onlinePaymentCryptogram: String?
            var eciIndicator: String?
            var emvData: String?
            var encryptedPINData: String?
        }
        var applicationPrimaryAccountNumber: String
        var applicationExpirationDate: String
        var currencyCode: String
        var transactionAmount: Int
        var cardholderName: String?
        var deviceManufacturerIdentifier: String
        var paymentDataType: String
        var paymentData: PaymentData
    }
}

/// Card networks recognisable from a (device) PAN's leading digits.
public enum CardNetwork: String, Sendable, Hashable, Codable {
    case visa, mastercard, amex, discover, jcb

    /// Classifies by IIN range; `nil` for anything else.
    public init?(pan: String) {
        let digits = Array(pan.prefix(4)).compactMap(\.wholeNumberValue)
        guard digits.count == 4 else { return nil }
        let two = digits[0] * 10 + digits[1]
        let three = two * 10 + digits[2]
        let four = three * 10 + digits[3]
        switch true {
        case digits[0] == 4: self = .visa
        case (51...55).contains(two), (2221...2720).contains(four): self = .mastercard
        case two == 34, two == 37: self = .amex
        case four == 6011, two == 65, (644...649).contains(three): self = .discover
        case (3528...3589).contains(four): self = .jcb
        default: return nil
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
