import Configuration
import Crypto
import Foundation
import LedgerPayments
import LedgerServices
import SwiftASN1
import X509

/// How the ledger accepts Apple Pay tokens itself (`gateway: "applepay"`): the merchant's payment
/// processing keys, the roots the token signatures must chain to, and how old a signature may be.
/// Part of ``LedgerConfiguration`` (its `applePay`), nil when no key is configured (Apple Pay tokens
/// are then refused with `applepay_not_configured`).
///
/// | key (environment variable) | default | meaning |
/// |---|---|---|
/// | `LEDGERD_APPLEPAY_PRIVATE_KEYS` | — | comma-separated PEM files, one payment processing private key each (P-256 for EC_v1, RSA for RSA_v1; PKCS#8, SEC1 or PKCS#1). Several keys: rotation, the token's `publicKeyHash` picks one. **Secret files.** |
/// | `LEDGERD_APPLEPAY_CERTIFICATES` | — | comma-separated PEM files of the matching payment processing certificates; each is paired with the key whose public key it holds and supplies that key's merchant identifier hash (extension 1.2.840.113635.100.6.32) |
/// | `LEDGERD_APPLEPAY_MERCHANT_ID` | — | merchant identifier (e.g. `merchant.com.example`), for keys without a certificate: the hash is SHA-256 of it |
/// | `LEDGERD_APPLEPAY_ROOT` | bundled Apple Root CA - G3 | PEM file of the trusted root certificate(s) |
/// | `LEDGERD_APPLEPAY_MAX_SIGNATURE_AGE_SECONDS` | `300` | most seconds between a token's CMS signing time and the ledger's clock, either way |
///
/// The files are read (and every key and certificate parsed) when the configuration is loaded, so a
/// daemon with an unusable Apple Pay setting does not start; `ledgerd applepay check-config` shows what
/// was found. Errors name the variable and the file, never the file's content.
public struct ApplePaySettings: Sendable {
    /// One configured processing key and where its merchant identifier hash came from.
    public struct Key: Sendable {
        public let file: String
        public let key: ApplePayMerchantKey
        /// The merchant certificate paired with the key, or nil when the hash came from the merchant identifier.
        public let certificate: Certificate?
        public let certificateFile: String?
    }

    public let keys: [Key]
    /// Trusted roots; `rootFile` nil means the bundled Apple Root CA - G3.
    public let roots: [Certificate]
    public let rootFile: String?
    public let merchantIdentifier: String?
    public let maximumSignatureAge: TimeInterval

    /// What the verifier is given.
    public var merchantConfiguration: ApplePayMerchantConfiguration {
        ApplePayMerchantConfiguration(
            merchantKeys: keys.map(\.key),
            trustedRoots: roots,
            signingTimeTolerance: maximumSignatureAge
        )
    }

