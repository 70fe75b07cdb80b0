import Crypto
import Foundation
import LedgerPayments
import SwiftASN1
import X509
import _CryptoExtras

// `LedgerPaymentsTesting`: Apple Pay test infrastructure shared by the tests (LedgerPaymentsTests,
// LedgerAppTests) and `ledgerd-applepay-bench`: a throwaway CA with Apple's marker OIDs, merchant certificates
// with the merchant-identifier extension, and a token factory that encrypts payloads and signs them with a CMS
// SignedData built here with SwiftASN1. Everything is independent of LedgerPayments' own crypto helpers, so a
// round trip checks the module against a second implementation rather than against itself.
// Never use it for real payments: the keys are generated on the spot and the CA is nobody's.

/// The fixed "now" of generated-token tests (no wall clock).
public let testNow = Date(timeIntervalSince1970: 1_795_262_400)  // 2026-11-21T12:00:00Z

public enum TestOIDs {
    public static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 29]
    public static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 14]
    public static let merchantIdentifier: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 32]
    public static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    public static let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    public static let contentType: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 3]
    public static let messageDigest: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]
    public static let signingTime: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 5]
    public static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    public static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]
    public static let sha256WithRSA: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 11]
}

/// RSA keys are slow to generate; make a few once per test process.
public enum RSAKeys {
    public static let signing: [UInt8]? = try? Array(_RSA.Signing.PrivateKey(keySize: .bits2048).derRepresentation)
    public static let merchantA: [UInt8]? = try? Array(_RSA.Encryption.PrivateKey(keySize: .bits2048).derRepresentation)
    public static let merchantB: [UInt8]? = try? Array(_RSA.Encryption.PrivateKey(keySize: .bits2048).derRepresentation)
}

public struct FactoryError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A certificate signing key held as bytes (swift-crypto keys are not Sendable).
public enum SignerKey: Sendable {
    case p256([UInt8])
    case rsa([UInt8])

    public static func newP256() -> SignerKey { .p256(Array(P256.Signing.PrivateKey().rawRepresentation)) }

    public static func rsaSigning() throws -> SignerKey {
        guard let der = RSAKeys.signing else { throw FactoryError("RSA key generation failed") }
        return .rsa(der)
    }

    public var certificatePrivateKey: Certificate.PrivateKey {
        get throws {
            switch self {
            case .p256(let raw): return Certificate.PrivateKey(try P256.Signing.PrivateKey(rawRepresentation: raw))
            case .rsa(let der): return Certificate.PrivateKey(try _RSA.Signing.PrivateKey(derRepresentation: der))
            }
        }
    }

    public var certificatePublicKey: Certificate.PublicKey {
        get throws { try certificatePrivateKey.publicKey }
    }

    public var certificateSignatureAlgorithm: Certificate.SignatureAlgorithm {
        switch self {
        case .p256: return .ecdsaWithSHA256
        case .rsa: return .sha256WithRSAEncryption
        }
    }

    /// A CMS signature over `bytes` and its algorithm OID.
    public func signCMS(_ bytes: [UInt8]) throws -> (signature: [UInt8], algorithm: ASN1ObjectIdentifier) {
        switch self {
        case .p256(let raw):
            let key = try P256.Signing.PrivateKey(rawRepresentation: raw)
            return (Array(try key.signature(for: bytes).derRepresentation), TestOIDs.ecdsaWithSHA256)
        case .rsa(let der):
            let key = try _RSA.Signing.PrivateKey(derRepresentation: der)
            return (Array(try key.signature(for: bytes, padding: .insecurePKCS1v1_5).rawRepresentation), TestOIDs.sha256WithRSA)
        }
    }
}

/// Root → intermediate (…6.2.14) → leaf (…6.29), mirroring Apple's payment-signing chain.
public struct TestPKI: Sendable {
    public struct Options: Sendable {
        public var leafMarker = true
        public var intermediateMarker = true
        public var rootValidity: (Date, Date) = (date(2020), date(2045))
        public var intermediateValidity: (Date, Date) = (date(2021), date(2040))
        public var leafValidity: (Date, Date) = (date(2022), date(2035))
        public var rsaLeaf = false

