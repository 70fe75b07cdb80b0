import Crypto
import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import Testing
import X509

/// Round trips and every rejection path, on tokens minted by the test-side factory and test CA.
struct GeneratedTokenTests {
    func verifier(_ pki: TestPKI, _ keys: [ApplePayMerchantKey], tolerance: TimeInterval = 300) -> ApplePayTokenVerifier {
        ApplePayTokenVerifier(
            configuration: ApplePayMerchantConfiguration(
                merchantKeys: keys,
                trustedRoots: [pki.root],
                signingTimeTolerance: tolerance
            )
        )
    }

    /// The error code of verify-and-decrypt, or nil on success.
    func outcome(
        _ token: ApplePayToken,
        _ pki: TestPKI,
        _ merchant: TestMerchant,
        now: Date = testNow
    ) async throws -> ApplePayError.Code? {
        let verifier = verifier(pki, [try merchant.merchantKey()])
        return await failure { () async throws(ApplePayError) in try await verifier.verifyAndDecrypt(token, now: now) }?.code
    }

    // MARK: Round trips

    @Test func ecV1RoundTrip() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        let payment = try await verifier(pki, [merchant.merchantKey()]).verifyAndDecrypt(token, now: testNow)
        #expect(payment.applicationPrimaryAccountNumber == TokenSpec.defaultPAN)
        #expect(payment.applicationExpirationDate == "281231")
        #expect(payment.currencyCode == "840")
        #expect(payment.transactionAmount == 12345)
        #expect(payment.deviceManufacturerIdentifier == "040010030273")
        #expect(payment.paymentDataType == .threeDSecure)
        #expect(payment.details == .threeDSecure(onlinePaymentCryptogram: TokenSpec.defaultCryptogram, eciIndicator: "7"))
        #expect(payment.transactionId == token.header.transactionId)
        #expect(payment.network == .visa)
    }

    @Test func rsaV1RoundTrip() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.rsa()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        #expect(token.version == "RSA_v1")
        #expect(token.header.wrappedKey != nil && token.header.ephemeralPublicKey == nil)
        let payment = try await verifier(pki, [merchant.merchantKey()]).verifyAndDecrypt(token, now: testNow)
        #expect(payment.transactionAmount == 12345)
        #expect(payment.details == .threeDSecure(onlinePaymentCryptogram: TokenSpec.defaultCryptogram, eciIndicator: "7"))
    }

    @Test func rsaSignedCMSVerifies() async throws {
        var options = TestPKI.Options()
        options.rsaLeaf = true
        let pki = try TestPKI(options)
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        #expect(try await outcome(token, pki, merchant) == nil)
        var spec = TokenSpec()
        spec.corruptSignatureValue = true
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .signatureInvalid)
    }

    @Test func emvPayloadAndCardholderName() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.payloadJSON = """
            {"applicationPrimaryAccountNumber":"5500005555555559","applicationExpirationDate":"300131","currencyCode":"978",\
            "transactionAmount":0,"cardholderName":"A Shopper","deviceManufacturerIdentifier":"050110030273",\
            "paymentDataType":"EMV","paymentData":{"emvData":"nZ8nAQ==","encryptedPINData":"abcd"}}
            """
        let payment = try await verifier(pki, [merchant.merchantKey()])
            .verifyAndDecrypt(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), now: testNow)
        #expect(payment.paymentDataType == .emv)
        #expect(payment.details == .emv(emvData: "nZ8nAQ==", encryptedPINData: "abcd"))
        #expect(payment.cardholderName == "A Shopper")
        #expect(payment.network == .mastercard)
        #expect(payment.eciIndicator == nil)
    }

    @Test func keyRotationPicksTheMatchingKey() async throws {
        let pki = try TestPKI()
        for (first, second) in [(try TestMerchant.ec(), try TestMerchant.ec()), (try TestMerchant.rsa(), try TestMerchant.rsa(second: true))] {
            let token = try TokenFactory.make(pki: pki, merchant: second)
            let verified = try await verifier(pki, [first.merchantKey(), second.merchantKey()]).verify(token, now: testNow)
            #expect(verified.merchantKey.publicKeyHash == (try second.merchantKey()).publicKeyHash)
            #expect(try verified.decrypt().transactionAmount == 12345)
            // Only the first (old) key configured: the token is for a key we do not hold.
            #expect(try await outcome(token, pki, first) == .unknownMerchantKey)
        }
    }

    @Test func transactionIdIsCanonicalLowercaseHex() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var token = try TokenFactory.make(pki: pki, merchant: merchant)
        let lower = token.header.transactionId
        token.header.transactionId = lower.uppercased()
        // Same signed bytes, so it verifies; but the id the ledger sees must not depend on the spelling,
        // or a re-cased replay would slip past the replay check.
        let verified = try await verifier(pki, [merchant.merchantKey()]).verify(token, now: testNow)
        #expect(verified.transactionId == lower)
        #expect(try verified.decrypt().transactionId == lower)
        #expect(try verified.decrypt().redactedSummary.transactionId == lower)
    }

    // MARK: Tampering

    @Test func tamperedDataIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var token = try TokenFactory.make(pki: pki, merchant: merchant)
        var data = bytes(base64: token.data)
        data[data.count - 1] ^= 0x01
        token.data = Data(data).base64EncodedString()
        #expect(try await outcome(token, pki, merchant) == .messageDigestMismatch)
    }

    @Test func tamperedEphemeralKeyIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var token = try TokenFactory.make(pki: pki, merchant: merchant)
        token.header.ephemeralPublicKey = P256.KeyAgreement.PrivateKey().publicKey.derRepresentation.base64EncodedString()
        #expect(try await outcome(token, pki, merchant) == .messageDigestMismatch)
    }

    @Test func tamperedWrappedKeyIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.rsa()
        var token = try TokenFactory.make(pki: pki, merchant: merchant)
        var wrapped = bytes(base64: try #require(token.header.wrappedKey))
        wrapped[5] ^= 0x80
        token.header.wrappedKey = Data(wrapped).base64EncodedString()
        #expect(try await outcome(token, pki, merchant) == .messageDigestMismatch)
    }

    @Test func tamperedTransactionIdIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var token = try TokenFactory.make(pki: pki, merchant: merchant)
        token.header.transactionId = hexString(SHA256.hash(data: Array("txn-2".utf8)))
        #expect(try await outcome(token, pki, merchant) == .messageDigestMismatch)
    }

    @Test func tamperedApplicationDataHashIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.applicationData = Array("order-42".utf8)
        var token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
        token.header.applicationData = hexString(SHA256.hash(data: Array("order-43".utf8)))
        #expect(try await outcome(token, pki, merchant) == .messageDigestMismatch)
    }

    @Test func tamperedSignatureValueIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.corruptSignatureValue = true
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .signatureInvalid)
    }

    @Test func signatureByAnotherKeyIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.signWithForeignKey = true
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .signatureInvalid)
    }

    @Test func signatureFromAnotherTokenIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var token = try TokenFactory.make(pki: pki, merchant: merchant)
        var other = TokenSpec()
        other.transactionId = Array(repeating: 7, count: 32)
        token.signature = try TokenFactory.make(pki: pki, merchant: merchant, spec: other).signature
        #expect(try await outcome(token, pki, merchant) == .messageDigestMismatch)
    }

    // MARK: Keys

    @Test func wrongMerchantKeyIsRejected() async throws {
        let pki = try TestPKI()
        let token = try TokenFactory.make(pki: pki, merchant: try TestMerchant.ec())
        #expect(try await outcome(token, pki, try TestMerchant.ec()) == .unknownMerchantKey)
        #expect(try await outcome(token, pki, try TestMerchant.rsa()) == .unknownMerchantKey)
    }

    @Test func keyOfTheWrongTypeIsRejected() async throws {
        let pki = try TestPKI()
        let ecMerchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.publicKeyHashOverride = try ecMerchant.merchantKey().publicKeyHash
        let rsaToken = try TokenFactory.make(pki: pki, merchant: try TestMerchant.rsa(), spec: spec)
        #expect(try await outcome(rsaToken, pki, ecMerchant) == .merchantKeyTypeMismatch)
    }

    @Test func wrongMerchantIdentifierFailsDecryption() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.merchantIdentifierOverride = "merchant.com.someone.else"
        let token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
        let verifier = verifier(pki, [try merchant.merchantKey()])
        let verified = try await verifier.verify(token, now: testNow)  // the signature is fine
        #expect(failure { () throws(ApplePayError) in try verified.decrypt() }?.code == .decryptionFailed)
    }

    @Test func corruptedCiphertextUnderAValidSignatureFailsDecryption() async throws {
        let pki = try TestPKI()
        for merchant in [try TestMerchant.ec(), try TestMerchant.rsa()] {
            var spec = TokenSpec()
            spec.corruptCiphertextBeforeSigning = true
            let token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
            #expect(try await outcome(token, pki, merchant) == .decryptionFailed)
        }
    }

    @Test func malformedPlaintextIsReported() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let payloads = [
            TokenSpec.defaultPayload.replacingOccurrences(of: "12345", with: "123.45"),  // never a Double
            TokenSpec.defaultPayload.replacingOccurrences(of: "12345", with: "\"12345\""),
            TokenSpec.defaultPayload.replacingOccurrences(of: "3DSecure", with: "Magnetic"),
            TokenSpec.defaultPayload.replacingOccurrences(of: "\"onlinePaymentCryptogram\":\"AbCdEfGhIjKlMnOpQrStUvWxYz0=\",", with: ""),
            TokenSpec.defaultPayload.replacingOccurrences(of: "4111111111111111", with: "4111-1111"),
            TokenSpec.defaultPayload.replacingOccurrences(of: "\"840\"", with: "\"USD\""),
            "not json",
        ]
        for payload in payloads {
            var spec = TokenSpec()
            spec.payloadJSON = payload
            let code = try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant)
            #expect(code == .malformedPaymentData, "payload: \(payload.prefix(40))")
        }
    }

    // MARK: Chain

    @Test func missingLeafMarkerIsRejected() async throws {
        var options = TestPKI.Options()
        options.leafMarker = false
        let pki = try TestPKI(options)
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        let key = try merchant.merchantKey()
        let error = await failure { () async throws(ApplePayError) in try await verifier(pki, [key]).verify(token, now: testNow) }
        #expect(error?.code == .missingMarkerOID)
        #expect(error?.message.contains("1.2.840.113635.100.6.29") == true)
    }

    @Test func missingIntermediateMarkerIsRejected() async throws {
        var options = TestPKI.Options()
        options.intermediateMarker = false
        let pki = try TestPKI(options)
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        let key = try merchant.merchantKey()
        let error = await failure { () async throws(ApplePayError) in try await verifier(pki, [key]).verify(token, now: testNow) }
        #expect(error?.code == .missingMarkerOID)
        #expect(error?.message.contains("1.2.840.113635.100.6.2.14") == true)
    }

    @Test func untrustedRootIsRejected() async throws {
        let pki = try TestPKI()
        let otherPKI = try TestPKI()
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        #expect(try await outcome(token, otherPKI, merchant) == .untrustedChain)
        // Apple's real root does not anchor the test CA either.
        let production = ApplePayTokenVerifier(configuration: try .appleProduction(merchantKeys: [merchant.merchantKey()]))
        let error = await failure { () async throws(ApplePayError) in try await production.verify(token, now: testNow) }
        #expect(error?.code == .untrustedChain)
    }

    @Test func missingIntermediateIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.includeIntermediate = false
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .untrustedChain)
    }

    @Test func expiredCertificatesAreRejected() async throws {
        let merchant = try TestMerchant.ec()
        var leafExpired = TestPKI.Options()
        leafExpired.leafValidity = (TestPKI.date(2022), testNow.addingTimeInterval(-60))
        var intermediateExpired = TestPKI.Options()
        intermediateExpired.intermediateValidity = (TestPKI.date(2021), testNow.addingTimeInterval(-60))
        for options in [leafExpired, intermediateExpired] {
            let pki = try TestPKI(options)
            // Signed while still valid, verified (within the freshness window) after expiry.
            var spec = TokenSpec()
            spec.signingTime = testNow.addingTimeInterval(-120)
            let token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
            #expect(try await outcome(token, pki, merchant, now: testNow) == .certificateExpired)
            #expect(try await outcome(token, pki, merchant, now: testNow.addingTimeInterval(-90)) == nil)
        }
    }

    @Test func notYetValidCertificateIsRejected() async throws {
        var options = TestPKI.Options()
        options.leafValidity = (testNow.addingTimeInterval(60), TestPKI.date(2035))
        let pki = try TestPKI(options)
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        #expect(try await outcome(token, pki, merchant) == .certificateNotYetValid)
    }

    // MARK: Signing time

    @Test func staleAndFutureSigningTimesAreRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.signingTime = testNow.addingTimeInterval(-301)
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .signingTimeStale)
        spec.signingTime = testNow.addingTimeInterval(301)
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .signingTimeInFuture)
        spec.signingTime = testNow.addingTimeInterval(-300)
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == nil)
        spec.signingTime = testNow.addingTimeInterval(300)
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == nil)
    }

    @Test func toleranceIsConfigurable() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.signingTime = testNow.addingTimeInterval(-90)
        let token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
        let strict = verifier(pki, [try merchant.merchantKey()], tolerance: 60)
        #expect(await failure { () async throws(ApplePayError) in try await strict.verify(token, now: testNow) }?.code == .signingTimeStale)
    }

    @Test func missingSigningTimeIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.includeSigningTime = false
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .missingSignedAttribute)
    }

    @Test func nonSHA256DigestIsRejected() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        var spec = TokenSpec()
        spec.digestAlgorithm = [1, 3, 14, 3, 2, 26]  // SHA-1
        #expect(try await outcome(try TokenFactory.make(pki: pki, merchant: merchant, spec: spec), pki, merchant) == .unsupportedAlgorithm)
    }

    // MARK: Application data

    @Test func applicationDataIsChecked() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let appData = Array(#"{"orderId":"ord_42"}"#.utf8)
        var spec = TokenSpec()
        spec.applicationData = appData
        let token = try TokenFactory.make(pki: pki, merchant: merchant, spec: spec)
        let verifier = verifier(pki, [try merchant.merchantKey()])

        let payment = try await verifier.verifyAndDecrypt(token, applicationData: appData, now: testNow)
        #expect(payment.transactionAmount == 12345)
        #expect(
            await failure { () async throws(ApplePayError) in
                try await verifier.verifyAndDecrypt(token, applicationData: Array(#"{"orderId":"ord_43"}"#.utf8), now: testNow)
            }?.code == .applicationDataMismatch
        )
        #expect(
            await failure { () async throws(ApplePayError) in try await verifier.verifyAndDecrypt(token, now: testNow) }?.code
                == .applicationDataMissing
        )

        // And the reverse: the app claims applicationData the token never committed to.
        let plain = try TokenFactory.make(pki: pki, merchant: merchant)
        #expect(failure { () throws(ApplePayError) in try plain.verifyApplicationData(appData) }?.code == .applicationDataMissing)
        #expect(failure { () throws(ApplePayError) in try plain.verifyNoApplicationData() } == nil)
        #expect(failure { () throws(ApplePayError) in try token.verifyApplicationData(appData) } == nil)
    }
}
