import Crypto
import Foundation
import LedgerCore
import Testing

/// Signed notes, verifier keys, checkpoints and cosignatures byte for byte as the C2SP specifications and their
/// reference implementation give them.
struct SignedNoteTests {
    // The example of Go's golang.org/x/mod/sumdb/note package documentation (the reference implementation of
    // c2sp.org/signed-note): its private key (PRIVATE+KEY+<name>+<key ID>+base64(0x01 ‖ seed)), verifier key,
    // text and signed note.
    static let goSeedKey = "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
    static let goVerifierKey = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
    static let goText = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
    static let goNote =
        goText + "\n"
        + "\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"

    static func goSigner() throws -> NoteSigner {
        let material = try #require(Data(base64Encoded: goSeedKey))
        #expect(material.first == 0x01)
        return try NoteSigner(name: "PeterNeumann", kind: .ed25519, key: Curve25519.Signing.PrivateKey(rawRepresentation: material.dropFirst()))
    }

    @Test func keyIDAndVerifierKeyMatchTheReferenceExample() throws {
        let signer = try Self.goSigner()
        #expect(signer.verifier.keyID == 0xc74f_20a3)
        #expect(signer.verifier.vkey == Self.goVerifierKey)
        let parsed = try NoteVerifier(vkey: Self.goVerifierKey)
        #expect(parsed == signer.verifier)
        // A verifier key whose ID does not match its name and key is refused.
        #expect(throws: NoteError.self) { try NoteVerifier(vkey: "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW") }
        #expect(throws: NoteError.self) { try NoteVerifier(vkey: "Peter+Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW") }
    }

