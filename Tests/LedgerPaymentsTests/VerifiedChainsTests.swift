import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import SwiftASN1
import Testing
import X509

/// The verifier remembers chains that verified; a remembered chain must never accept what verifying it
/// again would refuse.
struct VerifiedChainsTests {
    func verifier(_ pki: TestPKI, _ merchant: TestMerchant) throws -> ApplePayTokenVerifier {
        ApplePayTokenVerifier(
            configuration: ApplePayMerchantConfiguration(
                merchantKeys: [try merchant.merchantKey()],
                trustedRoots: [pki.root]
            )
        )
    }

    func code(_ verifier: ApplePayTokenVerifier, _ token: ApplePayToken, now: Date = testNow) async -> ApplePayError.Code? {
        await failure { () async throws(ApplePayError) in try await verifier.verifyAndDecrypt(token, now: now) }?.code
    }

    /// `certificate` with the last byte of its DER (inside the outer signature) flipped: same to-be-signed part.
    func withAlteredSignature(_ certificate: Certificate) throws -> Certificate {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        var bytes = serializer.serializedBytes
        bytes[bytes.count - 1] ^= 0x01
        let altered = try Certificate(derEncoded: bytes)
        #expect(altered.tbsCertificateBytes == certificate.tbsCertificateBytes && altered != certificate)
        return altered
    }

    @Test func aRememberedChainStillNeedsIdenticalCertificates() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let verifier = try verifier(pki, merchant)
        #expect(await code(verifier, try TokenFactory.make(pki: pki, merchant: merchant)) == nil)
        #expect(await code(verifier, try TokenFactory.make(pki: pki, merchant: merchant)) == nil)  // remembered

        // Same to-be-signed leaf (or intermediate), altered signature: refused, warm as cold.
        for forged in [
            pki.presenting(leaf: try withAlteredSignature(pki.leaf)),
            pki.presenting(intermediate: try withAlteredSignature(pki.intermediate)),
        ] {
            let token = try TokenFactory.make(pki: forged, merchant: merchant)
            #expect(await code(verifier, token) == .untrustedChain)
            #expect(await code(try self.verifier(pki, merchant), token) == .untrustedChain)
        }
        #expect(await code(verifier, try TokenFactory.make(pki: pki, merchant: merchant)) == nil)
    }

    @Test func aRememberedChainCountsOnlyWhileItsRootIsConfigured() async throws {
        let pki = try TestPKI()
        let merchant = try TestMerchant.ec()
        let verifier = try verifier(pki, merchant)
        let token = try TokenFactory.make(pki: pki, merchant: merchant)
        #expect(await code(verifier, token) == nil)
        var reconfigured = verifier  // shares the remembered chains
        reconfigured.configuration.trustedRoots = [try TestPKI().root]
        #expect(await code(reconfigured, token) == .untrustedChain)
        #expect(await code(verifier, token) == nil)
    }

    @Test func timeIsCheckedForEveryTokenOfARememberedChain() async throws {
        var options = TestPKI.Options()
        options.leafValidity = (TestPKI.date(2022), testNow.addingTimeInterval(3_600))
        let pki = try TestPKI(options)
        let merchant = try TestMerchant.ec()
        let verifier = try verifier(pki, merchant)
        #expect(await code(verifier, try TokenFactory.make(pki: pki, merchant: merchant)) == nil)
        var later = TokenSpec()
        later.signingTime = testNow.addingTimeInterval(7_200)
        #expect(
            await code(
                verifier,
                try TokenFactory.make(pki: pki, merchant: merchant, spec: later),
                now: later.signingTime
            ) == .certificateExpired
        )
        var stale = TokenSpec()
        stale.signingTime = testNow.addingTimeInterval(-600)
        #expect(await code(verifier, try TokenFactory.make(pki: pki, merchant: merchant, spec: stale)) == .signingTimeStale)
    }
}
