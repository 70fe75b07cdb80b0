import Crypto
import Foundation
import LedgerPayments
import LedgerPaymentsTesting
import SwiftASN1
import Testing

/// Malformed base64, JSON, hex and ASN.1: each is a precise typed error.
struct MalformedInputTests {
    let valid: ApplePayToken

    init() throws {
        valid = try ApplePayToken.parse(json: VectorFiles.data("payu-ec-v1/token.json"))
    }

    func fieldsError(_ token: ApplePayToken) -> ApplePayError.Code? {
        failure { () throws(ApplePayError) in try token.decodedFields() }?.code
    }

    @Test(arguments: [
        "", "{", "[]", "null", "{\"version\":\"EC_v1\"}", "{\"version\":1,\"data\":\"\",\"signature\":\"\",\"header\":{}}",
        "{\"version\":\"EC_v1\",\"data\":\"AA==\",\"signature\":\"AA==\",\"header\":{\"publicKeyHash\":\"AA==\"}}",
    ])
    func malformedJSON(_ text: String) {
        #expect(failure { () throws(ApplePayError) in try ApplePayToken.parse(json: Data(text.utf8)) }?.code == .malformedToken)
        #expect(failure { () throws(ApplePayError) in try ApplePayToken.parse(jsonOrBase64: Data(text.utf8)) }?.code == .malformedToken)
    }

    @Test func malformedBase64Wrapper() {
        for text in ["***", "e30", "%%%%", Data("not json".utf8).base64EncodedString()] {
            #expect(failure { () throws(ApplePayError) in try ApplePayToken.parse(base64: text) }?.code == .malformedToken, "\(text)")
        }
        #expect(failure { () throws(ApplePayError) in try ApplePayToken.parse(jsonOrBase64: Data([0xFF, 0xFE, 0x00])) }?.code == .malformedToken)
    }

    @Test func unsupportedVersion() {
        var token = valid
        token.version = "EC_v2"
        #expect(fieldsError(token) == .unsupportedVersion)
        token.version = "ec_v1"
        #expect(fieldsError(token) == .unsupportedVersion)
    }

    @Test func malformedFields() {
        var noEphemeral = valid
        noEphemeral.header.ephemeralPublicKey = nil
        var rsaWithoutWrappedKey = valid
        rsaWithoutWrappedKey.version = "RSA_v1"
        var badData = valid
        badData.data = "not*base64"
        var shortData = valid
        shortData.data = Data(count: 16).base64EncodedString()
        var badSignature = valid
        badSignature.signature = "@@@"
        var emptySignature = valid
        emptySignature.signature = ""
        var badHash = valid
        badHash.header.publicKeyHash = Data(count: 31).base64EncodedString()
        var oddTransactionId = valid
        oddTransactionId.header.transactionId = "abc"
        var nonHexTransactionId = valid
        nonHexTransactionId.header.transactionId = "zz"
        var badApplicationData = valid
        badApplicationData.header.applicationData = "0123"
        for token in [
            noEphemeral, rsaWithoutWrappedKey, badData, shortData, badSignature, emptySignature, badHash,
            oddTransactionId, nonHexTransactionId, badApplicationData,
        ] {
            #expect(fieldsError(token) == .malformedToken, "\(token.header)")
        }
        #expect(fieldsError(valid) == nil)
    }

    @Test func invalidEphemeralKeyIsAMalformedToken() throws {
        var token = valid
        token.header.ephemeralPublicKey = Data(repeating: 0x04, count: 65).base64EncodedString()
        let key = try ApplePayMerchantKey.fromPEM(
            privateKeyPEM: VectorFiles.string("payu-ec-v1/private_key.pem"),
            merchantIdentifier: "merchant.sandbox.payu"
        )
        #expect(failure { () throws(ApplePayError) in try ApplePayDecryptor.decrypt(token, using: key) }?.code == .malformedToken)
    }

    @Test func malformedASN1() throws {
        let payu = bytes(base64: valid.signature)
        var inputs: [[UInt8]] = [
            [], [0x00], [0x30], [0x30, 0x80], [0x30, 0x03, 0x02, 0x01], Array("hello".utf8),
            Array(payu.prefix(payu.count / 2)),  // truncated
            payu + [0x00],  // trailing data
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],  // absurd length
            Array(repeating: 0x30, count: 200) + Array(repeating: 0x80, count: 200),  // deep nesting
        ]
        // A DER certificate is valid ASN.1 but not a ContentInfo.
        var serializer = DER.Serializer()
        try serializer.serialize(try TestPKI().root)
        inputs.append(serializer.serializedBytes)
        for input in inputs {
            let code = failure { () throws(ApplePayError) in try CMSSignedData.parse(input) }?.code
            #expect(code == .malformedSignature, "\(input.prefix(8))")
        }
    }

    @Test func cmsThatIsNotDetachedOrHasNoSignerIsRejected() throws {
        func skeleton(embedContent: Bool, signers: Int) throws -> [UInt8] {
            var s = DER.Serializer()
            let zero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
            try s.appendConstructedNode(identifier: .sequence) { s in
                try s.serialize(TestOIDs.signedData)
                try s.appendConstructedNode(identifier: zero) { s in
                    try s.appendConstructedNode(identifier: .sequence) { s in
                        try s.serialize(1)
                        s.appendConstructedNode(identifier: .set) { _ in }
                        try s.appendConstructedNode(identifier: .sequence) { s in
                            try s.serialize(TestOIDs.data)
                            if embedContent {
                                try s.appendConstructedNode(identifier: zero) { s in try s.serialize(ASN1OctetString(contentBytes: [1, 2, 3])) }
                            }
                        }
                        try s.appendConstructedNode(identifier: .set) { s in
                            for _ in 0..<signers { try s.appendConstructedNode(identifier: .sequence) { s in try s.serialize(1) } }
                        }
                    }
                }
            }
            return s.serializedBytes
        }
        for (embed, signers) in [(true, 1), (false, 0), (false, 2), (false, 1)] {
            let input = try skeleton(embedContent: embed, signers: signers)
            let error = failure { () throws(ApplePayError) in try CMSSignedData.parse(input) }
            #expect(error?.code == .malformedSignature)
        }
        let embedded = try skeleton(embedContent: true, signers: 1)
        #expect(failure { () throws(ApplePayError) in try CMSSignedData.parse(embedded) }?.message.contains("detached") == true)
    }

    @Test func parsesApplesBERSignature() throws {
        let cms = try CMSSignedData.parse(bytes(base64: valid.signature))
        #expect(cms.certificates.count == 2)
        #expect(cms.signerCertificate != nil)
        #expect(cms.signer.signingTime == (try utc("2018-01-26T13:55:18Z")))
        #expect(cms.signer.messageDigest.count == 32)
        #expect(cms.signer.signedAttributesDER.first == 0x31)
    }
}
