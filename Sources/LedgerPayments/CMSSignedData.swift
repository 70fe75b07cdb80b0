import Foundation
import LedgerMacros
import SwiftASN1
import X509

/// The parts of a detached CMS SignedData (RFC 5652, PKCS #7) that Apple Pay token verification needs.
///
/// swift-certificates keeps its CMS implementation internal, so this is a small reader on top of SwiftASN1.
/// It parses with BER rules because Apple encodes the outer structures with indefinite lengths
/// (`30 80 … 00 00`), then insists on DER where the signature depends on the exact bytes: the
/// certificates (parsed by swift-certificates' DER parser) and the signed attributes (re-parsed as DER
/// after re-tagging). Only what Apple sends is accepted: one signer, detached `id-data` content, SHA-256.
@MemberwiseInit
public struct CMSSignedData: Sendable, Hashable {
    /// Certificates carried in the SignedData, in the order they appear.
    public var certificates: [Certificate]
    /// The single signer.
    public var signer: SignerInfo

    /// One CMS SignerInfo, reduced to what verification needs.
    public struct SignerInfo: Sendable, Hashable {
        /// How the signer names its certificate.
        public enum Identifier: Sendable, Hashable {
            /// The issuer's DER-encoded Name and the serial number's content bytes.
            case issuerAndSerialNumber(issuer: DistinguishedName, serialNumber: [UInt8])
            /// A subjectKeyIdentifier value.
            case subjectKeyIdentifier([UInt8])
        }

        public var identifier: Identifier
        /// The digest algorithm (must be SHA-256).
        public var digestAlgorithm: ASN1ObjectIdentifier
        /// DER of the signed attributes re-tagged as `SET OF Attribute` (0x31): the bytes the signature covers.
        public var signedAttributesDER: [UInt8]
        /// The content-type attribute value.
        public var contentType: ASN1ObjectIdentifier
        /// The message-digest attribute value.
        public var messageDigest: [UInt8]
        /// The signing-time attribute value.
        public var signingTime: Date
        /// The signature algorithm OID as sent (e.g. ecdsa-with-SHA256).
        public var signatureAlgorithm: ASN1ObjectIdentifier
        /// The raw signature bytes (DER ECDSA-Sig-Value for ECDSA).
        public var signature: [UInt8]
    }

    /// The certificate the signer identifies, if the SignedData carries it.
    public var signerCertificate: Certificate? {
        certificates.first { certificate in
            switch signer.identifier {
            case .issuerAndSerialNumber(let issuer, let serial):
                return certificate.issuer == issuer && Array(certificate.serialNumber.bytes) == serial
            case .subjectKeyIdentifier(let ski):
                guard let extensionValue = try? certificate.extensions.subjectKeyIdentifier else { return false }
                return Array(extensionValue.keyIdentifier) == ski
            }
        }
    }

    // MARK: Parsing

