import Crypto
import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import SwiftASN1
import Testing
import X509

/// The public PayU EC_v1 sample token (Apache-2.0), see Tests/Vectors/applepay/README.md.
struct PayUVectorTests {
    let token: ApplePayToken
    let expected: [String: Any]
    let key: ApplePayMerchantKey
    let root: Certificate
    let signingTime: Date

    init() throws {
        token = try ApplePayToken.parse(json: VectorFiles.data("payu-ec-v1/token.json"))
        expected = try VectorFiles.json("payu-ec-v1/expected.json")
        key = try ApplePayMerchantKey.fromPEM(
            privateKeyPEM: VectorFiles.string("payu-ec-v1/private_key.pem"),
            merchantIdentifier: expected["merchant_identifier_string"] as? String
        )
        root = try ApplePayPEM.certificate(VectorFiles.string("AppleRootCA-G3.pem"))
        signingTime = try utc("2018-01-26T13:55:18Z")
    }

    var verifier: ApplePayTokenVerifier {
        ApplePayTokenVerifier(configuration: ApplePayMerchantConfiguration(merchantKeys: [key], trustedRoots: [root]))
    }

    @Test func merchantIdentifierHashAndPublicKeyHashMatchTheVector() throws {
        #expect(hexString(key.merchantIdentifierHash).uppercased() == expected["merchant_identifier_hash_hex"] as? String)
        #expect(key.publicKeyHash == bytes(base64: token.header.publicKeyHash))
    }

    @Test func intermediatesMatch() throws {
        let fields = try token.decodedFields()
        let p256 = try #require(key.privateKey.p256Key())
        let z = try ApplePayDecryptor.ecdhSharedSecret(privateKey: p256, ephemeralPublicKeyDER: fields.keyMaterial)
        #expect(z == bytes(base64: try #require(expected["ecdh_shared_secret_b64"] as? String)))
        let derived = ApplePayDecryptor.deriveKey(sharedSecret: z, merchantIdentifierHash: key.merchantIdentifierHash)
        #expect(derived.withUnsafeBytes { Array($0) } == bytes(base64: try #require(expected["symmetric_key_b64"] as? String)))
    }