    @Test func verifierKeysWhoseBase64HoldsAPlusRoundTrip() throws {
        // Base64 uses "+": only the first two "+" separate the name and the key ID from the key.
        var found = 0
        for seed in 0..<200 where found < 5 {
            let key = try Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: UInt8(seed), count: 32))
            for kind in [NoteVerifier.Kind.ed25519, .cosignatureV1] {
                let verifier = try NoteSigner(name: "log.example/plus", kind: kind, key: key).verifier
                guard verifier.vkey.split(separator: "+").count > 3 else { continue }
                #expect(try NoteVerifier(vkey: verifier.vkey) == verifier)
                found += 1
            }
        }
        #expect(found > 0)
    }

    @Test func signingReproducesTheReferenceNoteByteForByte() throws {
        // Ed25519 (RFC 8032) is deterministic: the same key and text give the same signature line, em dash,
        // spaces, base64 and final newline included.
        let signer = try Self.goSigner()
        let note = SignedNote(text: Self.goText, signatures: [try signer.sign(Self.goText)])
        #expect(note.serialized == Self.goNote)
        #expect(Array(note.serialized.utf8) == Array(Self.goNote.utf8))
    }

    @Test func theReferenceNoteParsesAndVerifies() throws {
        let note = try SignedNote(parsing: Self.goNote)
        #expect(note.text == Self.goText)
        #expect(note.signatures.count == 1 && note.signatures[0].keyID == 0xc74f_20a3)
        let verified = try note.verified(by: [try NoteVerifier(vkey: Self.goVerifierKey)])
        #expect(verified.count == 1)
        #expect(note.serialized == Self.goNote)
    }

    @Test func flippingAnyByteOfTheTextOrSignatureFailsVerification() throws {
        let verifier = try NoteVerifier(vkey: Self.goVerifierKey)
        let note = try SignedNote(parsing: Self.goNote)
        for i in 0..<note.signatures[0].bytes.count {
            var bad = note
            bad.signatures[0].bytes[i] ^= 0x01
            #expect(throws: NoteError.self) { try bad.verified(by: [verifier]) }
        }
        var text = Array(Self.goText.utf8)
        for i in 0..<text.count {
            text[i] ^= 0x02
            if let changed = String(bytes: text, encoding: .utf8), changed.hasSuffix("\n") {
                let bad = SignedNote(text: changed, signatures: note.signatures)
                #expect(throws: NoteError.self) { try bad.verified(by: [verifier]) }
            }
            text[i] ^= 0x02
        }
    }

    @Test func unknownSignaturesAreIgnoredAndAKnownBadOneRejectsTheNote() throws {
        let verifier = try NoteVerifier(vkey: Self.goVerifierKey)
        let other = try NoteSigner(name: "other.example/log", kind: .ed25519, key: Curve25519.Signing.PrivateKey())
        var note = try SignedNote(parsing: Self.goNote)
        note.signatures.insert(try other.sign(Self.goText), at: 0)
        #expect(try note.verified(by: [verifier]).count == 1)
        // Only unknown signatures: rejected.
        #expect(throws: NoteError.self) { try SignedNote(text: Self.goText, signatures: [note.signatures[0]]).verified(by: [verifier]) }
    }

    @Test func malformedNotesAreRefused() {
        for bad in [
            Self.goText,  // no signatures
            Self.goText + "\n",  // blank line, no signature
            Self.goText + "\n- PeterNeumann x08go/ZJku\n",  // hyphen, not an em dash
            Self.goText + "\n\u{2014} PeterNeumann x08go/ZJkuBS9UG\n",  // not base64 of ≥ 5 bytes
            String(Self.goNote.dropLast()),  // no final newline
            "a\u{7}b\n\n\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
        ] {
            #expect(throws: NoteError.self, "\(bad)") { try SignedNote(parsing: bad) }
        }
    }

    // c2sp.org/tlog-checkpoint and c2sp.org/tlog-cosignature: the example checkpoint body of both specs.
    static let specCheckpointText = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"

    @Test func checkpointTextMatchesTheSpecExample() throws {
        let checkpoint = try LogCheckpoint(text: Self.specCheckpointText)
        #expect(checkpoint.origin == "example.com/behind-the-sofa")
        #expect(checkpoint.size == 20_852_163)
        #expect(checkpoint.text == Self.specCheckpointText)
        let rebuilt = try LogCheckpoint(origin: checkpoint.origin, size: checkpoint.size, rootHash: checkpoint.rootHash)
        #expect(rebuilt.text == Self.specCheckpointText)
        for bad in ["example.com/x\n020852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "example.com/x\n1\nAAAA\n", "example.com/x\n1\n"] {
            #expect(throws: NoteError.self) { try LogCheckpoint(text: bad) }
        }
        // The empty tree is size 0, not "00".
        #expect(try LogCheckpoint(origin: "o", size: 0, rootHash: Merkle.emptyRoot).text.hasPrefix("o\n0\n"))
    }

    @Test func cosignatureSignsTheSpecMessage() throws {
        // The message of c2sp.org/tlog-cosignature's example: header, time line, then the checkpoint body.
        let message = Cosignature.message(checkpointText: Self.specCheckpointText, timestamp: 1_679_315_147)
        #expect(
            String(decoding: message, as: UTF8.self)
                == "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        )
        let witness = try NoteSigner(name: "witness.example/w1", kind: .cosignatureV1, key: Curve25519.Signing.PrivateKey())
        let cosignature = try witness.cosign(Self.specCheckpointText, timestamp: 1_679_315_147)
        #expect(cosignature.bytes.count == 72)
        #expect(Array(cosignature.bytes.prefix(8)) == [0, 0, 0, 0, 0x64, 0x18, 0x50, 0xcb])  // 1679315147 big-endian
        #expect(witness.verifier.isValid(cosignature, over: Self.specCheckpointText))
        #expect(!witness.verifier.isValid(cosignature, over: Self.specCheckpointText.replacingOccurrences(of: "20852163", with: "20852164")))
        // The cosigner's key ID uses type byte 0x04: the same key as a log key has another ID.
        let asLogKey = try NoteVerifier(name: witness.verifier.name, kind: .ed25519, publicKey: witness.verifier.publicKey)
        #expect(asLogKey.keyID != witness.verifier.keyID)
        #expect(witness.verifier.vkey.split(separator: "+")[2].hasPrefix("B"))  // base64 of 0x04 ‖ key starts with "B"
        // The spec's example cosignature line carries that same timestamp after its key ID.
        let example = try SignedNote.Signature(
            line:
                "\u{2014} witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n"
        )
        #expect(example.name == "witness.example.com/w1")
        #expect(Cosignature.timestamp(of: example) == 1_679_315_147)
    }
}
