import Crypto
import Foundation
import LedgerMacros

/// An Apple Pay payment token: the `paymentData` object of a `PKPaymentToken`, exactly as the app sends it.
///
/// Fields are kept as the strings Apple sends (base64 and hex) so the value round-trips and can be logged
/// or stored without loss; ``decodedFields()`` turns them into bytes, which is where malformed input is
/// rejected. `version` is kept as a string so an unknown version is reported as `unsupported_version`
/// rather than as a generic decoding failure.
@MemberwiseInit
public struct ApplePayToken: Sendable, Hashable, Codable {
    /// The token versions this module understands.
    public enum Version: String, Sendable, Hashable, Codable {
        /// Elliptic curve: ECDH P-256 with an ephemeral key, then AES-256-GCM.
        case ecV1 = "EC_v1"
        /// RSA: an AES-128 key wrapped with RSA-OAEP-SHA256, then AES-128-GCM.
        case rsaV1 = "RSA_v1"
    }

    /// The token's `header` object.
    @MemberwiseInit
    public struct Header: Sendable, Hashable, Codable {
        /// Base64 DER SubjectPublicKeyInfo of the ephemeral P-256 key (EC_v1 only).
        public var ephemeralPublicKey: String?
        /// Base64 RSA-OAEP-wrapped symmetric key (RSA_v1 only).
        public var wrappedKey: String?
        /// Base64 SHA-256 of the merchant public key's DER SubjectPublicKeyInfo.
        public var publicKeyHash: String
        /// Hex transaction identifier generated on the device.
        public var transactionId: String
        /// Hex SHA-256 of the app's applicationData, when the app supplied some.
        public var applicationData: String?
    }

    /// `EC_v1` or `RSA_v1` as sent; see ``parsedVersion()``.
    public var version: String
    /// Base64 ciphertext followed by the 16-byte GCM tag.
    public var data: String
    /// Base64 detached CMS SignedData (PKCS #7).
    public var signature: String
    public var header: Header

    // MARK: Parsing

    /// Decodes a token from JSON. Accepts either the `paymentData` object itself or a whole
    /// `PKPaymentToken`-shaped object that wraps it under `"paymentData"`.
    public static func parse(json: Data) throws(ApplePayError) -> ApplePayToken {
        let decoder = JSONDecoder()
        do {
            // The bare paymentData first: it is what apps send, and each attempt parses the whole JSON.
            if let token = try? decoder.decode(ApplePayToken.self, from: json) {
                return token
            }
            return try decoder.decode(Wrapper.self, from: json).paymentData
        } catch {
            // The decoder's own description may quote input; keep the message generic.
            throw ApplePayError(.malformedToken, "The token is not a JSON object with version, data, signature and header.")
        }
    }

    /// Decodes a token given as a base64 string of its JSON (how some gateways and apps forward it).
    public static func parse(base64: String) throws(ApplePayError) -> ApplePayToken {
        guard let json = Base64.decode(base64) else {
            throw ApplePayError(.malformedToken, "The token is not valid base64.")
        }
        return try parse(json: Data(json))
    }

    /// Decodes a token that is either JSON or base64 of JSON, deciding by the first non-blank byte.
    public static func parse(jsonOrBase64 input: Data) throws(ApplePayError) -> ApplePayToken {
        let firstByte = input.first { !(($0 == 0x20) || ($0 == 0x0A) || ($0 == 0x0D) || ($0 == 0x09)) }
        if firstByte == UInt8(ascii: "{") {
            return try parse(json: input)
        }
        guard let text = String(bytes: input, encoding: .utf8) else {
            throw ApplePayError(.malformedToken, "The token is neither JSON nor base64 text.")
        }
        return try parse(base64: text)
    }

    private struct Wrapper: Decodable {
        var paymentData: ApplePayToken
    }

    /// The version as an enum, or `unsupported_version`.
    public func parsedVersion() throws(ApplePayError) -> Version {
        guard let parsed = Version(rawValue: version) else {
            throw ApplePayError(.unsupportedVersion, "Token version is not EC_v1 or RSA_v1.")
        }
        return parsed
    }

    // MARK: Decoded bytes

    /// The token's fields decoded to bytes and checked for shape.
    public struct DecodedFields: Sendable, Hashable {
        public var version: Version
        /// Ciphertext followed by the GCM tag.
        public var data: [UInt8]
        /// DER/BER of the CMS ContentInfo.
        public var signature: [UInt8]
        /// The ephemeral public key (EC_v1) or the wrapped key (RSA_v1), as decoded bytes.
        public var keyMaterial: [UInt8]
        public var publicKeyHash: [UInt8]
        public var transactionId: [UInt8]
        public var applicationDataHash: [UInt8]?

        /// The transaction id as lowercase hex of the signed bytes. Hex decoding accepts either case, so two
        /// spellings of one id verify alike; replay detection must key on this canonical form.
        public var canonicalTransactionId: String { Hex.encode(transactionId) }