        public init() {}
    }

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let rootKey: SignerKey
    public let intermediateKey: SignerKey
    public let leafKey: SignerKey

    /// The same PKI presenting other certificates (e.g. a leaf whose outer signature was altered) in the
    /// tokens it signs; the keys stay the same.
    public func presenting(leaf: Certificate? = nil, intermediate: Certificate? = nil) -> TestPKI {
        TestPKI(
            root: root,
            intermediate: intermediate ?? self.intermediate,
            leaf: leaf ?? self.leaf,
            rootKey: rootKey,
            intermediateKey: intermediateKey,
            leafKey: leafKey
        )
    }

    private init(
        root: Certificate,
        intermediate: Certificate,
        leaf: Certificate,
        rootKey: SignerKey,
        intermediateKey: SignerKey,
        leafKey: SignerKey
    ) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
    }

    /// The root certificate as PEM (what a test configures as the trusted root).
    public var rootPEM: String {
        get throws { try root.serializeAsPEM().pemString }
    }

    public static func date(_ year: Int) -> Date {
        Date(timeIntervalSince1970: Double(daysFromCivil(year, 1, 1)) * 86_400)
    }

    public init(_ options: Options = Options()) throws {
        rootKey = .newP256()
        intermediateKey = .newP256()
        leafKey = options.rsaLeaf ? try .rsaSigning() : .newP256()
        let rootName = try DistinguishedName {
            CommonName("LedgerPayments Test Root CA - G3")
            OrganizationName("Test")
        }
        let intermediateName = try DistinguishedName {
            CommonName("LedgerPayments Test Application Integration CA")
            OrganizationName("Test")
        }
        let leafName = try DistinguishedName {
            CommonName("ecc-smp-broker-sign_UC4-TEST")
            OrganizationName("Test")
        }

        root = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: rootKey.certificatePublicKey,
            notValidBefore: options.rootValidity.0,
            notValidAfter: options.rootValidity.1,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: rootKey.certificatePrivateKey
        )

        let intermediateMarker = options.intermediateMarker
        intermediate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: intermediateKey.certificatePublicKey,
            notValidBefore: options.intermediateValidity.0,
            notValidAfter: options.intermediateValidity.1,
            issuer: rootName,
            subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if intermediateMarker {
                    Certificate.Extension(oid: TestOIDs.intermediateMarker, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: rootKey.certificatePrivateKey
        )

        let leafMarker = options.leafMarker
        leaf = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: leafKey.certificatePublicKey,
            notValidBefore: options.leafValidity.0,
            notValidAfter: options.leafValidity.1,
            issuer: intermediateName,
            subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if leafMarker {
                    Certificate.Extension(oid: TestOIDs.leafMarker, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: intermediateKey.certificatePrivateKey
        )
    }
}

func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
}

/// A merchant: processing key, identifier and a merchant certificate carrying …6.32.
public struct TestMerchant: Sendable {
    public enum Kind: Sendable { case ec, rsa }
    public let kind: Kind
    public let keyBytes: [UInt8]
    public let merchantIdentifier: String
    public let certificate: Certificate

    public static func ec(_ identifier: String = "merchant.com.example.ledger") throws -> TestMerchant {
        try TestMerchant(kind: .ec, keyBytes: Array(P256.KeyAgreement.PrivateKey().rawRepresentation), identifier: identifier)
    }

    /// An EC merchant with the given P-256 key (its 32-byte raw representation).
    public static func ec(keyBytes: [UInt8], _ identifier: String = "merchant.com.example.ledger") throws -> TestMerchant {
        try TestMerchant(kind: .ec, keyBytes: keyBytes, identifier: identifier)
    }

    public static func rsa(_ identifier: String = "merchant.com.example.ledger", second: Bool = false) throws -> TestMerchant {
        guard let der = second ? RSAKeys.merchantB : RSAKeys.merchantA else { throw FactoryError("RSA key generation failed") }
        return try TestMerchant(kind: .rsa, keyBytes: der, identifier: identifier)
    }