    /// Parses a BER/DER ContentInfo holding a detached SignedData. Every failure is `malformed_signature`
    /// (or `missing_signed_attribute` / `unsupported_algorithm` for well-formed but unusable data); the
    /// parser never traps on hostile input (SwiftASN1 bounds nesting depth, and every access here is checked).
    public static func parse<Bytes: DataProtocol>(_ bytes: Bytes) throws(ApplePayError) -> CMSSignedData {
        let root: ASN1Node
        do {
            root = try BER.parse(Array(bytes))
        } catch {
            throw malformed("The signature is not valid BER/DER.")
        }

        // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT ANY }
        let contentInfo = try children(of: root, tag: .sequence, what: "ContentInfo")
        guard contentInfo.count == 2 else { throw malformed("ContentInfo must have two fields.") }
        guard try oid(contentInfo[0]) == OIDs.signedData else {
            throw malformed("ContentInfo is not id-signedData.")
        }
        let explicitContent = try children(of: contentInfo[1], tag: .contextSpecific(0), what: "ContentInfo.content")
        guard explicitContent.count == 1 else { throw malformed("ContentInfo.content must hold one value.") }

        // SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo, [0] certificates OPTIONAL,
        //                           [1] crls OPTIONAL, signerInfos SET }
        let signedData = try children(of: explicitContent[0], tag: .sequence, what: "SignedData")
        guard signedData.count >= 4 else { throw malformed("SignedData is missing fields.") }
        _ = try integerBytes(signedData[0])
        _ = try children(of: signedData[1], tag: .set, what: "digestAlgorithms")

        // Detached signature: the encapsulated content must be id-data with no eContent.
        let encap = try children(of: signedData[2], tag: .sequence, what: "EncapsulatedContentInfo")
        guard encap.count >= 1, try oid(encap[0]) == OIDs.data else {
            throw malformed("The encapsulated content type is not id-data.")
        }
        guard encap.count == 1 else {
            throw malformed("The signature is not detached: it embeds content.")
        }

        var index = 3
        var certificates: [Certificate] = []
        if index < signedData.count, signedData[index].identifier == context(0), signedData[index].isConstructed {
            for node in try children(of: signedData[index], tag: .contextSpecific(0), what: "certificates") {
                guard node.identifier == .sequence else {
                    throw malformed("Only X.509 certificates are accepted in the certificate set.")
                }
                do {
                    certificates.append(try Certificate(derEncoded: Array(node.encodedBytes)))
                } catch {
                    throw malformed("A certificate in the signature is not a valid DER X.509 certificate.")
                }
            }
            index += 1
        }
        if index < signedData.count, signedData[index].identifier == context(1) {
            index += 1  // CRLs: Apple sends none; revocation is out of scope for offline verification.
        }
        guard index == signedData.count - 1 else { throw malformed("SignedData has unexpected fields.") }
        let signerInfos = try children(of: signedData[index], tag: .set, what: "signerInfos")
        guard signerInfos.count == 1 else {
            throw malformed("Exactly one signer is expected, found \(signerInfos.count).")
        }
        let signer = try parseSignerInfo(signerInfos[0])
        return CMSSignedData(certificates: certificates, signer: signer)
    }

