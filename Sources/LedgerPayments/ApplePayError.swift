/// The single error type of `LedgerPayments`.
///
/// Every failure is reported as one `ApplePayError` carrying a stable, machine-readable ``code`` (what the
/// ledger records and what callers switch on) and a human ``message`` (what an operator reads).
/// Messages are written by this module only, never copied from the token: they never contain key material,
/// the device PAN, the cryptogram or decrypted bytes, so an error can be logged as-is.
public struct ApplePayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable machine-readable error code, e.g. `signature_invalid`. The raw strings are part of the API:
    /// they are stored in ledger events and must not change.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The token JSON, a base64/hex field, or a header field is missing or malformed.
        public static let malformedToken = Code(rawValue: "malformed_token")
        /// `version` is neither `EC_v1` nor `RSA_v1`.
        public static let unsupportedVersion = Code(rawValue: "unsupported_version")
        /// The CMS/PKCS #7 `signature` is not a well-formed detached SignedData.
        public static let malformedSignature = Code(rawValue: "malformed_signature")
        /// A signed attribute Apple always sends (content-type, message-digest, signing-time) is missing.
        public static let missingSignedAttribute = Code(rawValue: "missing_signed_attribute")
        /// The CMS uses a digest or signature algorithm this module does not accept.
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported_algorithm")
        /// The message-digest attribute does not match SHA-256 of the signed token fields (tampered token).
        public static let messageDigestMismatch = Code(rawValue: "message_digest_mismatch")
        /// The CMS signature over the signed attributes does not verify with the signing certificate.
        public static let signatureInvalid = Code(rawValue: "signature_invalid")
        /// The leaf or intermediate certificate lacks its Apple Pay marker extension.
        public static let missingMarkerOID = Code(rawValue: "missing_marker_oid")
        /// A chain certificate is past its notAfter at the signing time or at the verification time.
        public static let certificateExpired = Code(rawValue: "certificate_expired")
        /// A chain certificate is before its notBefore at the signing time or at the verification time.
        public static let certificateNotYetValid = Code(rawValue: "certificate_not_yet_valid")
        /// The signing certificate does not chain to a configured trusted root.
        public static let untrustedChain = Code(rawValue: "untrusted_chain")
        /// The CMS signing time is older than the freshness window allows.
        public static let signingTimeStale = Code(rawValue: "signing_time_stale")
        /// The CMS signing time is further in the future than the freshness window allows.
        public static let signingTimeInFuture = Code(rawValue: "signing_time_in_future")
        /// `header.publicKeyHash` matches none of the configured merchant keys.
        public static let unknownMerchantKey = Code(rawValue: "unknown_merchant_key")
        /// The matching merchant key is of the wrong type for the token version (EC vs RSA).
        public static let merchantKeyTypeMismatch = Code(rawValue: "merchant_key_type_mismatch")
        /// Key agreement, key unwrapping or AES-GCM authentication failed.
        public static let decryptionFailed = Code(rawValue: "decryption_failed")
        /// The decrypted plaintext is not the payment-data JSON Apple documents.
        public static let malformedPaymentData = Code(rawValue: "malformed_payment_data")
        /// The app-supplied applicationData does not hash to `header.applicationData`.
        public static let applicationDataMismatch = Code(rawValue: "application_data_mismatch")
        /// The token or the app did not supply applicationData while the other side did.
        public static let applicationDataMissing = Code(rawValue: "application_data_missing")
        /// A PEM private key could not be loaded.
        public static let invalidPrivateKey = Code(rawValue: "invalid_private_key")
        /// A PEM certificate could not be loaded.
        public static let invalidCertificate = Code(rawValue: "invalid_certificate")
        /// The merchant configuration is unusable (no keys, no roots, key/certificate mismatch, no identifier).
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
    }

    /// The stable machine-readable code.
    public let code: Code
    /// A human-readable explanation. Never contains key material or cardholder data.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