    @Test func x963HelperWouldDeriveADifferentKey() throws {
        // Documents why the KDF is hand-written: swift-crypto's X9.63 KDF puts the counter after Z.
        let z = bytes(base64: try #require(expected["ecdh_shared_secret_b64"] as? String))
        let ours = ApplePayDecryptor.deriveKey(sharedSecret: z, merchantIdentifierHash: key.merchantIdentifierHash)
        let expectedKey = bytes(base64: try #require(expected["symmetric_key_b64"] as? String))
        var x963 = SHA256()
        x963.update(data: z)
        x963.update(data: [0, 0, 0, 1])
        x963.update(data: [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + key.merchantIdentifierHash)
        #expect(Array(x963.finalize()) != expectedKey)
        #expect(ours.withUnsafeBytes { Array($0) } == expectedKey)
    }

    @Test func decryptsToTheExpectedPlaintext() throws {
        let payment = try ApplePayDecryptor.decrypt(token, using: key)
        let plaintext = try #require(expected["expected_plaintext"] as? [String: Any])
        let paymentData = try #require(plaintext["paymentData"] as? [String: Any])
        #expect(payment.applicationPrimaryAccountNumber == plaintext["applicationPrimaryAccountNumber"] as? String)
        #expect(payment.applicationExpirationDate == plaintext["applicationExpirationDate"] as? String)
        #expect(payment.currencyCode == plaintext["currencyCode"] as? String)
        #expect(payment.transactionAmount == plaintext["transactionAmount"] as? Int)
        #expect(payment.deviceManufacturerIdentifier == plaintext["deviceManufacturerIdentifier"] as? String)
        #expect(payment.paymentDataType == .threeDSecure)
        #expect(
            payment.details
                == .threeDSecure(
                    onlinePaymentCryptogram: try #require(paymentData["onlinePaymentCryptogram"] as? String),
                    eciIndicator: nil
                )
        )
        #expect(payment.transactionId == token.header.transactionId)
        #expect(payment.network == .mastercard)
        #expect(payment.last4 == "0010")
    }

    @Test func componentVectorsKDFAndAESGCM() throws {
        let vectors = try VectorFiles.json("payu-ec-v1/component_vectors.json")
        let kdf = try #require(vectors["kdf"] as? [String: Any])
        let otherInfo = bytes(base64: try #require(kdf["kdf_other_info_b64"] as? String))
        // OtherInfo = 0x0D ‖ "id-aes256-GCM" ‖ "Apple" ‖ hash: the last 32 bytes are the merchant identifier hash.
        #expect(Array(otherInfo.prefix(19)) == [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8))
        let derived = ApplePayDecryptor.deriveKey(
            sharedSecret: bytes(hex: try #require(kdf["shared_secret_hex"] as? String)),
            merchantIdentifierHash: Array(otherInfo.suffix(32))
        )
        #expect(derived.withUnsafeBytes { Array($0) } == bytes(base64: try #require(kdf["expected_symmetric_key_b64"] as? String)))

        let gcm = try #require(vectors["aes_gcm"] as? [String: Any])
        let plaintext = try ApplePayDecryptor.open(
            ciphertextAndTag: bytes(base64: try #require(gcm["ciphertext_and_tag_b64"] as? String)),
            key: SymmetricKey(data: bytes(base64: try #require(gcm["key_b64"] as? String)))
        )
        #expect(String(decoding: plaintext, as: UTF8.self) == gcm["expected_plaintext"] as? String)
    }

    @Test func verifiesAtItsSigningTime() async throws {
        let verified = try await verifier.verify(token, now: signingTime)
        #expect(verified.signingTime == signingTime)
        #expect(verified.transactionId == token.header.transactionId)
        #expect(verified.signerCertificate.extensions[oid: [1, 2, 840, 113635, 100, 6, 29]] != nil)
        let payment = try verified.decrypt()
        #expect(payment.transactionAmount == 100000)
        // The bundled root is the same certificate.
        let production = ApplePayTokenVerifier(configuration: try .appleProduction(merchantKeys: [key]))
        _ = try await production.verify(token, now: signingTime.addingTimeInterval(299))
    }

    @Test func failsTodayBecauseTheSigningCertificateExpired() async throws {
        // "Now" for this project: the sandbox leaf expired 2021-06-02, so the chain is rejected as expired
        // before freshness is even considered.
        let today = try utc("2026-11-21T12:00:00Z")
        let verifier = self.verifier
        let token = self.token
        #expect(await failure { () async throws(ApplePayError) in _ = try await verifier.verify(token, now: today) }?.code == .certificateExpired)
        // Just after the leaf's notAfter, the same.
        let error = await verifyError(now: try utc("2021-06-02T18:16:41Z"))
        #expect(error?.code == .certificateExpired)
        #expect(error?.message.contains("signing certificate expired") == true)
    }

    @Test func freshnessWindowIsFiveMinutesBothWays() async throws {
        #expect(await verifyError(now: signingTime.addingTimeInterval(300)) == nil)
        #expect(await verifyError(now: signingTime.addingTimeInterval(-300)) == nil)
        #expect(await verifyError(now: signingTime.addingTimeInterval(301))?.code == .signingTimeStale)
        #expect(await verifyError(now: signingTime.addingTimeInterval(-301))?.code == .signingTimeInFuture)
        #expect(await verifyError(now: signingTime.addingTimeInterval(86_400))?.code == .signingTimeStale)
    }

    @Test func inspectorPrintsOnlyTheRedactedSummary() async throws {
        let result = await ApplePayInspector.inspect(
            tokenJSON: try VectorFiles.data("payu-ec-v1/token.json"),
            privateKeyPEM: try VectorFiles.string("payu-ec-v1/private_key.pem"),
            certificatePEM: nil,
            merchantIdentifier: "merchant.sandbox.payu",
            rootPEM: try VectorFiles.string("AppleRootCA-G3.pem"),
            at: signingTime
        )
        let json = try result.get()
        let summary = try JSONDecoder().decode(ApplePayPaymentData.RedactedSummary.self, from: Data(json.utf8))
        #expect(
            summary
                == ApplePayPaymentData.RedactedSummary(
                    last4: "0010",
                    expirationDate: "190731",
                    currencyCode: "643",
                    transactionAmount: 100000,
                    paymentDataType: "3DSecure",
                    eciIndicator: nil,
                    transactionId: token.header.transactionId,
                    network: "mastercard"
                )
        )
        #expect(!json.contains("5204242750270010"))
        #expect(!json.contains("AOm+7lPDSbobAGVT7hmNAoABFA=="))

        let stale = await ApplePayInspector.inspect(
            tokenJSON: try VectorFiles.data("payu-ec-v1/token.json"),
            privateKeyPEM: try VectorFiles.string("payu-ec-v1/private_key.pem"),
            certificatePEM: nil,
            merchantIdentifier: "merchant.sandbox.payu",
            rootPEM: nil,
            at: try utc("2026-11-21T00:00:00Z")
        )
        #expect(failure { () throws(ApplePayError) in _ = try stale.get() }?.code == .certificateExpired)
    }

    @Test func bundledRootIsAppleRootCAG3() throws {
        let bundled = try ApplePayPEM.appleRootCAG3()
        #expect(bundled == root)
        var serializer = DER.Serializer()
        try serializer.serialize(bundled)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(fingerprint == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
    }

    @Test func acceptsBase64AndWrappedForms() throws {
        let json = try VectorFiles.data("payu-ec-v1/token.json")
        #expect(try ApplePayToken.parse(base64: json.base64EncodedString()) == token)
        #expect(try ApplePayToken.parse(jsonOrBase64: Data(json.base64EncodedString().utf8)) == token)
        let wrapped = Data(#"{"paymentData":"#.utf8) + json + Data(#", "transactionIdentifier":"x"}"#.utf8)
        #expect(try ApplePayToken.parse(json: wrapped) == token)
    }

    private func verifyError(now: Date) async -> ApplePayError? {
        do {
            _ = try await verifier.verify(token, now: now)
            return nil
        } catch {
            return error
        }
    }
}