    /// Reads the `ledgerd.applepay.*` keys; nil when no private key is configured and nothing else either.
    static func read(from reader: ConfigReader) throws -> ApplePaySettings? {
        func list(_ key: ConfigKey) -> [String] {
            reader.stringArray(forKey: key, default: [])
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let keyFiles = list("ledgerd.applepay.private.keys")
        let certificateFiles = list("ledgerd.applepay.certificates")
        let merchantIdentifier = reader.string(forKey: "ledgerd.applepay.merchant.id")?
            .trimmingCharacters(in: .whitespaces)
        let rootFile = reader.string(forKey: "ledgerd.applepay.root")?.trimmingCharacters(in: .whitespaces)
        let maximumAge = reader.int(
            forKey: "ledgerd.applepay.max.signature.age.seconds",
            default: Int(ApplePayMerchantConfiguration.defaultSigningTimeTolerance)
        )
        guard !keyFiles.isEmpty else {
            if !certificateFiles.isEmpty || merchantIdentifier?.isEmpty == false || rootFile?.isEmpty == false {
                throw ConfigurationError(
                    "LEDGERD_APPLEPAY_PRIVATE_KEYS is required when other LEDGERD_APPLEPAY_* settings are given"
                )
            }
            return nil
        }
        guard maximumAge >= 1 else {
            throw ConfigurationError("LEDGERD_APPLEPAY_MAX_SIGNATURE_AGE_SECONDS must be at least 1")
        }
        return try load(
            privateKeyFiles: keyFiles,
            certificateFiles: certificateFiles,
            merchantIdentifier: merchantIdentifier?.isEmpty == false ? merchantIdentifier : nil,
            rootFile: rootFile?.isEmpty == false ? rootFile : nil,
            maximumSignatureAge: TimeInterval(maximumAge)
        )
    }

    /// Reads and checks the files: every key parses, every certificate belongs to exactly one key, every key
    /// has a merchant identifier hash (from its certificate or the merchant identifier, which must agree
    /// when both are given), no two keys share a public key.
    public static func load(
        privateKeyFiles: [String],
        certificateFiles: [String],
        merchantIdentifier: String?,
        rootFile: String?,
        maximumSignatureAge: TimeInterval
    ) throws(ConfigurationError) -> ApplePaySettings {
        var certificates: [(file: String, certificate: Certificate, spki: [UInt8])] = []
        for file in certificateFiles {
            let pem = try read(file, variable: "LEDGERD_APPLEPAY_CERTIFICATES")
            do throws(ApplePayError) {
                for certificate in try ApplePayPEM.certificates(pem) {
                    certificates.append((file, certificate, try spki(of: certificate)))
                }
            } catch {
                throw ConfigurationError("LEDGERD_APPLEPAY_CERTIFICATES: \(file): \(error.message)")
            }
        }
        var keys: [Key] = []
        var pairedCertificates = Set<Int>()
        for file in privateKeyFiles {
            let pem = try read(file, variable: "LEDGERD_APPLEPAY_PRIVATE_KEYS")
            let privateKey: ApplePayMerchantKey.PrivateKey
            do throws(ApplePayError) {
                privateKey = try ApplePayMerchantKey.loadPrivateKey(pem: pem)
            } catch {
                throw ConfigurationError("LEDGERD_APPLEPAY_PRIVATE_KEYS: \(file): \(error.message)")
            }
            let matching = certificates.indices.filter { certificates[$0].spki == privateKey.subjectPublicKeyInfoDER }
            let key: ApplePayMerchantKey
            var certificate: (file: String, certificate: Certificate, spki: [UInt8])?
            if let index = matching.first {
                certificate = certificates[index]
                pairedCertificates.formUnion(matching)
                do throws(ApplePayError) {
                    key = try ApplePayMerchantKey(privateKey: privateKey, certificate: certificates[index].certificate)
                } catch {
                    throw ConfigurationError("LEDGERD_APPLEPAY_CERTIFICATES: \(certificates[index].file): \(error.message)")
                }
                if let merchantIdentifier,
                    key.merchantIdentifierHash != Array(SHA256.hash(data: Array(merchantIdentifier.utf8)))
                {
                    throw ConfigurationError(
                        "LEDGERD_APPLEPAY_MERCHANT_ID \(merchantIdentifier) is not the merchant identifier of the certificate in \(certificates[index].file)"
                    )
                }
            } else if let merchantIdentifier {
                key = ApplePayMerchantKey(privateKey: privateKey, merchantIdentifier: merchantIdentifier)
            } else {
                throw ConfigurationError(
                    "LEDGERD_APPLEPAY_PRIVATE_KEYS: \(file): no certificate in LEDGERD_APPLEPAY_CERTIFICATES holds its public key, and LEDGERD_APPLEPAY_MERCHANT_ID is not set"
                )
            }
            if let earlier = keys.first(where: { $0.key.publicKeyHash == key.publicKeyHash }) {
                throw ConfigurationError("LEDGERD_APPLEPAY_PRIVATE_KEYS: \(file) holds the same key as \(earlier.file)")
            }
            keys.append(Key(file: file, key: key, certificate: certificate?.certificate, certificateFile: certificate?.file))
        }
        if let unpaired = certificates.indices.first(where: { !pairedCertificates.contains($0) }) {
            throw ConfigurationError(
                "LEDGERD_APPLEPAY_CERTIFICATES: \(certificates[unpaired].file): no key in LEDGERD_APPLEPAY_PRIVATE_KEYS belongs to this certificate"
            )
        }
        let roots: [Certificate]
        if let rootFile {
            let pem = try read(rootFile, variable: "LEDGERD_APPLEPAY_ROOT")
            do throws(ApplePayError) {
                roots = try ApplePayPEM.certificates(pem)
            } catch {
                throw ConfigurationError("LEDGERD_APPLEPAY_ROOT: \(rootFile): \(error.message)")
            }
        } else {
            do throws(ApplePayError) {
                roots = [try ApplePayPEM.appleRootCAG3()]
            } catch {
                throw ConfigurationError("the bundled Apple Root CA - G3: \(error.message)")
            }
        }
        return ApplePaySettings(
            keys: keys,
            roots: roots,
            rootFile: rootFile,
            merchantIdentifier: merchantIdentifier,
            maximumSignatureAge: maximumSignatureAge
        )
    }

    private static func read(_ file: String, variable: String) throws(ConfigurationError) -> String {
        do {
            return try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigurationError("\(variable): \(file) cannot be read")
        }
    }

    private static func spki(of certificate: Certificate) throws(ApplePayError) -> [UInt8] {
        do {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate.publicKey)
            return serializer.serializedBytes
        } catch {
            throw ApplePayError(.invalidCertificate, "The certificate's public key cannot be encoded.")
        }
    }
}

