/// Why a Merkle proof did not verify.
public struct MerkleProofError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}

/// Verification of inclusion and consistency proofs exactly as RFC 9162 §2.1.3.2 and §2.1.4.2 give the
/// algorithms: what an auditor runs with only the leaf, the proof and signed roots.
public enum MerkleProof {
    /// The root that `proof` makes of leaf `index` with hash `leafHash` in a tree of `size` leaves.
    public static func rootFromInclusion(
        leafHash: [UInt8],
        index: UInt64,
        size: UInt64,
        proof: [[UInt8]]
    ) throws(MerkleProofError) -> [UInt8] {
        guard index < size else { throw MerkleProofError("leaf index \(index) is not below the tree size \(size)") }
        guard leafHash.count == Merkle.hashSize, proof.allSatisfy({ $0.count == Merkle.hashSize }) else {
            throw MerkleProofError("a hash is not \(Merkle.hashSize) bytes")
        }
        var fn = index
        var sn = size - 1
        var r = leafHash
        for p in proof {
            guard sn != 0 else { throw MerkleProofError("the proof is longer than the tree is deep") }
            if fn & 1 == 1 || fn == sn {
                r = Merkle.nodeHash(p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                r = Merkle.nodeHash(r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        guard sn == 0 else { throw MerkleProofError("the proof is shorter than the tree is deep") }
        return r
    }

    /// Checks that `proof` places leaf `index` (hash `leafHash`) in the tree of `size` leaves with `root`.
    public static func verifyInclusion(
        leafHash: [UInt8],
        index: UInt64,
        size: UInt64,
        proof: [[UInt8]],
        root: [UInt8]
    ) throws(MerkleProofError) {
        let computed = try rootFromInclusion(leafHash: leafHash, index: index, size: size, proof: proof)
        guard computed == root else { throw MerkleProofError("the inclusion proof leads to another root") }
    }

    /// Checks that the tree of `size2` leaves with `root2` extends the tree of `size1` leaves with `root1`.
    public static func verifyConsistency(
        size1: UInt64,
        size2: UInt64,
        proof: [[UInt8]],
        root1: [UInt8],
        root2: [UInt8]
    ) throws(MerkleProofError) {
        guard size1 <= size2 else { throw MerkleProofError("size \(size1) is larger than size \(size2)") }
        guard root1.count == Merkle.hashSize, root2.count == Merkle.hashSize, proof.allSatisfy({ $0.count == Merkle.hashSize }) else {
            throw MerkleProofError("a hash is not \(Merkle.hashSize) bytes")
        }
        if size1 == size2 {
            guard proof.isEmpty else { throw MerkleProofError("equal sizes take an empty proof") }
            guard root1 == root2 else { throw MerkleProofError("equal sizes with different roots") }
            return
        }
        if size1 == 0 {
            // Every tree extends the empty one.
            guard proof.isEmpty else { throw MerkleProofError("from the empty tree the proof is empty") }
            guard root1 == Merkle.emptyRoot else { throw MerkleProofError("the first root is not the empty tree's") }
            return
        }
        guard !proof.isEmpty else { throw MerkleProofError("the consistency proof is empty") }
        var path = proof
        if size1 & (size1 - 1) == 0 { path.insert(root1, at: 0) }
        var fn = size1 - 1
        var sn = size2 - 1
        while fn & 1 == 1 {
            fn >>= 1
            sn >>= 1
        }
        var fr = path[0]
        var sr = path[0]
        for c in path.dropFirst() {
            guard sn != 0 else { throw MerkleProofError("the proof is longer than the tree is deep") }
            if fn & 1 == 1 || fn == sn {
                fr = Merkle.nodeHash(c, fr)
                sr = Merkle.nodeHash(c, sr)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                sr = Merkle.nodeHash(sr, c)
            }
            fn >>= 1
            sn >>= 1
        }
        guard sn == 0 else { throw MerkleProofError("the proof is shorter than the tree is deep") }
        guard fr == root1 else { throw MerkleProofError("the proof does not lead to the first root") }
        guard sr == root2 else { throw MerkleProofError("the proof does not lead to the second root") }
    }
}

/// A Merkle tree held in memory: every perfect subtree's hash, level by level, appended leaf by leaf. The
/// reference the stored tree is compared with, the witness's and the tests' tree, and the way a proof is
/// produced from resolved nodes (``MerklePlan``).
public struct MerkleTree: Sendable {
    /// `levels[h][i]`: the hash of perfect subtree `(h, i)`.
    public private(set) var levels: [[[UInt8]]] = [[]]

    public init() {}

    public init(leafHashes: some Sequence<[UInt8]>) {
        for hash in leafHashes { append(leafHash: hash) }
    }

    public var size: UInt64 { UInt64(levels[0].count) }

    public mutating func append(leafHash: [UInt8]) {
        precondition(leafHash.count == Merkle.hashSize)
        levels[0].append(leafHash)
        var height = 0
        // A new leaf completes one perfect subtree per trailing 1 bit of the old size.
        while levels[height].count % 2 == 0 {
            let row = levels[height]
            let parent = Merkle.nodeHash(row[row.count - 2], row[row.count - 1])
            if levels.count == height + 1 { levels.append([]) }
            levels[height + 1].append(parent)
            height += 1
        }
    }

    public func node(_ id: MerkleNodeID) -> [UInt8] { levels[id.height][Int(id.index)] }

    /// The root of the first `size` leaves.
    public func root(size: UInt64) -> [UInt8] {
        precondition(size <= self.size)
        return MerklePlan.subtreeHash(0..<size, node: node)
    }

    public func inclusionProof(index: UInt64, size: UInt64) -> [[UInt8]] {
        precondition(size <= self.size)
        return MerklePlan.inclusion(index: index, size: size).map { MerklePlan.subtreeHash($0, node: node) }
    }

    public func consistencyProof(from size1: UInt64, to size2: UInt64) -> [[UInt8]] {
        precondition(size2 <= self.size)
        return MerklePlan.consistency(from: size1, to: size2).map { MerklePlan.subtreeHash($0, node: node) }
    }
}
