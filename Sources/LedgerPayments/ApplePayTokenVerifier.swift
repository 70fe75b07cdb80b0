import Crypto
import Foundation
import LedgerMacros
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Verifies an Apple Pay payment token the way Apple's "Payment token format reference" asks a merchant
/// server to, with the clock injected: it never reads the wall clock.
///
/// Checks, in order (the first failure is reported):
/// 1. token shape: version, base64/hex fields (`malformed_token`, `unsupported_version`);
/// 2. CMS structure: detached SignedData, one signer, SHA-256, signed content-type/message-digest/signing-time
///    (`malformed_signature`, `missing_signed_attribute`, `unsupported_algorithm`);
/// 3. message digest = SHA-256(ephemeralPublicKey|wrappedKey ‖ data ‖ transactionId ‖ applicationData)
///    (`message_digest_mismatch`), then the signature over the DER signed attributes with the signing
///    certificate's key, ECDSA P-256/SHA-256 or RSA PKCS#1 v1.5/SHA-256 (`signature_invalid`);
/// 4. Apple marker extensions: 1.2.840.113635.100.6.29 on the leaf and 1.2.840.113635.100.6.2.14 on the
///    intermediate that issued it (`missing_marker_oid`);
/// 5. validity periods of leaf and intermediate at the signing time **and** at `now`
///    (`certificate_expired`, `certificate_not_yet_valid`);
/// 6. the chain to a configured root, with swift-certificates' `Verifier` (`untrusted_chain`);
/// 7. freshness: |now − signingTime| ≤ tolerance (`signing_time_stale`, `signing_time_in_future`);
/// 8. `publicKeyHash` selects a configured merchant key (`unknown_merchant_key`).
///
/// Chain validation: the chain is built and checked by swift-certificates' `Verifier` with `RFC5280Policy`
/// fixed at the signing time (name chaining, issuer signatures, basic constraints, name constraints, critical
/// extensions, validity), plus a policy demanding exactly leaf → intermediate → root with the Apple markers.
/// Using the library rather than hand-written checks keeps RFC 5280's corner cases out of this module; the
/// price is that `Verifier.validate` is `async`, so ``verify(_:now:)`` is too. Validity is additionally checked
/// by hand (step 5) before chain building, for two reasons: the library reports failures as free text, and
/// the error code must say *expired*; and the time that matters to a merchant is `now` as well as the signing
/// time — a token signed by a certificate that has since expired (such as Apple's public 2018 sandbox sample
/// verified today) is rejected as `certificate_expired`, while at its signing time it verifies. Because the
/// freshness window is minutes, checking at both times costs nothing for genuine tokens.
///
/// Chains that verified are remembered (``VerifiedChains``): every token of a period is signed by the same
/// Apple leaf and intermediate, so the next token with byte-identical certificates skips the intermediate search
/// and the `Verifier` (three of the four ECDSA verifications a token costs). Everything that depends on the
/// token or on time — the CMS signature, the digest, the markers, validity at the signing time and now,
/// freshness — is still checked for every token, and a remembered chain counts only while its root is configured.
///
/// Replay (a `transactionId` seen before) is not checked here: the module is pure and has no memory of tokens.
/// The ledger must reject a verified token whose ``VerifiedApplePayToken/transactionId`` it has already recorded.
@MemberwiseInit
public struct ApplePayTokenVerifier: Sendable {
    public var configuration: ApplePayMerchantConfiguration
    /// Shared by copies of this verifier; entries are checked against `configuration` on use.
    private let verifiedChains = VerifiedChains()

