import Crypto
import Foundation
import _CryptoExtras

/// Decrypts the `data` field of an Apple Pay token with a merchant key.
///
/// - EC_v1: ECDH P-256 between the merchant private key and `ephemeralPublicKey` gives Z; the AES-256 key is
///   one SHA-256 over `00 00 00 01 ‖ Z ‖ 0x0D ‖ "id-aes256-GCM" ‖ "Apple" ‖ merchantIdentifierHash` (NIST SP
///   800-56A concatenation KDF). swift-crypto's `x963DerivedSymmetricKey` hashes `Z ‖ counter ‖ info`, i.e.
///   puts the counter *after* Z, and so derives a different key; the one-block KDF is written out here.
/// - RSA_v1: `wrappedKey` is unwrapped with RSA-OAEP (SHA-256, MGF1-SHA-256) to a 16-byte AES-128 key.
/// - Both: AES-GCM with a 16-byte all-zero IV and a 16-byte tag at the end of `data`. swift-crypto's
///   `AES.GCM.Nonce(data:)` accepts any length ≥ 12 and BoringSSL runs GCM's GHASH-based IV derivation for
///   non-96-bit IVs, so the 16-byte IV is passed as is (the public vector confirms the result). The fixed IV is
///   safe only because every token uses a fresh key.
///
/// This does not verify the signature: use ``ApplePayTokenVerifier`` first (``VerifiedApplePayToken/decrypt()``).
public enum ApplePayDecryptor {
    /// `0x0D ‖ "id-aes256-GCM"`: the KDF's AlgorithmID (length-prefixed).
    static let algorithmID: [UInt8] = [0x0D] + Array("id-aes256-GCM".utf8)
    /// `"Apple"`: the KDF's PartyUInfo.
    static let partyUInfo: [UInt8] = Array("Apple".utf8)
    static let zeroIV = [UInt8](repeating: 0, count: 16)

    /// Decrypts `token` with `key`, which must be the key `header.publicKeyHash` names (not checked here).
    public static func decrypt(_ token: ApplePayToken, using key: ApplePayMerchantKey) throws(ApplePayError) -> ApplePayPaymentData {
        try decrypt(fields: token.decodedFields(), using: key)
    }

    static func decrypt(
        fields: ApplePayToken.DecodedFields,
        using key: ApplePayMerchantKey
    ) throws(ApplePayError) -> ApplePayPaymentData {
        let symmetricKey: SymmetricKey
        switch (fields.version, key.privateKey.kind) {
        case (.ecV1, .ec):
            guard let privateKey = key.privateKey.p256Key() else {
                throw ApplePayError(.invalidPrivateKey, "The configured P-256 key cannot be loaded.")
            }
            let z = try ecdhSharedSecret(privateKey: privateKey, ephemeralPublicKeyDER: fields.keyMaterial)
            symmetricKey = deriveKey(sharedSecret: z, merchantIdentifierHash: key.merchantIdentifierHash)
        case (.rsaV1, .rsa):
            guard let privateKey = key.privateKey.rsaKey() else {
                throw ApplePayError(.invalidPrivateKey, "The configured RSA key cannot be loaded.")
            }
            symmetricKey = try unwrapKey(privateKey: privateKey, wrappedKey: fields.keyMaterial)
        case (.ecV1, .rsa), (.rsaV1, .ec):
            throw ApplePayError(.merchantKeyTypeMismatch, "The merchant key type does not match the token version \(fields.version.rawValue).")
        }
        let plaintext: [UInt8]
        do throws(ApplePayError) {
            plaintext = try open(ciphertextAndTag: fields.data, key: symmetricKey)
        } catch  where fields.version == .ecV1 && error.code == .decryptionFailed {
            // The token names this key (header.publicKeyHash), so the ECDH secret is the right one; the only
            // other input of the key derivation is the merchant identifier's hash.
            throw ApplePayError(
                .decryptionFailed,
                "AES-GCM authentication failed although the token was encrypted to this key: the merchant identifier "
                    + "is most likely not the one the token was made for (the key derivation uses the SHA-256 of the "
                    + "merchant identifier; this key uses \(Hex.encode(key.merchantIdentifierHash))). Check "
                    + "LEDGERD_APPLEPAY_MERCHANT_ID, or the payment processing certificate configured with the key. "
                    + "If the identifier is right, the token's data was altered."
            )
        }
        return try ApplePayPaymentData.parse(plaintext: plaintext, transactionId: fields.canonicalTransactionId)
    }

    /// ECDH P-256 shared secret Z (the x-coordinate, 32 bytes). Public so test vectors can check it.
    public static func ecdhSharedSecret(
        privateKey: P256.KeyAgreement.PrivateKey,
        ephemeralPublicKeyDER: [UInt8]
    ) throws(ApplePayError) -> [UInt8] {
        let ephemeral: P256.KeyAgreement.PublicKey
        do {
            ephemeral = try P256.KeyAgreement.PublicKey(derRepresentation: ephemeralPublicKeyDER)
        } catch {
            throw ApplePayError(.malformedToken, "header.ephemeralPublicKey is not a P-256 SubjectPublicKeyInfo.")
        }
        do {
            let secret = try privateKey.sharedSecretFromKeyAgreement(with: ephemeral)
            return secret.withUnsafeBytes { Array($0) }
        } catch {
            throw ApplePayError(.decryptionFailed, "ECDH key agreement failed.")
        }
    }

    /// The EC_v1 key: SHA-256(00000001 ‖ Z ‖ 0x0D ‖ "id-aes256-GCM" ‖ "Apple" ‖ merchantIdentifierHash).
    public static func deriveKey(sharedSecret: [UInt8], merchantIdentifierHash: [UInt8]) -> SymmetricKey {
        var hasher = SHA256()
        hasher.update(data: [0x00, 0x00, 0x00, 0x01])
        hasher.update(data: sharedSecret)
        hasher.update(data: algorithmID)
        hasher.update(data: partyUInfo)
        hasher.update(data: merchantIdentifierHash)
        return SymmetricKey(data: hasher.finalize())
    }

    /// The RSA_v1 key: RSA-OAEP-SHA256 unwrap of `wrappedKey`, which must yield an AES-128 key.
    public static func unwrapKey(privateKey: _RSA.Encryption.PrivateKey, wrappedKey: [UInt8]) throws(ApplePayError) -> SymmetricKey {
        let unwrapped: Data
        do {
            unwrapped = try privateKey.decrypt(wrappedKey, padding: .PKCS1_OAEP_SHA256)
        } catch {
            throw ApplePayError(.decryptionFailed, "RSA-OAEP unwrapping of header.wrappedKey failed.")
        }
        guard unwrapped.count == 16 else {
            throw ApplePayError(.decryptionFailed, "The unwrapped key is not an AES-128 key.")
        }
        return SymmetricKey(data: unwrapped)
    }

    /// AES-GCM open with the all-zero 16-byte IV; `ciphertextAndTag` ends with the 16-byte tag.
    public static func open(ciphertextAndTag: [UInt8], key: SymmetricKey) throws(ApplePayError) -> [UInt8] {
        guard ciphertextAndTag.count >= 16 else {
            throw ApplePayError(.decryptionFailed, "The ciphertext is shorter than a GCM tag.")
        }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: zeroIV),
                ciphertext: ciphertextAndTag.dropLast(16),
                tag: ciphertextAndTag.suffix(16)
            )
            return Array(try AES.GCM.open(box, using: key))
        } catch {
            throw ApplePayError(.decryptionFailed, "AES-GCM authentication failed: wrong key or altered data.")
        }
    }
}