        /// The bytes the CMS signature covers: ephemeralPublicKey (or wrappedKey) ‖ data ‖ transactionId ‖
        /// applicationData, all decoded.
        public var signedContent: [UInt8] {
            keyMaterial + data + transactionId + (applicationDataHash ?? [])
        }
    }

    /// Decodes every base64/hex field, rejecting missing or malformed ones with `malformed_token` and an
    /// unknown version with `unsupported_version`.
    public func decodedFields() throws(ApplePayError) -> DecodedFields {
        let version = try parsedVersion()
        let keyField: String?
        let keyFieldName: String
        switch version {
        case .ecV1:
            keyField = header.ephemeralPublicKey
            keyFieldName = "header.ephemeralPublicKey"
        case .rsaV1:
            keyField = header.wrappedKey
            keyFieldName = "header.wrappedKey"
        }
        guard let keyField else {
            throw ApplePayError(.malformedToken, "\(keyFieldName) is required for \(version.rawValue).")
        }
        let keyMaterial = try Self.base64Field(keyField, name: keyFieldName)
        let data = try Self.base64Field(self.data, name: "data")
        // The GCM tag alone is 16 bytes; anything shorter cannot be a ciphertext.
        guard data.count > 16 else {
            throw ApplePayError(.malformedToken, "data is too short to hold a ciphertext and its GCM tag.")
        }
        let signature = try Self.base64Field(self.signature, name: "signature")
        let publicKeyHash = try Self.base64Field(header.publicKeyHash, name: "header.publicKeyHash")
        guard publicKeyHash.count == SHA256.byteCount else {
            throw ApplePayError(.malformedToken, "header.publicKeyHash is not a SHA-256 hash.")
        }
        guard let transactionId = Hex.decode(header.transactionId), !transactionId.isEmpty else {
            throw ApplePayError(.malformedToken, "header.transactionId is not non-empty hex.")
        }
        var applicationDataHash: [UInt8]? = nil
        if let applicationData = header.applicationData {
            guard let bytes = Hex.decode(applicationData), bytes.count == SHA256.byteCount else {
                throw ApplePayError(.malformedToken, "header.applicationData is not a hex SHA-256 hash.")
            }
            applicationDataHash = bytes
        }
        return DecodedFields(
            version: version,
            data: data,
            signature: signature,
            keyMaterial: keyMaterial,
            publicKeyHash: publicKeyHash,
            transactionId: transactionId,
            applicationDataHash: applicationDataHash
        )
    }

    private static func base64Field(_ value: String, name: String) throws(ApplePayError) -> [UInt8] {
        guard let bytes = Base64.decode(value), !bytes.isEmpty else {
            throw ApplePayError(.malformedToken, "\(name) is not non-empty base64.")
        }
        return bytes
    }

    // MARK: Application data

    /// Checks the applicationData the app sent alongside the token (e.g. the order id it committed to):
    /// SHA-256 of `applicationData` must equal `header.applicationData`.
    ///
    /// Pass `nil` when the app sent none; then the token must not carry a hash either. A token that carries a
    /// hash while the app sent nothing, or the reverse, is `application_data_missing`; differing hashes are
    /// `application_data_mismatch`. The comparison is on the hash, which is public, so constant time is not
    /// needed.
    public func verifyApplicationData<Bytes: DataProtocol>(_ applicationData: Bytes?) throws(ApplePayError) {
        switch (header.applicationData, applicationData) {
        case (nil, nil):
            return
        case (nil, .some):
            throw ApplePayError(.applicationDataMissing, "The app sent applicationData but the token carries no hash of it.")
        case (.some, nil):
            throw ApplePayError(.applicationDataMissing, "The token commits to applicationData but none was supplied.")
        case (.some(let hex), .some(let bytes)):
            guard let expected = Hex.decode(hex), expected.count == SHA256.byteCount else {
                throw ApplePayError(.malformedToken, "header.applicationData is not a hex SHA-256 hash.")
            }
            guard Array(SHA256.hash(data: Array(bytes))) == expected else {
                throw ApplePayError(.applicationDataMismatch, "SHA-256 of the supplied applicationData does not match the token.")
            }
        }
    }

    /// Convenience for the common case where the app sent no applicationData.
    public func verifyNoApplicationData() throws(ApplePayError) {
        try verifyApplicationData(Optional<[UInt8]>.none)
    }
}

/// Strict hex decoding (either case, even length, no separators).
enum Hex {
    static func decode(_ string: String) -> [UInt8]? {
        let utf8 = Array(string.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Base64 decoding that tolerates ASCII whitespace and line breaks (PEM-style wrapping) but nothing else.
///
/// Works on the UTF-8 bytes: filtering the `String` by `Character.isWhitespace` (Unicode properties per
/// grapheme) was a quarter of the time a whole token takes to verify and decrypt, for a 5 KB signature.
enum Base64 {
    static func decode(_ string: String) -> [UInt8]? {
        var bytes = Array(string.utf8)
        bytes.removeAll { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 == 0x0B || $0 == 0x0C }
        guard !bytes.isEmpty, let data = Data(base64Encoded: Data(bytes)) else { return nil }
        return Array(data)
    }
}