    /// Verifies `token` as of `now` and returns it with the merchant key that decrypts it.
    public func verify(_ token: ApplePayToken, now: Date) async throws(ApplePayError) -> VerifiedApplePayToken {
        guard !configuration.trustedRoots.isEmpty else {
            throw ApplePayError(.invalidConfiguration, "No trusted root certificate is configured.")
        }
        let fields = try token.decodedFields()
        let cms = try CMSSignedData.parse(fields.signature)
        let signer = cms.signer

        // 3. Digest and signature.
        guard let leaf = cms.signerCertificate else {
            throw ApplePayError(.malformedSignature, "The signature does not carry the signer's certificate.")
        }
        guard Array(SHA256.hash(data: fields.signedContent)) == signer.messageDigest else {
            throw ApplePayError(
                .messageDigestMismatch,
                "The signed message digest does not match the token's key, data, transactionId and applicationData."
            )
        }
        let algorithm: Certificate.SignatureAlgorithm
        switch signer.signatureAlgorithm {
        case OIDs.ecdsaWithSHA256: algorithm = .ecdsaWithSHA256
        case OIDs.sha256WithRSAEncryption, OIDs.rsaEncryption: algorithm = .sha256WithRSAEncryption
        default: throw ApplePayError(.unsupportedAlgorithm, "The CMS signature algorithm is not ECDSA or RSA with SHA-256.")
        }
        guard leaf.publicKey.isValidSignature(signer.signature, for: signer.signedAttributesDER, signatureAlgorithm: algorithm) else {
            throw ApplePayError(.signatureInvalid, "The CMS signature does not verify with the signing certificate.")
        }

        // 4. Marker extensions on the leaf and on the intermediate that actually issued it.
        guard leaf.extensions[oid: OIDs.appleLeafMarker] != nil else {
            throw ApplePayError(.missingMarkerOID, "The signing certificate lacks the Apple Pay leaf marker 1.2.840.113635.100.6.29.")
        }
        // A chain verified before: the same leaf, its intermediate among the token's certificates, its root configured.
        let remembered = verifiedChains.chain(for: leaf).flatMap { chain -> VerifiedChains.Chain? in
            guard cms.certificates.contains(chain.intermediate), configuration.trustedRoots.contains(chain.root) else { return nil }
            return chain
        }
        guard
            let intermediate = remembered?.intermediate
                ?? cms.certificates.first(where: { candidate in
                    candidate != leaf && candidate.subject == leaf.issuer
                        && candidate.publicKey.isValidSignature(leaf.signature, for: leaf)
                })
        else {
            throw ApplePayError(.untrustedChain, "The signature does not carry the intermediate certificate that issued the signing certificate.")
        }
        guard intermediate.extensions[oid: OIDs.appleIntermediateMarker] != nil else {
            throw ApplePayError(.missingMarkerOID, "The intermediate certificate lacks the Apple marker 1.2.840.113635.100.6.2.14.")
        }

        // 5. Validity at the signing time and now.
        let signingTime = signer.signingTime
        for (certificate, role) in [(leaf, "signing"), (intermediate, "intermediate")] {
            try Self.checkValidity(of: certificate, role: role, at: signingTime, moment: "the signing time")
            try Self.checkValidity(of: certificate, role: role, at: now, moment: "verification time")
        }

        // 6. Chain to a trusted root, evaluated at the signing time.
        let root: Certificate
        if let remembered {
            // What the Verifier's RFC 5280 policy would still check for this chain: the root's validity then.
            guard remembered.root.notValidBefore <= signingTime, signingTime <= remembered.root.notValidAfter else {
                throw ApplePayError(.untrustedChain, "The signing certificate does not chain to a trusted root.")
            }
            root = remembered.root
        } else {
            var verifier = Verifier(rootCertificates: CertificateStore(configuration.trustedRoots)) {
                RFC5280Policy(fixedExpiryValidationTime: signingTime)
                ApplePayChainPolicy()
            }
            let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(cms.certificates))
            guard case .validCertificate(let chain) = result else {
                throw ApplePayError(.untrustedChain, "The signing certificate does not chain to a trusted root.")
            }
            root = chain.root
            let chainIntermediate = chain.count == 3 ? chain[1] : intermediate
            verifiedChains.remember(VerifiedChains.Chain(leaf: leaf, intermediate: chainIntermediate, root: root))
        }
        try Self.checkValidity(of: root, role: "root", at: now, moment: "verification time")

        // 7. Freshness.
        let age = now.timeIntervalSince(signingTime)
        if age > configuration.signingTimeTolerance {
            throw ApplePayError(
                .signingTimeStale,
                "The token was signed \(Int(age)) s before verification; at most \(Int(configuration.signingTimeTolerance)) s is allowed."
            )
        }
        if -age > configuration.signingTimeTolerance {
            throw ApplePayError(
                .signingTimeInFuture,
                "The token's signing time is \(Int(-age)) s after verification time; at most \(Int(configuration.signingTimeTolerance)) s is allowed."
            )
        }

