import Crypto
import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import SwiftASN1
import Testing
import X509
import _CryptoExtras

/// Loading merchant keys and certificates from PEM, and the merchant identifier extension.
struct ConfigurationTests {
    @Test func loadsECKeysInPKCS8AndSEC1() throws {
        let key = P256.KeyAgreement.PrivateKey()
        #expect(key.pemRepresentation.contains("BEGIN PRIVATE KEY"))
        let pkcs8 = try ApplePayMerchantKey.fromPEM(privateKeyPEM: key.pemRepresentation, merchantIdentifier: "merchant.a")
        #expect(pkcs8.privateKey.kind == .ec)
        #expect(pkcs8.publicKeyHash == Array(SHA256.hash(data: key.publicKey.derRepresentation)))
        #expect(pkcs8.merchantIdentifierHash == Array(SHA256.hash(data: Array("merchant.a".utf8))))

        let sec1PEM = try VectorFiles.string("payu-ec-v1/private_key.pem")
        #expect(sec1PEM.contains("BEGIN EC PRIVATE KEY"))
        #expect(try ApplePayMerchantKey.fromPEM(privateKeyPEM: sec1PEM, merchantIdentifier: "m").privateKey.kind == .ec)
    }

    @Test func loadsRSAKeysInPKCS1AndPKCS8() throws {
        let der = try #require(RSAKeys.merchantA)
        let key = try _RSA.Encryption.PrivateKey(derRepresentation: der)
        #expect(key.pemRepresentation.contains("BEGIN RSA PRIVATE KEY"))
        #expect(key.pkcs8PEMRepresentation.contains("BEGIN PRIVATE KEY"))
        for pem in [key.pemRepresentation, key.pkcs8PEMRepresentation] {
            let loaded = try ApplePayMerchantKey.fromPEM(privateKeyPEM: pem, merchantIdentifier: "merchant.a")
            #expect(loaded.privateKey.kind == .rsa)
            #expect(loaded.publicKeyHash == Array(SHA256.hash(data: key.publicKey.derRepresentation)))
        }
    }

    @Test func rejectsBadPrivateKeys() {
        for pem in [
            "", "not a pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            P384.KeyAgreement.PrivateKey().pemRepresentation,
        ] {
            let error = failure { () throws(ApplePayError) in try ApplePayMerchantKey.fromPEM(privateKeyPEM: pem, merchantIdentifier: "m") }
            #expect(error?.code == .invalidPrivateKey)
        }
    }

    @Test func merchantIdentifierHashComesFromTheCertificate() throws {
        for merchant in [try TestMerchant.ec("merchant.com.example.one"), try TestMerchant.rsa("merchant.com.example.two")] {
            let pem = try merchant.certificate.serializeAsPEM().pemString
            let privatePEM: String
            switch try merchant.privateKey.kind {
            case .ec: privatePEM = try P256.KeyAgreement.PrivateKey(rawRepresentation: merchant.keyBytes).pemRepresentation
            case .rsa: privatePEM = try _RSA.Encryption.PrivateKey(derRepresentation: merchant.keyBytes).pemRepresentation
            }
            let key = try ApplePayMerchantKey.fromPEM(privateKeyPEM: privatePEM, certificatePEM: pem, merchantIdentifier: "ignored")
            #expect(key.merchantIdentifierHash == merchant.merchantIdentifierHash)
        }
    }

    @Test func rejectsUnusableMerchantCertificates() throws {
        let merchant = try TestMerchant.ec()
        // A certificate for some other key.
        let other = try TestMerchant.ec()
        let privateKey = try merchant.privateKey
        #expect(
            failure { () throws(ApplePayError) in try ApplePayMerchantKey(privateKey: privateKey, certificate: other.certificate) }?.code
                == .invalidConfiguration
        )
        // A certificate without the merchant identifier extension.
        let caKey = P256.Signing.PrivateKey()
        let plain = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: Certificate.PublicKey(
                try P256.Signing.PublicKey(
                    rawRepresentation: P256.KeyAgreement.PrivateKey(rawRepresentation: merchant.keyBytes).publicKey.rawRepresentation
                )
            ),
            notValidBefore: TestPKI.date(2024),
            notValidAfter: TestPKI.date(2030),
            issuer: try DistinguishedName { CommonName("CA") },
            subject: try DistinguishedName { CommonName("M") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions(),
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        let error = failure { () throws(ApplePayError) in try ApplePayMerchantKey(privateKey: privateKey, certificate: plain) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("1.2.840.113635.100.6.32") == true)
        // Neither certificate nor identifier.
        let pem = try P256.KeyAgreement.PrivateKey(rawRepresentation: merchant.keyBytes).pemRepresentation
        #expect(failure { () throws(ApplePayError) in try ApplePayMerchantKey.fromPEM(privateKeyPEM: pem) }?.code == .invalidConfiguration)
        #expect(failure { () throws(ApplePayError) in try ApplePayPEM.certificate("garbage") }?.code == .invalidCertificate)
        #expect(failure { () throws(ApplePayError) in try ApplePayPEM.certificates("") }?.code == .invalidCertificate)
    }

    @Test func emptyRootsAreAConfigurationError() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        let verifier = ApplePayTokenVerifier(configuration: .init(merchantKeys: [try merchant.merchantKey()], trustedRoots: []))
        #expect(await failure { () async throws(ApplePayError) in try await verifier.verify(token, now: testNow) }?.code == .invalidConfiguration)
    }

    @Test func rootBundleLoadsSeveralCertificates() throws {
        let a = try TestPKI().root.serializeAsPEM().pemString
        let b = try VectorFiles.string("AppleRootCA-G3.pem")
        #expect(try ApplePayPEM.certificates(a + "\n" + b).count == 2)
    }
}
