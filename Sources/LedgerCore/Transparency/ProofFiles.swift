import Foundation

/// An inclusion proof as JSON (`GET /log/proof/inclusion`, `ledgerd audit prove --position`): what an auditor
/// keeps and checks offline with a checkpoint of `tree_size` and the log's verifier key. Hashes are base64, as in
/// checkpoints.
public struct InclusionProofFile: Codable, Sendable, Hashable {
    public static let format = "ledgerd-inclusion-proof-v1"

    public var format: String
    /// The event's position; its leaf index is `position − 1`.
    public var position: Int64
    public var treeSize: UInt64
    /// The leaf's data: the event's 32-byte chain hash.
    public var leafData: String
    public var proof: [String]
    public var rootHash: String
    /// The signed checkpoint of `tree_size`, when the ledger had one at hand (its current one).
    public var checkpoint: String?

    public init(position: Int64, treeSize: UInt64, leafData: [UInt8], proof: [[UInt8]], rootHash: [UInt8], checkpoint: String?) {
        format = Self.format
        self.position = position
        self.treeSize = treeSize
        self.leafData = Data(leafData).base64EncodedString()
        self.proof = proof.map { Data($0).base64EncodedString() }
        self.rootHash = Data(rootHash).base64EncodedString()
        self.checkpoint = checkpoint
    }

    enum CodingKeys: String, CodingKey {
        case format, position, proof, checkpoint
        case treeSize = "tree_size"
        case leafData = "leaf_data"
        case rootHash = "root_hash"
    }

    /// Checks the proof against `checkpoint` (verified with `verifiers`, and with at least `witnesses` cosignatures
    /// from `witnessKeys`): the checkpoint's size is the proof's and the proof leads from the leaf to its root.
    public func verify(
        against checkpoint: SignedNote,
        verifiers: [NoteVerifier],
        witnessKeys: [NoteVerifier] = [],
        witnesses: Int = 0
    ) throws(NoteError) {
        let signed = try ProofFiles.verifiedCheckpoint(checkpoint, verifiers: verifiers, witnessKeys: witnessKeys, witnesses: witnesses)
        guard format == Self.format else { throw NoteError("not a \(Self.format) file") }
        guard signed.size == treeSize else { throw NoteError("the proof is for size \(treeSize), the checkpoint for size \(signed.size)") }
        guard position >= 1, let leaf = ProofFiles.hash(leafData), let path = ProofFiles.hashes(proof) else {
            throw NoteError("the proof's position or hashes are malformed")
        }
        do {
            try MerkleProof.verifyInclusion(
                leafHash: Merkle.leafHash(leaf),
                index: UInt64(position - 1),
                size: treeSize,
                proof: path,
                root: signed.rootHash
            )
        } catch {
            throw NoteError("the event at position \(position) is not proven in the checkpoint of size \(treeSize): \(error)")
        }
    }
}

/// A consistency proof as JSON (`GET /log/proof/consistency`, `ledgerd audit prove --from --to`).
public struct ConsistencyProofFile: Codable, Sendable, Hashable {
    public static let format = "ledgerd-consistency-proof-v1"

    public var format: String
    public var from: UInt64
    public var to: UInt64
    public var proof: [String]
    public var fromRoot: String
    public var toRoot: String

    public init(from: UInt64, to: UInt64, proof: [[UInt8]], fromRoot: [UInt8], toRoot: [UInt8]) {
        format = Self.format
        self.from = from
        self.to = to
        self.proof = proof.map { Data($0).base64EncodedString() }
        self.fromRoot = Data(fromRoot).base64EncodedString()
        self.toRoot = Data(toRoot).base64EncodedString()
    }

    enum CodingKeys: String, CodingKey {
        case format, from, to, proof
        case fromRoot = "from_root"
        case toRoot = "to_root"
    }

    /// Checks that the checkpoint `newer` extends the checkpoint `older` by this proof.
    public func verify(
        older: SignedNote,
        newer: SignedNote,
        verifiers: [NoteVerifier],
        witnessKeys: [NoteVerifier] = [],
        witnesses: Int = 0
    ) throws(NoteError) {
        let first = try ProofFiles.verifiedCheckpoint(older, verifiers: verifiers, witnessKeys: witnessKeys, witnesses: witnesses)
        let second = try ProofFiles.verifiedCheckpoint(newer, verifiers: verifiers, witnessKeys: witnessKeys, witnesses: witnesses)
        guard format == Self.format else { throw NoteError("not a \(Self.format) file") }
        guard first.origin == second.origin else { throw NoteError("the checkpoints are of two logs") }
        guard first.size == from, second.size == to else {
            throw NoteError("the proof is from \(from) to \(to), the checkpoints are of sizes \(first.size) and \(second.size)")
        }
        guard let path = ProofFiles.hashes(proof) else { throw NoteError("the proof's hashes are malformed") }
        do {
            try MerkleProof.verifyConsistency(size1: from, size2: to, proof: path, root1: first.rootHash, root2: second.rootHash)
        } catch {
            throw NoteError("the checkpoint of size \(to) does not extend the one of size \(from): \(error)")
        }
    }
}

enum ProofFiles {
    static func hash(_ text: String) -> [UInt8]? {
        guard let data = Data(base64Encoded: text), data.count == Merkle.hashSize else { return nil }
        return Array(data)
    }

    static func hashes(_ texts: [String]) -> [[UInt8]]? {
        var hashes: [[UInt8]] = []
        for text in texts {
            guard let hash = hash(text) else { return nil }
            hashes.append(hash)
        }
        return hashes
    }

    /// The checkpoint in `note`, once its log signature and at least `witnesses` cosignatures verify.
    static func verifiedCheckpoint(
        _ note: SignedNote,
        verifiers: [NoteVerifier],
        witnessKeys: [NoteVerifier],
        witnesses: Int
    ) throws(NoteError) -> LogCheckpoint {
        let checkpoint = try LogCheckpoint(text: note.text)
        _ = try note.verified(by: verifiers.filter { $0.name == checkpoint.origin && $0.kind == .ed25519 })
        if witnesses > 0 {
            let cosigned = (try? note.verified(by: witnessKeys.filter { $0.kind == .cosignatureV1 })) ?? []
            let distinct = Set(cosigned.map { $0.0.vkey })
            guard distinct.count >= witnesses else {
                throw NoteError("the checkpoint carries \(distinct.count) witness cosignatures, \(witnesses) required")
            }
        }
        return checkpoint
    }
}