// MARK: - check-config

extension ApplePaySettings {
    /// What `ledgerd applepay check-config` prints: every key with where its merchant identifier hash comes
    /// from, every root, the signature age, and the problems found as of `now` (expired or soon-expiring
    /// certificates). Never prints key material.
    public func report(now: Date) -> (text: String, problems: [String]) {
        var lines: [String] = []
        var problems: [String] = []
        var warnings: [String] = []
        lines.append("Apple Pay: \(keys.count) merchant key\(keys.count == 1 ? "" : "s")")
        for (index, entry) in keys.enumerated() {
            let hash = Data(entry.key.publicKeyHash).base64EncodedString()
            lines.append(
                "  \(index + 1). \(entry.file): \(entry.key.privateKey.kind.rawValue) key for \(entry.key.privateKey.kind == .ec ? "EC_v1" : "RSA_v1") tokens, publicKeyHash \(hash)"
            )
            if let certificate = entry.certificate, let file = entry.certificateFile {
                lines.append(
                    "     merchant identifier hash from the certificate in \(file): \(certificate.subject), valid \(day(certificate.notValidBefore)) to \(day(certificate.notValidAfter))"
                )
                if certificate.notValidAfter < now {
                    problems.append("the merchant certificate in \(file) expired on \(day(certificate.notValidAfter))")
                } else if certificate.notValidAfter < now.addingTimeInterval(30 * 86_400) {
                    warnings.append("the merchant certificate in \(file) expires on \(day(certificate.notValidAfter)); rotate it")
                } else if certificate.notValidBefore > now {
                    problems.append("the merchant certificate in \(file) is not valid before \(day(certificate.notValidBefore))")
                }
            } else {
                lines.append("     merchant identifier hash from LEDGERD_APPLEPAY_MERCHANT_ID \(merchantIdentifier ?? "?")")
            }
            lines.append("     merchant identifier hash \(entry.key.merchantIdentifierHash.map { String(format: "%02x", $0) }.joined())")
        }
        lines.append("trusted roots (\(rootFile ?? "bundled Apple Root CA - G3")):")
        for root in roots {
            let fingerprint = SHA256.hash(data: root.derBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
            lines.append("  \(root.subject), valid \(day(root.notValidBefore)) to \(day(root.notValidAfter)), SHA-256 \(fingerprint)")
            if root.notValidAfter < now { problems.append("the root \(root.subject) expired on \(day(root.notValidAfter))") }
        }
        if rootFile != nil, !roots.contains(where: { $0.derBytes == (try? ApplePayPEM.appleRootCAG3())?.derBytes }) {
            warnings.append(
                "Apple Root CA - G3 is not among the trusted roots: only tokens signed under the configured roots verify (fine for tests, not for production)"
            )
        }
        lines.append("max signature age: \(Int(maximumSignatureAge)) s")
        for warning in warnings { lines.append("warning: \(warning)") }
        for problem in problems { lines.append("problem: \(problem)") }
        lines.append(problems.isEmpty ? "ok" : "\(problems.count) problem\(problems.count == 1 ? "" : "s")")
        return (lines.joined(separator: "\n"), problems)
    }

    private func day(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle().year().month().day())
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    var derBytes: [UInt8] {
        var serializer = DER.Serializer()
        return (try? serializer.serialize(self)).map { serializer.serializedBytes } ?? []
    }
}