    private init(kind: Kind, keyBytes: [UInt8], identifier: String, extensionValue: [UInt8]? = nil) throws {
        self.kind = kind
        self.keyBytes = keyBytes
        self.merchantIdentifier = identifier
        let publicKey: Certificate.PublicKey
        switch kind {
        case .ec:
            let key = try P256.KeyAgreement.PrivateKey(rawRepresentation: keyBytes)
            publicKey = Certificate.PublicKey(try P256.Signing.PublicKey(rawRepresentation: key.publicKey.rawRepresentation))
        case .rsa:
            let key = try _RSA.Encryption.PrivateKey(derRepresentation: keyBytes)
            publicKey = Certificate.PublicKey(try _RSA.Signing.PublicKey(derRepresentation: key.publicKey.derRepresentation))
        }
        // Apple's extension value: a DER UTF8String of the hex SHA-256 of the merchant identifier.
        var serializer = DER.Serializer()
        try serializer.serialize(ASN1UTF8String(hexString(SHA256.hash(data: Array(identifier.utf8))).uppercased()))
        let value = extensionValue ?? serializer.serializedBytes
        let caKey = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("Merchant ID: \(identifier)") }
        certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: publicKey,
            notValidBefore: TestPKI.date(2024),
            notValidAfter: TestPKI.date(2030),
            issuer: try DistinguishedName { CommonName("Test Apple Worldwide Developer Relations CA") },
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Certificate.Extension(oid: TestOIDs.merchantIdentifier, critical: false, value: ArraySlice(value))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
    }

    public var privateKey: ApplePayMerchantKey.PrivateKey {
        get throws {
            switch kind {
            case .ec: return .ec(try P256.KeyAgreement.PrivateKey(rawRepresentation: keyBytes))
            case .rsa: return .rsa(try _RSA.Encryption.PrivateKey(derRepresentation: keyBytes))
            }
        }
    }

    /// The module's key, with the identifier hash taken from the certificate extension.
    public func merchantKey() throws -> ApplePayMerchantKey {
        try ApplePayMerchantKey(privateKey: privateKey, certificate: certificate)
    }

    public var spkiDER: [UInt8] {
        get throws {
            switch kind {
            case .ec: return Array(try P256.KeyAgreement.PrivateKey(rawRepresentation: keyBytes).publicKey.derRepresentation)
            case .rsa: return Array(try _RSA.Encryption.PrivateKey(derRepresentation: keyBytes).publicKey.derRepresentation)
            }
        }
    }

    public var merchantIdentifierHash: [UInt8] { Array(SHA256.hash(data: Array(merchantIdentifier.utf8))) }

    /// The private key as PEM (PKCS#8), as a merchant keeps it in a file.
    public var privateKeyPEM: String {
        get throws {
            switch kind {
            case .ec: return try P256.KeyAgreement.PrivateKey(rawRepresentation: keyBytes).pemRepresentation
            case .rsa: return try _RSA.Encryption.PrivateKey(derRepresentation: keyBytes).pemRepresentation
            }
        }
    }

    /// The merchant certificate as PEM.
    public var certificatePEM: String {
        get throws { try certificate.serializeAsPEM().pemString }
    }
}

/// What a generated token should look like.
public struct TokenSpec: Sendable {
    public var payloadJSON = TokenSpec.defaultPayload
    public var signingTime = testNow
    public var transactionId: [UInt8] = Array(SHA256.hash(data: Array("txn-1".utf8)))
    /// Raw app applicationData; the header carries its SHA-256.
    public var applicationData: [UInt8]? = nil
    public var includeSigningTime = true
    public var includeIntermediate = true
    /// Sign the attributes with a key other than the leaf's.
    public var signWithForeignKey = false
    /// Flip a bit of the signature value after signing.
    public var corruptSignatureValue = false
    /// Flip a bit of the ciphertext *before* signing (signature valid, decryption must fail).
    public var corruptCiphertextBeforeSigning = false
    /// SignerInfo digest algorithm (default SHA-256).
    public var digestAlgorithm: ASN1ObjectIdentifier = TestOIDs.sha256
    /// Replace header.publicKeyHash (e.g. to point at a key of the wrong type).
    public var publicKeyHashOverride: [UInt8]? = nil
    /// Derive the EC key with this merchant identifier instead of the merchant's own.
    public var merchantIdentifierOverride: String? = nil

