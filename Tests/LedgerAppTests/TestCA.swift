import Crypto
import Foundation
import SwiftASN1
import X509

/// A private certificate authority made in the test: a self-signed P-256 CA and the server certificates it issues.
struct TestCA {
    let name: String
    let key: P256.Signing.PrivateKey
    let certificate: Certificate

    init(_ name: String) throws {
        self.name = name
        key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86_400),
            issuer: subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key)
        )
    }

    var pem: String { get throws { try certificate.serializeAsPEM().pemString } }

    /// A server certificate for `hosts` (DNS names, and IPv4 addresses as dotted quads), with its PKCS #8 key.
    func issue(commonName: String, hosts: [String]) throws -> (certificate: String, key: String) {
        let leafKey = P256.Signing.PrivateKey()
        let names: [GeneralName] = hosts.map { host in
            let octets = host.split(separator: ".").compactMap { UInt8($0) }
            return octets.count == 4 ? .ipAddress(ASN1OctetString(contentBytes: ArraySlice(octets))) : .dnsName(host)
        }
        let now = Date()
        let leaf = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(leafKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86_400),
            issuer: certificate.subject,
            subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: .init(key)
        )
        return (try leaf.serializeAsPEM().pemString, leafKey.pemRepresentation)
    }
}