    private static func parseSignerInfo(_ node: ASN1Node) throws(ApplePayError) -> SignerInfo {
        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm,
        //                           signature OCTET STRING, [1] unsignedAttrs OPTIONAL }
        let fields = try children(of: node, tag: .sequence, what: "SignerInfo")
        guard fields.count == 6 || fields.count == 7 else { throw malformed("SignerInfo has the wrong number of fields.") }
        _ = try integerBytes(fields[0])

        let identifier: SignerInfo.Identifier
        if fields[1].identifier == .sequence {
            let parts = try children(of: fields[1], tag: .sequence, what: "IssuerAndSerialNumber")
            guard parts.count == 2 else { throw malformed("IssuerAndSerialNumber must have two fields.") }
            let issuer: DistinguishedName
            do {
                issuer = try DistinguishedName(derEncoded: DER.parse(Array(parts[0].encodedBytes)))
            } catch {
                throw malformed("The signer's issuer name is malformed.")
            }
            identifier = .issuerAndSerialNumber(issuer: issuer, serialNumber: try integerBytes(parts[1]))
        } else if fields[1].identifier == context(0), !fields[1].isConstructed {
            identifier = .subjectKeyIdentifier(try primitiveBytes(fields[1], what: "subjectKeyIdentifier"))
        } else {
            throw malformed("The signer identifier is neither issuerAndSerialNumber nor subjectKeyIdentifier.")
        }

        let digestAlgorithm = try algorithmOID(fields[2], what: "digestAlgorithm")
        guard digestAlgorithm == OIDs.sha256 else {
            throw ApplePayError(.unsupportedAlgorithm, "The CMS digest algorithm is not SHA-256.")
        }

        // Signed attributes are [0] IMPLICIT SET OF Attribute. The signature covers their DER with the
        // universal SET tag (RFC 5652 §5.4), so re-tag the received bytes and require them to be DER.
        guard fields[3].identifier == context(0), fields[3].isConstructed else {
            throw ApplePayError(.missingSignedAttribute, "The signer has no signed attributes.")
        }
        var retagged = Array(fields[3].encodedBytes)
        guard !retagged.isEmpty else { throw malformed("The signed attributes are empty.") }
        retagged[0] = 0x31
        let attributesSet: ASN1Node
        do {
            attributesSet = try DER.parse(retagged)
        } catch {
            throw malformed("The signed attributes are not DER encoded.")
        }

        var contentType: ASN1ObjectIdentifier?
        var messageDigest: [UInt8]?
        var signingTime: Date?
        for attribute in try children(of: attributesSet, tag: .set, what: "signedAttrs") {
            let parts = try children(of: attribute, tag: .sequence, what: "Attribute")
            guard parts.count == 2 else { throw malformed("An attribute must have a type and a value set.") }
            let type = try oid(parts[0])
            let values = try children(of: parts[1], tag: .set, what: "attribute values")
            switch type {
            case OIDs.contentType, OIDs.messageDigest, OIDs.signingTime:
                // RFC 5652 §11: each of these attributes is single-valued and appears once.
                guard values.count == 1 else { throw malformed("A CMS attribute must have exactly one value.") }
            default:
                continue
            }
            switch type {
            case OIDs.contentType:
                guard contentType == nil else { throw malformed("Duplicate content-type attribute.") }
                contentType = try oid(values[0])
            case OIDs.messageDigest:
                guard messageDigest == nil else { throw malformed("Duplicate message-digest attribute.") }
                guard values[0].identifier == .octetString else { throw malformed("message-digest is not an OCTET STRING.") }
                messageDigest = try primitiveBytes(values[0], what: "message-digest")
            case OIDs.signingTime:
                guard signingTime == nil else { throw malformed("Duplicate signing-time attribute.") }
                signingTime = try time(values[0])
            default:
                continue
            }
        }
        guard let contentType else {
            throw ApplePayError(.missingSignedAttribute, "The content-type signed attribute is missing.")
        }
        guard contentType == OIDs.data else {
            throw malformed("The content-type signed attribute is not id-data.")
        }
        guard let messageDigest else {
            throw ApplePayError(.missingSignedAttribute, "The message-digest signed attribute is missing.")
        }
        guard let signingTime else {
            throw ApplePayError(.missingSignedAttribute, "The signing-time signed attribute is missing.")
        }

        let signatureAlgorithm = try algorithmOID(fields[4], what: "signatureAlgorithm")
        guard fields[5].identifier == .octetString else { throw malformed("The signature value is not an OCTET STRING.") }
        let signature = try octetStringBytes(fields[5])
        if fields.count == 7, fields[6].identifier != context(1) {
            throw malformed("Unexpected trailing field in SignerInfo.")
        }

        return SignerInfo(
            identifier: identifier,
            digestAlgorithm: digestAlgorithm,
            signedAttributesDER: retagged,
            contentType: contentType,
            messageDigest: messageDigest,
            signingTime: signingTime,
            signatureAlgorithm: signatureAlgorithm,
            signature: signature
        )
    }

    // MARK: Node helpers

    private enum Tag {
        case sequence, set
        case contextSpecific(UInt)
    }

    private static func context(_ number: UInt) -> ASN1Identifier {
        ASN1Identifier(tagWithNumber: number, tagClass: .contextSpecific)
    }

    private static func malformed(_ message: String) -> ApplePayError {
        ApplePayError(.malformedSignature, message)
    }

    /// The children of a constructed node with the expected tag.
    private static func children(of node: ASN1Node, tag: Tag, what: String) throws(ApplePayError) -> [ASN1Node] {
        let expected: ASN1Identifier
        switch tag {
        case .sequence: expected = .sequence
        case .set: expected = .set
        case .contextSpecific(let number): expected = context(number)
        }
        guard node.identifier == expected, case .constructed(let collection) = node.content else {
            throw malformed("\(what) has an unexpected ASN.1 tag.")
        }
        return Array(collection)
    }

