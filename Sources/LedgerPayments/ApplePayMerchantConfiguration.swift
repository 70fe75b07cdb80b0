import Crypto
import Foundation
import LedgerMacros
import SwiftASN1
import X509
import _CryptoExtras

/// One merchant payment-processing key: the private key that decrypts tokens plus the two values derived
/// from the merchant's identity that decryption and key selection need.
///
/// Apple lets a merchant hold several processing certificates at once (rotation); a configuration holds one
/// `ApplePayMerchantKey` per certificate and the token's `publicKeyHash` picks the one to use.
/// `description` and reflection show only the public key hash, never key material.
public struct ApplePayMerchantKey: Sendable, CustomStringConvertible, CustomReflectable {
    /// The private key; its type fixes which token version it can decrypt.
    ///
    /// swift-crypto 3.x key types are not `Sendable`, so the key is held as its serialized bytes (raw scalar
    /// for P-256, PKCS#1 DER for RSA) and re-materialized for each use; that costs microseconds per token and
    /// keeps the configuration a plain `Sendable` value that can be shared across tasks.
    public struct PrivateKey: Sendable, CustomStringConvertible, CustomReflectable {
        /// The key algorithm.
        public enum Kind: String, Sendable, Hashable {
            case ec = "EC"
            case rsa = "RSA"
        }

        public let kind: Kind
        private let keyBytes: [UInt8]
        /// DER SubjectPublicKeyInfo of the public half.
        public let subjectPublicKeyInfoDER: [UInt8]

        /// A P-256 key for `EC_v1` tokens.
        public static func ec(_ key: P256.KeyAgreement.PrivateKey) -> PrivateKey {
            PrivateKey(kind: .ec, keyBytes: Array(key.rawRepresentation), spki: Array(key.publicKey.derRepresentation))
        }

        /// An RSA key for `RSA_v1` tokens.
        public static func rsa(_ key: _RSA.Encryption.PrivateKey) -> PrivateKey {
            PrivateKey(kind: .rsa, keyBytes: Array(key.derRepresentation), spki: Array(key.publicKey.derRepresentation))
        }

        private init(kind: Kind, keyBytes: [UInt8], spki: [UInt8]) {
            self.kind = kind
            self.keyBytes = keyBytes
            self.subjectPublicKeyInfoDER = spki
        }

        /// The P-256 key, or `nil` for an RSA key.
        public func p256Key() -> P256.KeyAgreement.PrivateKey? {
            guard kind == .ec else { return nil }
            return try? P256.KeyAgreement.PrivateKey(rawRepresentation: keyBytes)
        }

        /// Never prints key material.
        public var description: String { "PrivateKey(\(kind.rawValue), <redacted>)" }

        public var customMirror: Mirror { Mirror(self, children: ["kind": kind.rawValue], displayStyle: .struct) }

        /// The RSA key, or `nil` for an EC key.
        public func rsaKey() -> _RSA.Encryption.PrivateKey? {
            guard kind == .rsa else { return nil }
            return try? _RSA.Encryption.PrivateKey(derRepresentation: keyBytes)
        }
    }

    public let privateKey: PrivateKey
    /// SHA-256 of the merchant identifier (32 bytes): the last part of the EC_v1 KDF's OtherInfo.
    public let merchantIdentifierHash: [UInt8]
    /// SHA-256 of the DER SubjectPublicKeyInfo of the public key: what `header.publicKeyHash` must equal.
    public let publicKeyHash: [UInt8]

