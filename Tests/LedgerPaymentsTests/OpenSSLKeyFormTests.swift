import Crypto
import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import Testing

/// Apple's instructions make the payment processing key with `openssl ecparam -name prime256v1 -genkey`,
/// which writes an `EC PARAMETERS` block before the `EC PRIVATE KEY` block. Such a file is accepted as it
/// is; a parameters block naming another curve is refused plainly; and a token encrypted for another
/// merchant identifier says that this is the likely cause.
struct OpenSSLKeyFormTests {
    /// Written by `openssl ecparam -name prime256v1 -genkey` (OpenSSL 3), a key for these tests only.
    static let appleForm = """
        -----BEGIN EC PARAMETERS-----
        BggqhkjOPQMBBw==
        -----END EC PARAMETERS-----
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIETSIbizAIU81RQNIyur5XRYl2V5BD1fvvTtRuM8oaYmoAoGCCqGSM49
        AwEHoUQDQgAE4em29buJWYRs24vWZDWpJP/t0ufBu62lrYoVewFWpAz8bxX0SfiJ
        3Z5D4Tc9YhXe0jp1W/D1ySHCJ5dP1b/DeQ==
        -----END EC PRIVATE KEY-----

        """

    /// The same key without the parameters block.
    static var keyOnly: String { String(appleForm[appleForm.range(of: "-----BEGIN EC PRIVATE KEY-----")!.lowerBound...]) }

    @Test func theKeyOpenSSLWritesWithItsParametersBlockIsAccepted() throws {
        // swift-crypto alone reads only the first block of the file.
        #expect((try? P256.KeyAgreement.PrivateKey(pemRepresentation: Self.appleForm)) == nil)
        let loaded = try ApplePayMerchantKey.loadPrivateKey(pem: Self.appleForm)
        let reference = try P256.KeyAgreement.PrivateKey(pemRepresentation: Self.keyOnly)
        #expect(loaded.p256Key()?.rawRepresentation == reference.rawRepresentation)
        let key = try ApplePayMerchantKey.fromPEM(privateKeyPEM: Self.appleForm, merchantIdentifier: "merchant.com.example.ledger")
        #expect(key.publicKeyHash == Array(SHA256.hash(data: reference.publicKey.derRepresentation)))
    }

    @Test func aTokenForTheOpenSSLKeyDecrypts() async throws {
        let pki = try TestPKI()
        let reference = try P256.KeyAgreement.PrivateKey(pemRepresentation: Self.keyOnly)
        let merchant = try TestMerchant.ec(keyBytes: Array(reference.rawRepresentation))
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        let key = try ApplePayMerchantKey.fromPEM(privateKeyPEM: Self.appleForm, merchantIdentifier: merchant.merchantIdentifier)
        let verifier = ApplePayTokenVerifier(configuration: ApplePayMerchantConfiguration(merchantKeys: [key], trustedRoots: [pki.root]))
        let payment = try await verifier.verifyAndDecrypt(token, now: testNow)
        #expect(payment.transactionAmount == 12345)
    }

    @Test func aParametersBlockForAnotherCurveIsRefusedPlainly() {
        // `openssl ecparam -name secp384r1` writes these parameters.
        let p384 = Self.appleForm.replacingOccurrences(of: "BggqhkjOPQMBBw==", with: "BgUrgQQAIg==")
        let error = failure { () throws(ApplePayError) in _ = try ApplePayMerchantKey.loadPrivateKey(pem: p384) }
        #expect(error?.code == .invalidPrivateKey)
        #expect(error?.message.contains("prime256v1") == true, "\(String(describing: error))")
        let certificate = Self.appleForm + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        #expect(failure { () throws(ApplePayError) in _ = try ApplePayMerchantKey.loadPrivateKey(pem: certificate) }?.code == .invalidPrivateKey)
    }

    @Test func aWrongMerchantIdentifierIsNamedAsTheLikelyCause() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        // The key is right (the token names it), the identifier is not the one the token was made for.
        let rawKey = try #require(try merchant.merchantKey().privateKey.p256Key())
        let key = ApplePayMerchantKey(privateKey: .ec(rawKey), merchantIdentifier: "merchant.com.example.other")
        let verifier = ApplePayTokenVerifier(configuration: ApplePayMerchantConfiguration(merchantKeys: [key], trustedRoots: [pki.root]))
        let verified = try await verifier.verify(token, now: testNow)
        let error = failure { () throws(ApplePayError) in try verified.decrypt() }
        #expect(error?.code == .decryptionFailed)
        #expect(
            error?.message.contains("the merchant identifier is most likely not the one the token was made for") == true,
            "\(String(describing: error))"
        )
        #expect(error?.message.contains("LEDGERD_APPLEPAY_MERCHANT_ID") == true)
    }
}