    private static func primitiveBytes(_ node: ASN1Node, what: String) throws(ApplePayError) -> [UInt8] {
        guard case .primitive(let bytes) = node.content else {
            throw malformed("\(what) must be a primitive value.")
        }
        return Array(bytes)
    }

    /// OCTET STRING contents; BER allows a constructed (chunked) form, which is reassembled.
    private static func octetStringBytes(_ node: ASN1Node) throws(ApplePayError) -> [UInt8] {
        do {
            return Array(try ASN1OctetString(berEncoded: node).bytes)
        } catch {
            throw malformed("An OCTET STRING is malformed.")
        }
    }

    private static func oid(_ node: ASN1Node) throws(ApplePayError) -> ASN1ObjectIdentifier {
        do {
            return try ASN1ObjectIdentifier(berEncoded: node)
        } catch {
            throw malformed("Expected an OBJECT IDENTIFIER.")
        }
    }

    private static func integerBytes(_ node: ASN1Node) throws(ApplePayError) -> [UInt8] {
        guard node.identifier == .integer, case .primitive(let bytes) = node.content, !bytes.isEmpty else {
            throw malformed("Expected an INTEGER.")
        }
        return Array(bytes)
    }

    /// AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL } → the OID.
    private static func algorithmOID(_ node: ASN1Node, what: String) throws(ApplePayError) -> ASN1ObjectIdentifier {
        let parts = try children(of: node, tag: .sequence, what: what)
        guard parts.count == 1 || parts.count == 2 else { throw malformed("\(what) is malformed.") }
        return try oid(parts[0])
    }

    private static func time(_ node: ASN1Node) throws(ApplePayError) -> Date {
        do {
            if node.identifier == .utcTime {
                let t = try UTCTime(derEncoded: node)
                return UTCDate.date(year: t.year, month: t.month, day: t.day, hours: t.hours, minutes: t.minutes, seconds: Double(t.seconds))
            }
            if node.identifier == .generalizedTime {
                let t = try GeneralizedTime(derEncoded: node)
                return UTCDate.date(
                    year: t.year,
                    month: t.month,
                    day: t.day,
                    hours: t.hours,
                    minutes: t.minutes,
                    seconds: Double(t.seconds) + t.fractionalSeconds
                )
            }
        } catch {
            throw malformed("signing-time is not a valid UTCTime or GeneralizedTime.")
        }
        throw malformed("signing-time is neither UTCTime nor GeneralizedTime.")
    }
}

/// Object identifiers used by CMS and Apple Pay.
enum OIDs {
    static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let contentType: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 3]
    static let messageDigest: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]
    static let signingTime: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 5]
    static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10045, 4, 3, 2]
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    static let sha256WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 11]
    /// Apple Pay payment-processing leaf certificate marker.
    static let appleLeafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 29]
    /// Apple Worldwide Developer Relations / Application Integration CA intermediate marker.
    static let appleIntermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 14]
    /// Merchant identity certificate extension holding the merchant identifier hash.
    static let merchantIdentifier: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 32]
}

/// Proleptic-Gregorian UTC date arithmetic without Calendar (pure and locale-free).
enum UTCDate {
    static func date(year: Int, month: Int, day: Int, hours: Int, minutes: Int, seconds: Double) -> Date {
        let days = daysFromCivil(year: year, month: month, day: day)
        let secondsSinceEpoch = Double(days) * 86_400 + Double(hours * 3600 + minutes * 60) + seconds
        return Date(timeIntervalSince1970: secondsSinceEpoch)
    }

    /// Howard Hinnant's days_from_civil: days since 1970-01-01.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension ASN1Node {
    var isConstructed: Bool {
        if case .constructed = content { return true }
        return false
    }
}
