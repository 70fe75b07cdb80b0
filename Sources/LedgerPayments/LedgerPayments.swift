/// `LedgerPayments`: Apple Pay payment-token verification and decryption for the order ledger.
///
/// Pure by design — no I/O, no global mutable state, no wall clock (every time-dependent call takes `now`) —
/// so the ledger can replay and test it deterministically. (A verifier remembers the certificate chains it
/// verified, to skip re-verifying Apple's unchanged chain for every token; that memo never changes a result.) Entry points: ``ApplePayToken`` (parse),
/// ``ApplePayTokenVerifier`` (verify), ``VerifiedApplePayToken/decrypt()`` / ``ApplePayDecryptor`` (decrypt),
/// ``ApplePayPaymentData/redactedSummary`` (what may be stored), ``ApplePayInspector`` (the CLI's inspector),
/// all failing with one ``ApplePayError``.
///
/// Why SwiftASN1 + swift-crypto + swift-certificates rather than the system OpenSSL (`PKCS7_verify`,
/// `ECDH_compute_key`, `EVP_aes_256_gcm`): the CMS work Apple Pay needs is small (one detached SignedData,
/// one signer, three attributes), and doing it in Swift means memory-safe parsing of attacker-supplied
/// bytes, typed errors instead of OpenSSL's error queue, no C shim target or `libssl-dev` build dependency,
/// and the same code on Linux and macOS. swift-crypto already vendors BoringSSL for the primitives (ECDH,
/// AES-GCM, RSA-OAEP, ECDSA), so the cryptography is still a mature C implementation; swift-certificates
/// supplies RFC 5280 chain building. OpenSSL's `PKCS7_verify` would also have needed wrapping to enforce
/// Apple's specifics (marker OIDs, signing-time freshness, signing-time chain validation), so it would not
/// have saved the policy code either.
public enum LedgerPayments {
    /// The token versions this module accepts.
    public static let supportedVersions: [ApplePayToken.Version] = [.ecV1, .rsaV1]
}