    /// A key whose merchant identifier hash is read from the merchant certificate's extension
    /// 1.2.840.113635.100.6.32. The certificate's public key must be the public half of `privateKey`.
    public init(privateKey: PrivateKey, certificate: Certificate) throws(ApplePayError) {
        let certificateSPKI: [UInt8]
        do {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate.publicKey)
            certificateSPKI = serializer.serializedBytes
        } catch {
            throw ApplePayError(.invalidCertificate, "The merchant certificate's public key cannot be encoded.")
        }
        guard certificateSPKI == privateKey.subjectPublicKeyInfoDER else {
            throw ApplePayError(.invalidConfiguration, "The merchant certificate does not belong to the private key.")
        }
        guard let ext = certificate.extensions[oid: OIDs.merchantIdentifier] else {
            throw ApplePayError(
                .invalidConfiguration,
                "The merchant certificate lacks the merchant identifier extension 1.2.840.113635.100.6.32."
            )
        }
        guard let hash = Self.merchantIdentifierHash(fromExtensionValue: Array(ext.value)) else {
            throw ApplePayError(.invalidConfiguration, "The merchant identifier extension does not hold a hex SHA-256 hash.")
        }
        self.init(privateKey: privateKey, merchantIdentifierHash: hash)
    }

    /// A key for which no merchant certificate is at hand: the hash is SHA-256 of the merchant identifier
    /// string (e.g. `merchant.com.example`), which is what Apple puts in the certificate extension.
    public init(privateKey: PrivateKey, merchantIdentifier: String) {
        self.init(privateKey: privateKey, merchantIdentifierHash: Array(SHA256.hash(data: Array(merchantIdentifier.utf8))))
    }

    private init(privateKey: PrivateKey, merchantIdentifierHash: [UInt8]) {
        self.privateKey = privateKey
        self.merchantIdentifierHash = merchantIdentifierHash
        self.publicKeyHash = Array(SHA256.hash(data: privateKey.subjectPublicKeyInfoDER))
    }

    /// Loads a key from PEM. The private key may be PKCS#8 (`PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`) or
    /// PKCS#1 (`RSA PRIVATE KEY`); the merchant identifier hash comes from `certificatePEM` when given,
    /// otherwise from `merchantIdentifier`.
    public static func fromPEM(
        privateKeyPEM: String,
        certificatePEM: String? = nil,
        merchantIdentifier: String? = nil
    ) throws(ApplePayError) -> ApplePayMerchantKey {
        let key = try loadPrivateKey(pem: privateKeyPEM)
        if let certificatePEM {
            return try ApplePayMerchantKey(privateKey: key, certificate: ApplePayPEM.certificate(certificatePEM))
        }
        guard let merchantIdentifier, !merchantIdentifier.isEmpty else {
            throw ApplePayError(
                .invalidConfiguration,
                "A merchant certificate or a merchant identifier is needed to derive the merchant identifier hash."
            )
        }
        return ApplePayMerchantKey(privateKey: key, merchantIdentifier: merchantIdentifier)
    }

    /// Parses a PEM private key, trying P-256 first, then RSA. Errors never echo the PEM.
    ///
    /// Apple's instructions make the key with `openssl ecparam -name prime256v1 -genkey`, which writes an
    /// `EC PARAMETERS` block (the curve's OID) before the `EC PRIVATE KEY` block: the parameters are checked to
    /// name P-256 and the key block is read on its own.
    public static func loadPrivateKey(pem text: String) throws(ApplePayError) -> PrivateKey {
        let pem = try keyBlock(text)
        if let ec = try? P256.KeyAgreement.PrivateKey(pemRepresentation: pem) {
            return .ec(ec)
        }
        if let rsa = try? _RSA.Encryption.PrivateKey(pemRepresentation: pem) {
            return .rsa(rsa)
        }
        throw ApplePayError(.invalidPrivateKey, "The private key PEM is not a P-256 (PKCS#8 or SEC1) or RSA (PKCS#8 or PKCS#1) key.")
    }

    /// DER of the OID prime256v1 (1.2.840.10045.3.1.7), what `openssl ecparam -name prime256v1` writes.
    static let prime256v1Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    /// The PEM's private key block alone. An `EC PARAMETERS` block must name prime256v1; any other block
    /// besides one `… PRIVATE KEY` block is refused. A PEM without such a block is returned as it is (the
    /// parsers then say it is not a key).
    static func keyBlock(_ text: String) throws(ApplePayError) -> String {
        var keys: [String] = []
        var parameters: [[UInt8]] = []
        var label: String?
        var body = ""
        var blockLines: [String] = []
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            blockLines.append(line)
            if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                body = ""
                blockLines = [line]
            } else if line.hasPrefix("-----END "), line.hasSuffix("-----"), let open = label {
                guard String(line.dropFirst(9).dropLast(5)) == open else {
                    throw ApplePayError(.invalidPrivateKey, "The private key PEM has a BEGIN \(open) block without its END line.")
                }
                if open == "EC PARAMETERS" {
                    guard let der = Data(base64Encoded: body) else {
                        throw ApplePayError(.invalidPrivateKey, "The EC PARAMETERS block of the private key PEM is not base64.")
                    }
                    parameters.append(Array(der))
                } else if open.hasSuffix("PRIVATE KEY") {
                    // The block as written (the parsers want its 64-column lines).
                    keys.append(blockLines.joined(separator: "\n") + "\n")
                } else {
                    throw ApplePayError(
                        .invalidPrivateKey,
                        "The private key PEM holds a \(open) block; only the key (and EC PARAMETERS) may be there."
                    )
                }
                label = nil
            } else if label != nil {
                body += line
            }
        }
        for parameter in parameters where parameter != prime256v1Parameters {
            throw ApplePayError(
                .invalidPrivateKey,
                "The EC PARAMETERS block does not name prime256v1 (P-256), the only curve Apple Pay uses: make the key with `openssl ecparam -name prime256v1 -genkey`."
            )
        }
        guard keys.count <= 1 else {
            throw ApplePayError(.invalidPrivateKey, "The private key PEM holds \(keys.count) keys; put each key in its own file.")
        }
        return keys.first ?? text
    }

    /// The extension value is, as Apple issues it, a DER string (UTF8String or IA5String) holding the hash as
    /// 64 hex characters; a bare 64-character hex value is accepted too.
    static func merchantIdentifierHash(fromExtensionValue value: [UInt8]) -> [UInt8]? {
        var text: [UInt8] = value
        if let node = try? DER.parse(value), case .primitive(let bytes) = node.content,
            [ASN1Identifier.utf8String, .ia5String, .printableString].contains(node.identifier)
        {
            text = Array(bytes)
        }
        guard let hash = Hex.decode(String(decoding: text, as: UTF8.self)), hash.count == SHA256.byteCount else {
            return nil
        }
        return hash
    }

    public var description: String {
        "ApplePayMerchantKey(\(privateKey.kind.rawValue), publicKeyHash: \(Data(publicKeyHash).base64EncodedString()))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["publicKeyHash": Data(publicKeyHash).base64EncodedString()], displayStyle: .struct)
    }
}

