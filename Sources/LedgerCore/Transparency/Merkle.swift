import Crypto

/// The Merkle tree hash of RFC 9162 §2.1 (the same as RFC 6962 §2.1): SHA-256, leaves hashed as
/// `SHA-256(0x00 ‖ data)`, interior nodes as `SHA-256(0x01 ‖ left ‖ right)`, and a tree of `n` leaves split
/// at `k`, the largest power of two smaller than `n` (so the right edge is unbalanced, never padded).
///
/// In the ledger, leaf `i` (0-based) is the event at position `i + 1` and its data is that event's 32-byte
/// chain `hash`. Hashes are `[UInt8]` of ``hashSize`` bytes throughout.
public enum Merkle {
    public static let hashSize = 32

    /// The root of the empty tree: SHA-256 of nothing.
    public static let emptyRoot: [UInt8] = Array(SHA256.hash(data: [UInt8]()))

    /// `SHA-256(0x00 ‖ data)`.
    public static func leafHash(_ data: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: [0x00])
        hasher.update(data: Array(data))
        return Array(hasher.finalize())
    }

    /// `SHA-256(0x01 ‖ left ‖ right)`.
    public static func nodeHash(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        assert(left.count == hashSize && right.count == hashSize)
        var hasher = SHA256()
        hasher.update(data: [0x01])
        hasher.update(data: left)
        hasher.update(data: right)
        return Array(hasher.finalize())
    }

    /// The largest power of two strictly smaller than `n` (`n` ≥ 2): where RFC 9162 splits a tree of `n` leaves.
    public static func split(_ n: UInt64) -> UInt64 {
        precondition(n >= 2, "a tree of fewer than two leaves does not split")
        return UInt64(1) << (63 - (n - 1).leadingZeroBitCount)
    }

    /// MTH over leaf hashes exactly as RFC 9162 §2.1.1 defines it, recursively: the reference the stored tree
    /// and every proof are checked against (linear in the leaves; never on a request's path).
    public static func rootHash(leafHashes: ArraySlice<[UInt8]>) -> [UInt8] {
        switch leafHashes.count {
        case 0: return emptyRoot
        case 1: return leafHashes[leafHashes.startIndex]
        default:
            let k = Int(split(UInt64(leafHashes.count)))
            let mid = leafHashes.startIndex + k
            return nodeHash(rootHash(leafHashes: leafHashes[..<mid]), rootHash(leafHashes: leafHashes[mid...]))
        }
    }
}

/// A perfect subtree: the `2^height` leaves from `index · 2^height`. Its hash never changes once its last
/// leaf exists, which is what makes it storable append-only.
public struct MerkleNodeID: Hashable, Sendable, CustomStringConvertible {
    public var height: Int
    public var index: UInt64

    public init(height: Int, index: UInt64) {
        precondition(height >= 0 && height < 64)
        self.height = height
        self.index = index
    }

    /// The leaves it covers.
    public var leaves: Range<UInt64> { (index << height)..<((index + 1) << height) }

    public var description: String { "(\(height), \(index))" }
}

/// Which subtree hashes make up a root or a proof: pure arithmetic over sizes, no hashing. A store resolves
/// the ``MerkleNodeID``s (perfect subtrees) and ``subtreeHash(_:node:)`` folds them, so a proof never
/// recomputes the tree.
public enum MerklePlan {
    /// The subtrees `D[a:b]` whose hashes form `PATH(m, D[n])` (RFC 9162 §2.1.3.1), leaf to root.
    public static func inclusion(index m: UInt64, size n: UInt64) -> [Range<UInt64>] {
        precondition(m < n, "leaf \(m) is not in a tree of size \(n)")
        var ranges: [Range<UInt64>] = []
        var lo: UInt64 = 0
        var hi = n
        // Walk down from the root; each level adds the sibling subtree. Collected root-first, returned leaf-first.
        while hi - lo > 1 {
            let k = Merkle.split(hi - lo)
            if m < lo + k {
                ranges.append((lo + k)..<hi)
                hi = lo + k
            } else {
                ranges.append(lo..<(lo + k))
                lo += k
            }
        }
        return ranges.reversed()
    }

    /// The subtrees whose hashes form `PROOF(m, D[n])` (RFC 9162 §2.1.4.1), in proof order; empty when
    /// `m == n` or `m == 0`.
    public static func consistency(from m: UInt64, to n: UInt64) -> [Range<UInt64>] {
        precondition(m <= n, "a tree of size \(m) cannot extend to size \(n)")
        guard m > 0, m < n else { return [] }
        var ranges: [Range<UInt64>] = []
        subproof(m, lo: 0, hi: n, complete: true, into: &ranges)
        return ranges
    }

    private static func subproof(_ m: UInt64, lo: UInt64, hi: UInt64, complete: Bool, into ranges: inout [Range<UInt64>]) {
        let n = hi - lo
        if m == n {
            if !complete { ranges.append(lo..<hi) }
            return
        }
        let k = Merkle.split(n)
        if m <= k {
            subproof(m, lo: lo, hi: lo + k, complete: complete, into: &ranges)
            ranges.append((lo + k)..<hi)
        } else {
            subproof(m - k, lo: lo + k, hi: hi, complete: false, into: &ranges)
            ranges.append(lo..<(lo + k))
        }
    }

    /// The perfect subtrees that `D[a:b]` is made of, left to right (the binary digits of `b - a`, largest
    /// first). `a` must be aligned as every range of a plan is: a multiple of the first subtree's size.
    public static func perfectSubtrees(of range: Range<UInt64>) -> [MerkleNodeID] {
        var nodes: [MerkleNodeID] = []
        var start = range.lowerBound
        var remaining = range.upperBound - range.lowerBound
        while remaining > 0 {
            let height = 63 - remaining.leadingZeroBitCount
            assert(start % (UInt64(1) << height) == 0, "range \(range) is not aligned")
            nodes.append(MerkleNodeID(height: height, index: start >> height))
            start += UInt64(1) << height
            remaining -= UInt64(1) << height
        }
        return nodes
    }

    /// Every perfect subtree a plan's ranges need, each once, in a stable order.
    public static func nodes(for ranges: [Range<UInt64>]) -> [MerkleNodeID] {
        var seen: Set<MerkleNodeID> = []
        var nodes: [MerkleNodeID] = []
        for range in ranges {
            for node in perfectSubtrees(of: range) where seen.insert(node).inserted { nodes.append(node) }
        }
        return nodes
    }

    /// `MTH(D[a:b])` from its perfect subtrees: RFC 9162 splits the right edge at the largest power of two, so
    /// the hash is the right fold `node(p₁, node(p₂, … pₖ))` of ``perfectSubtrees(of:)``.
    public static func subtreeHash<E: Error>(
        _ range: Range<UInt64>,
        node: (MerkleNodeID) throws(E) -> [UInt8]
    ) throws(E) -> [UInt8] {
        if range.isEmpty { return Merkle.emptyRoot }
        let parts = perfectSubtrees(of: range)
        var hash = try node(parts[parts.count - 1])
        for part in parts.dropLast().reversed() { hash = Merkle.nodeHash(try node(part), hash) }
        return hash
    }
}
