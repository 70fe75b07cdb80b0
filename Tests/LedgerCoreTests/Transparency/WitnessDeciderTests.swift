import Crypto
import Foundation
import LedgerCore
import LedgerCoreTestSupport
import Testing

/// Every branch of the tlog-witness add-checkpoint decision, on two logs that share a prefix and then diverge.
struct WitnessDeciderTests {
    static let origin = "ledger.example/test"

    struct Log {
        var tree = MerkleTree()
        let signer: NoteSigner

        mutating func append(_ tag: UInt8, count: Int) {
            for i in 0..<count { tree.append(leafHash: Merkle.leafHash([tag, UInt8(truncatingIfNeeded: i), UInt8(truncatingIfNeeded: i >> 8)])) }
        }

        func request(old: UInt64, size: UInt64? = nil) throws -> AddCheckpointRequest {
            let size = size ?? tree.size
            let checkpoint = try LogCheckpoint(origin: WitnessDeciderTests.origin, size: size, rootHash: tree.root(size: size))
            let note = SignedNote(text: checkpoint.text, signatures: [try signer.sign(checkpoint.text)])
            return try AddCheckpointRequest(oldSize: old, proof: tree.consistencyProof(from: old, to: size), note: note)
        }
    }

    static func pair() throws -> (Log, Log, [NoteVerifier]) {
        let signer = try NoteSigner(name: origin, kind: .ed25519, key: Curve25519.Signing.PrivateKey())
        var a = Log(signer: signer)
        a.append(0, count: 300)
        var b = a
        a.append(1, count: 20)
        b.append(2, count: 20)
        return (a, b, [signer.verifier])
    }

    @Test func cosignsAnExtensionAndRefusesTheDivergentLog() throws {
        let (a, b, keys) = try Self.pair()
        // The shared prefix, first seen.
        guard case .success(let first) = WitnessDecider.decide(try a.request(old: 0, size: 300), trustedKeys: keys, latest: nil) else {
            Issue.record("the first checkpoint was refused")
            return
        }
        // Log A extends it: cosigned.
        guard case .success(let second) = WitnessDecider.decide(try a.request(old: 300), trustedKeys: keys, latest: first) else {
            Issue.record("a consistent extension was refused")
            return
        }
        #expect(second.size == 320)
        // Log B (same prefix, other suffix) at the same size: a split view.
        let split = WitnessDecider.decide(try b.request(old: 320), trustedKeys: keys, latest: second)
        #expect(split.failure?.code == .splitView && split.failure?.status == 409)
        // Log B grown further, with B's own consistency proof from 320: not an extension of A at 320.
        var grown = b
        grown.append(3, count: 50)
        let fork = WitnessDecider.decide(try grown.request(old: 320), trustedKeys: keys, latest: second)
        #expect(fork.failure?.code == .inconsistent && fork.failure?.status == 422)
        #expect(fork.failure?.reason.contains("does not extend") == true)
        // B claiming an old size the witness did not cosign: 409 with the size it did.
        let stale = WitnessDecider.decide(try grown.request(old: 300), trustedKeys: keys, latest: second)
        #expect(stale.failure?.code == .staleOldSize && stale.failure?.latestSize == 320)
        // The same checkpoint again is fine (idempotent).
        #expect(WitnessDecider.decide(try a.request(old: 320), trustedKeys: keys, latest: second).failure == nil)
    }

    @Test func refusesUnknownOriginsBadSignaturesAndBadSizes() throws {
        let (a, _, keys) = try Self.pair()
        let stranger = try NoteSigner(name: Self.origin, kind: .ed25519, key: Curve25519.Signing.PrivateKey())
        #expect(WitnessDecider.decide(try a.request(old: 0), trustedKeys: [stranger.verifier], latest: nil).failure?.code == .badSignature)
        let otherOrigin = try NoteVerifier(name: "elsewhere.example/log", kind: .ed25519, publicKey: keys[0].publicKey)
        #expect(WitnessDecider.decide(try a.request(old: 0), trustedKeys: [otherOrigin], latest: nil).failure?.status == 404)
        var request = try a.request(old: 0)
        request.oldSize = request.checkpoint.size + 1
        #expect(WitnessDecider.decide(request, trustedKeys: keys, latest: nil).failure?.status == 400)
        var forged = try a.request(old: 0)
        forged.note.signatures[0].bytes[3] ^= 1
        #expect(WitnessDecider.decide(forged, trustedKeys: keys, latest: nil).failure?.status == 403)
    }

    @Test func requestBodiesRoundTripAndMalformedOnesAreRefused() throws {
        let (a, _, _) = try Self.pair()
        let request = try a.request(old: 100)
        #expect(try AddCheckpointRequest(body: request.body) == request)
        #expect(request.body.hasPrefix("old 100\n"))
        for bad in [
            "old 01\n\n" + request.note.serialized, "new 1\n\n" + request.note.serialized, "old 1\nAAAA\n\n" + request.note.serialized, "old 1\n",
        ] {
            #expect(throws: NoteError.self) { try AddCheckpointRequest(body: bad) }
        }
    }
}