        // 8. Merchant key.
        guard let merchantKey = configuration.merchantKey(forPublicKeyHash: fields.publicKeyHash) else {
            throw ApplePayError(.unknownMerchantKey, "header.publicKeyHash matches none of the configured merchant keys.")
        }
        return VerifiedApplePayToken(
            token: token,
            fields: fields,
            signingTime: signingTime,
            merchantKey: merchantKey,
            signerCertificate: leaf
        )
    }

    /// Verifies, checks the app's applicationData (pass `nil` if the app sent none) and decrypts.
    public func verifyAndDecrypt<Bytes: DataProtocol>(
        _ token: ApplePayToken,
        applicationData: Bytes?,
        now: Date
    ) async throws(ApplePayError) -> ApplePayPaymentData {
        let verified = try await verify(token, now: now)
        try token.verifyApplicationData(applicationData)
        return try verified.decrypt()
    }

    /// Verifies and decrypts a token for which the app sent no applicationData.
    public func verifyAndDecrypt(_ token: ApplePayToken, now: Date) async throws(ApplePayError) -> ApplePayPaymentData {
        try await verifyAndDecrypt(token, applicationData: Optional<[UInt8]>.none, now: now)
    }

    private static func checkValidity(of certificate: Certificate, role: String, at time: Date, moment: String) throws(ApplePayError) {
        if time > certificate.notValidAfter {
            throw ApplePayError(
                .certificateExpired,
                "The \(role) certificate expired on \(isoString(certificate.notValidAfter)), before \(moment) \(isoString(time))."
            )
        }
        if time < certificate.notValidBefore {
            throw ApplePayError(
                .certificateNotYetValid,
                "The \(role) certificate is valid only from \(isoString(certificate.notValidBefore)), after \(moment) \(isoString(time))."
            )
        }
    }

    private static func isoString(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }
}

/// A token that passed ``ApplePayTokenVerifier/verify(_:now:)``, with the merchant key that decrypts it.
public struct VerifiedApplePayToken: Sendable {
    public let token: ApplePayToken
    public let fields: ApplePayToken.DecodedFields
    /// The CMS signing time.
    public let signingTime: Date
    /// The configured key `header.publicKeyHash` selected.
    public let merchantKey: ApplePayMerchantKey
    /// Apple's signing (leaf) certificate.
    public let signerCertificate: Certificate

    /// The token's transaction id as canonical lowercase hex, for the ledger's replay check.
    public var transactionId: String { fields.canonicalTransactionId }

    /// Decrypts the payment data with the selected merchant key.
    public func decrypt() throws(ApplePayError) -> ApplePayPaymentData {
        try ApplePayDecryptor.decrypt(fields: fields, using: merchantKey)
    }
}

/// Chain shape Apple Pay requires: leaf (marker …6.29) → intermediate (marker …6.2.14) → root.
/// Applied to every candidate chain the `Verifier` builds, so a chain through some other intermediate that
/// happens to be in the certificate set cannot satisfy verification.
struct ApplePayChainPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [OIDs.appleLeafMarker, OIDs.appleIntermediateMarker]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard certificates.count == 3 else {
            return .failsToMeetPolicy(reason: "Apple Pay chains are leaf, intermediate, root")
        }
        guard certificates[0].extensions[oid: OIDs.appleLeafMarker] != nil else {
            return .failsToMeetPolicy(reason: "leaf lacks 1.2.840.113635.100.6.29")
        }
        guard certificates[1].extensions[oid: OIDs.appleIntermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "intermediate lacks 1.2.840.113635.100.6.2.14")
        }
        return .meetsPolicy
    }
}

/// Leaf → intermediate → root chains that passed the `Verifier`, by leaf. A chain is used again only for a
/// leaf and intermediate identical to the verified ones (`Certificate` equality is byte equality of the
/// to-be-signed part, signature algorithm and signature), so a remembered chain proves exactly what verifying
/// it again would. Bounded: past ``limit`` leaves it starts afresh.
final class VerifiedChains: Sendable {
    struct Chain: Sendable {
        let leaf: Certificate
        let intermediate: Certificate
        let root: Certificate
    }

    static let limit = 64
    private let chains = Mutex<[Certificate: Chain]>([:])

    func chain(for leaf: Certificate) -> Chain? {
        chains.withLock { $0[leaf] }
    }

    func remember(_ chain: Chain) {
        chains.withLock { chains in
            if chains.count >= Self.limit { chains.removeAll(keepingCapacity: true) }
            chains[chain.leaf] = chain
        }
    }
}
