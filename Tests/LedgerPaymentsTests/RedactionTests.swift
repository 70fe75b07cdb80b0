import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import Testing

/// Cardholder data must not leak through any textual form of the payment or through errors.
struct RedactionTests {
    func payment() async throws -> ApplePayPaymentData {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        let verifier = ApplePayTokenVerifier(
            configuration: .init(merchantKeys: [try merchant.merchantKey()], trustedRoots: [pki.root])
        )
        return try await verifier.verifyAndDecrypt(token, now: testNow)
    }

    @Test func everyTextualFormIsRedacted() async throws {
        let payment = try await payment()
        var dumped = ""
        dump(payment, to: &dumped)
        let forms = [
            payment.description, payment.debugDescription, "\(payment)", String(describing: payment),
            String(reflecting: payment), dumped, "\([payment])", "\(Optional(payment) as Any)",
        ]
        for form in forms {
            #expect(!form.contains(TokenSpec.defaultPAN), "\(form)")
            #expect(!form.contains("411111111111"), "\(form)")
            #expect(!form.contains(TokenSpec.defaultCryptogram), "\(form)")
            #expect(form.contains("1111"), "\(form)")
        }
    }

    @Test func redactedSummaryHasNoCardholderData() async throws {
        let payment = try await payment()
        let summary = payment.redactedSummary
        #expect(
            summary
                == ApplePayPaymentData.RedactedSummary(
                    last4: "1111",
                    expirationDate: "281231",
                    currencyCode: "840",
                    transactionAmount: 12345,
                    paymentDataType: "3DSecure",
                    eciIndicator: "7",
                    transactionId: payment.transactionId,
                    network: "visa"
                )
        )
        let json = summary.prettyJSON()
        #expect(!json.contains(TokenSpec.defaultPAN))
        #expect(!json.contains(TokenSpec.defaultCryptogram))
        #expect(try JSONDecoder().decode(ApplePayPaymentData.RedactedSummary.self, from: Data(json.utf8)) == summary)
        #expect(json.contains("\"transactionAmount\" : 12345"))
    }

    @Test func merchantKeyDescriptionShowsNoKeyMaterial() throws {
        let merchant = try TestMerchant.ec()
        let key = try merchant.merchantKey()
        var dumped = ""
        dump(key, to: &dumped)
        var dumpedPrivateKey = ""
        dump(key.privateKey, to: &dumpedPrivateKey)
        let keyBase64 = Data(merchant.keyBytes).base64EncodedString()
        let keyHex = hexString(merchant.keyBytes)
        for form in [key.description, String(reflecting: key), dumped] {
            #expect(!form.contains(keyBase64) && !form.contains(keyHex))
            #expect(form.contains(Data(key.publicKeyHash).base64EncodedString()))
        }
        for form in [dumpedPrivateKey, String(reflecting: key.privateKey), "\(key.privateKey)"] {
            #expect(!form.contains(keyBase64) && !form.contains(keyHex) && !form.contains("keyBytes"))
            #expect(form.contains("EC"))
        }
    }

    @Test func errorsNeverCarryCardholderData() async throws {
        // A payload that decrypts but is rejected still must not echo the PAN or cryptogram.
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.payloadJSON = TokenSpec.defaultPayload.replacingOccurrences(of: "12345", with: "12.5")
        let token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
        let verifier = ApplePayTokenVerifier(
            configuration: .init(merchantKeys: [try merchant.merchantKey()], trustedRoots: [pki.root])
        )
        let error = try #require(await failure { () async throws(ApplePayError) in try await verifier.verifyAndDecrypt(token, now: testNow) })
        #expect(error.code == .malformedPaymentData)
        for text in [error.message, error.description, String(reflecting: error)] {
            #expect(!text.contains(TokenSpec.defaultPAN) && !text.contains(TokenSpec.defaultCryptogram))
        }
    }

    @Test func errorCodesAreStable() {
        let codes: [ApplePayError.Code] = [
            .malformedToken, .unsupportedVersion, .malformedSignature, .missingSignedAttribute, .unsupportedAlgorithm,
            .messageDigestMismatch, .signatureInvalid, .missingMarkerOID, .certificateExpired, .certificateNotYetValid,
            .untrustedChain, .signingTimeStale, .signingTimeInFuture, .unknownMerchantKey, .merchantKeyTypeMismatch,
            .decryptionFailed, .malformedPaymentData, .applicationDataMismatch, .applicationDataMissing,
            .invalidPrivateKey, .invalidCertificate, .invalidConfiguration,
        ]
        #expect(
            codes.map(\.rawValue) == [
                "malformed_token", "unsupported_version", "malformed_signature", "missing_signed_attribute",
                "unsupported_algorithm", "message_digest_mismatch", "signature_invalid", "missing_marker_oid",
                "certificate_expired", "certificate_not_yet_valid", "untrusted_chain", "signing_time_stale",
                "signing_time_in_future", "unknown_merchant_key", "merchant_key_type_mismatch", "decryption_failed",
                "malformed_payment_data", "application_data_mismatch", "application_data_missing",
                "invalid_private_key", "invalid_certificate", "invalid_configuration",
            ]
        )
        #expect(ApplePayError(.signatureInvalid, "x").description == "signature_invalid: x")
    }
}