    public init() {}

    public static let defaultPAN = "4111111111111111"
    public static let defaultCryptogram = "AbCdEfGhIjKlMnOpQrStUvWxYz0="
    public static let defaultPayload = """
        {"applicationPrimaryAccountNumber":"4111111111111111","applicationExpirationDate":"281231",\
        "currencyCode":"840","transactionAmount":12345,"deviceManufacturerIdentifier":"040010030273",\
        "paymentDataType":"3DSecure","paymentData":{"onlinePaymentCryptogram":"AbCdEfGhIjKlMnOpQrStUvWxYz0=",\
        "eciIndicator":"7"}}
        """
}

public enum TokenFactory {
    static let zeroIV = [UInt8](repeating: 0, count: 16)

    public static func make(pki: TestPKI, merchant: TestMerchant, spec: TokenSpec = TokenSpec()) throws -> ApplePayToken {
        let plaintext = Array(spec.payloadJSON.utf8)
        let version: String
        var keyMaterial: [UInt8]
        var ciphertext: [UInt8]
        switch merchant.kind {
        case .ec:
            version = "EC_v1"
            let merchantKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: merchant.keyBytes)
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let z = try ephemeral.sharedSecretFromKeyAgreement(with: merchantKey.publicKey).withUnsafeBytes { Array($0) }
            let idHash = spec.merchantIdentifierOverride.map { Array(SHA256.hash(data: Array($0.utf8))) } ?? merchant.merchantIdentifierHash
            let kdfInput: [UInt8] = [0, 0, 0, 1] + z + [0x0D] + Array("id-aes256-GCM".utf8) + Array("Apple".utf8) + idHash
            let key = SymmetricKey(data: SHA256.hash(data: kdfInput))
            let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: zeroIV))
            ciphertext = Array(box.ciphertext) + Array(box.tag)
            keyMaterial = Array(ephemeral.publicKey.derRepresentation)
        case .rsa:
            version = "RSA_v1"
            let merchantKey = try _RSA.Encryption.PrivateKey(derRepresentation: merchant.keyBytes)
            let key = SymmetricKey(size: .bits128)
            let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: zeroIV))
            ciphertext = Array(box.ciphertext) + Array(box.tag)
            keyMaterial = Array(try merchantKey.publicKey.encrypt(key.withUnsafeBytes { Array($0) }, padding: .PKCS1_OAEP_SHA256))
        }
        if spec.corruptCiphertextBeforeSigning { ciphertext[0] ^= 0x01 }

        let applicationDataHash = spec.applicationData.map { Array(SHA256.hash(data: $0)) }
        let signedContent = keyMaterial + ciphertext + spec.transactionId + (applicationDataHash ?? [])
        let signature = try CMSBuilder.detachedSignature(
            over: signedContent,
            pki: pki,
            signingTime: spec.signingTime,
            includeSigningTime: spec.includeSigningTime,
            includeIntermediate: spec.includeIntermediate,
            signWithForeignKey: spec.signWithForeignKey,
            corruptSignatureValue: spec.corruptSignatureValue,
            digestAlgorithm: spec.digestAlgorithm
        )

        let merchantSPKI = try merchant.spkiDER
        let publicKeyHash = spec.publicKeyHashOverride ?? Array(SHA256.hash(data: merchantSPKI))
        let header = ApplePayToken.Header(
            ephemeralPublicKey: merchant.kind == .ec ? Data(keyMaterial).base64EncodedString() : nil,
            wrappedKey: merchant.kind == .rsa ? Data(keyMaterial).base64EncodedString() : nil,
            publicKeyHash: Data(publicKeyHash).base64EncodedString(),
            transactionId: hexString(spec.transactionId),
            applicationData: applicationDataHash.map(hexString)
        )
        return ApplePayToken(
            version: version,
            data: Data(ciphertext).base64EncodedString(),
            signature: Data(signature).base64EncodedString(),
            header: header
        )
    }
}