/// Everything a merchant configures to accept Apple Pay tokens: its processing keys, the roots it trusts,
/// and how far the CMS signing time may be from the verification time.
@MemberwiseInit
public struct ApplePayMerchantConfiguration: Sendable {
    /// One or more processing keys; the token's `publicKeyHash` selects one (several keys allow rotation).
    public var merchantKeys: [ApplePayMerchantKey]
    /// Trust anchors: the roots the signing chain must end at. Production: Apple Root CA - G3 only
    /// (``ApplePayPEM/appleRootCAG3PEM`` carries a copy; see ``ApplePayPEM/appleRootCAG3()``).
    public var trustedRoots: [Certificate]
    /// Maximum allowed |now − signingTime|, in seconds. Apple recommends a few minutes; default 5 minutes.
    public var signingTimeTolerance: TimeInterval = ApplePayMerchantConfiguration.defaultSigningTimeTolerance

    /// The default tolerance: 5 minutes.
    public static let defaultSigningTimeTolerance: TimeInterval = 300

    /// A configuration trusting only Apple Root CA - G3.
    public static func appleProduction(
        merchantKeys: [ApplePayMerchantKey],
        signingTimeTolerance: TimeInterval = ApplePayMerchantConfiguration.defaultSigningTimeTolerance
    ) throws(ApplePayError) -> ApplePayMerchantConfiguration {
        ApplePayMerchantConfiguration(
            merchantKeys: merchantKeys,
            trustedRoots: [try ApplePayPEM.appleRootCAG3()],
            signingTimeTolerance: signingTimeTolerance
        )
    }

    /// The configured key whose public key hash equals `publicKeyHash`.
    public func merchantKey(forPublicKeyHash publicKeyHash: [UInt8]) -> ApplePayMerchantKey? {
        merchantKeys.first { $0.publicKeyHash == publicKeyHash }
    }
}

/// PEM loading helpers and the bundled Apple root.
public enum ApplePayPEM {
    /// Parses one PEM certificate.
    public static func certificate(_ pem: String) throws(ApplePayError) -> Certificate {
        do {
            return try Certificate(pemEncoded: pem)
        } catch {
            throw ApplePayError(.invalidCertificate, "The certificate PEM is not a valid X.509 certificate.")
        }
    }

    /// Parses every certificate in a PEM bundle (e.g. a roots file).
    public static func certificates(_ pem: String) throws(ApplePayError) -> [Certificate] {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: pem)
        } catch {
            throw ApplePayError(.invalidCertificate, "The PEM bundle is malformed.")
        }
        var result: [Certificate] = []
        for document in documents {
            do {
                result.append(try Certificate(pemDocument: document))
            } catch {
                throw ApplePayError(.invalidCertificate, "A PEM block is not a valid X.509 certificate.")
            }
        }
        guard !result.isEmpty else { throw ApplePayError(.invalidCertificate, "The PEM bundle holds no certificate.") }
        return result
    }

    /// Apple Root CA - G3 (public; SHA-256 fingerprint 63:34:3A:BF:…:91:79, valid 2014-04-30 to 2039-04-30),
    /// the root of Apple Pay payment-token signing chains. Bundled so production needs no file for it.
    public static let appleRootCAG3PEM = """
        -----BEGIN CERTIFICATE-----
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
        QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
        MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
        aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
        at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
        6BgD56KyKA==
        -----END CERTIFICATE-----
        """

    /// The bundled Apple Root CA - G3 as a certificate.
    public static func appleRootCAG3() throws(ApplePayError) -> Certificate {
        try certificate(appleRootCAG3PEM)
    }
}