/// Builds RFC 5652 SignedData with SwiftASN1's DER serializer.
public enum CMSBuilder {
    static func context(_ number: UInt) -> ASN1Identifier { ASN1Identifier(tagWithNumber: number, tagClass: .contextSpecific) }

    static func algorithm(_ oid: ASN1ObjectIdentifier, null: Bool, into s: inout DER.Serializer) throws {
        try s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(oid)
            if null { try s.serialize(ASN1Null()) }
        }
    }

    static func attribute(_ type: ASN1ObjectIdentifier, _ value: (inout DER.Serializer) throws -> Void) throws -> [UInt8] {
        var s = DER.Serializer()
        try s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(type)
            try s.appendConstructedNode(identifier: .set) { s in try value(&s) }
        }
        return s.serializedBytes
    }

    static func utcTime(_ date: Date) throws -> UTCTime {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return try UTCTime(
            year: c.year ?? 0,
            month: c.month ?? 0,
            day: c.day ?? 0,
            hours: c.hour ?? 0,
            minutes: c.minute ?? 0,
            seconds: c.second ?? 0
        )
    }

    public static func detachedSignature(
        over content: [UInt8],
        pki: TestPKI,
        signingTime: Date,
        includeSigningTime: Bool = true,
        includeIntermediate: Bool = true,
        signWithForeignKey: Bool = false,
        corruptSignatureValue: Bool = false,
        digestAlgorithm: ASN1ObjectIdentifier = TestOIDs.sha256
    ) throws -> [UInt8] {
        var attributes = [
            try attribute(TestOIDs.contentType) { try $0.serialize(TestOIDs.data) },
            try attribute(TestOIDs.messageDigest) {
                try $0.serialize(ASN1OctetString(contentBytes: ArraySlice(SHA256.hash(data: content))))
            },
        ]
        if includeSigningTime {
            let time = try utcTime(signingTime)
            attributes.append(try attribute(TestOIDs.signingTime) { try $0.serialize(time) })
        }
        // DER SET OF: elements sorted by their encodings.
        attributes.sort { $0.lexicographicallyPrecedes($1) }

        var setSerializer = DER.Serializer()
        setSerializer.appendConstructedNode(identifier: .set) { s in
            for a in attributes { s.serializeRawBytes(a) }
        }
        let signer = signWithForeignKey ? SignerKey.newP256() : pki.leafKey
        var (signature, signatureAlgorithm) = try signer.signCMS(setSerializer.serializedBytes)
        if corruptSignatureValue { signature[signature.count / 2] ^= 0x10 }

        var s = DER.Serializer()
        try s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(TestOIDs.signedData)
            try s.appendConstructedNode(identifier: context(0)) { s in
                try s.appendConstructedNode(identifier: .sequence) { s in
                    try s.serialize(1)
                    try s.appendConstructedNode(identifier: .set) { s in try algorithm(TestOIDs.sha256, null: true, into: &s) }
                    try s.appendConstructedNode(identifier: .sequence) { s in try s.serialize(TestOIDs.data) }
                    try s.appendConstructedNode(identifier: context(0)) { s in
                        try s.serialize(pki.leaf)
                        if includeIntermediate { try s.serialize(pki.intermediate) }
                    }
                    try s.appendConstructedNode(identifier: .set) { s in
                        try s.appendConstructedNode(identifier: .sequence) { s in
                            try s.serialize(1)
                            try s.appendConstructedNode(identifier: .sequence) { s in
                                try s.serialize(pki.leaf.issuer)
                                s.appendPrimitiveNode(identifier: .integer) { $0.append(contentsOf: pki.leaf.serialNumber.bytes) }
                            }
                            try algorithm(digestAlgorithm, null: true, into: &s)
                            s.appendConstructedNode(identifier: context(0)) { s in
                                for a in attributes { s.serializeRawBytes(a) }
                            }
                            try algorithm(signatureAlgorithm, null: signatureAlgorithm == TestOIDs.sha256WithRSA, into: &s)
                            try s.serialize(ASN1OctetString(contentBytes: ArraySlice(signature)))
                        }
                    }
                }
            }
        }
        return s.serializedBytes
    }
}

/// Lowercase hex of `bytes` (the tokens' transaction ids and hashes; the tests' one hex helper).
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}
