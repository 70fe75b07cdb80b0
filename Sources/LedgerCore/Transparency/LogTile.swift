import Foundation

/// A C2SP `tlog-tiles` tile (c2sp.org/tlog-tiles): at `level` L, tile `index` N holds the hashes of the perfect
/// subtrees of height 8·L numbered N·256 … N·256+255 (at level 0: leaf hashes), `width` of them (256: full).
public struct LogTile: Sendable, Hashable, CustomStringConvertible {
    public static let height = 8
    public static let fullWidth = 1 << height

    public var level: Int
    public var index: UInt64
    public var width: Int

    public init(level: Int, index: UInt64, width: Int = LogTile.fullWidth) {
        precondition(level >= 0 && level < 8 && width >= 1 && width <= Self.fullWidth)
        self.level = level
        self.index = index
        self.width = width
    }

    public var isFull: Bool { width == Self.fullWidth }

    /// The perfect subtree each of its hashes is.
    public func node(_ i: Int) -> MerkleNodeID {
        MerkleNodeID(height: Self.height * level, index: index * UInt64(Self.fullWidth) + UInt64(i))
    }

    /// `<N>[.p/<W>]`: N in zero-padded 3-digit path elements, all but the last prefixed with `x`.
    public var indexPath: String {
        var n = index
        var path = Self.threeDigits(n % 1000)
        while n >= 1000 {
            n /= 1000
            path = "x" + Self.threeDigits(n % 1000) + "/" + path
        }
        return isFull ? path : path + ".p/\(width)"
    }

    /// `tile/<L>/<N>[.p/<W>]`.
    public var path: String { "tile/\(level)/\(indexPath)" }

    public var description: String { path }

    private static func threeDigits(_ n: UInt64) -> String {
        let digits = String(n)
        return String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// Parses `<N>[.p/<W>]` (what follows `tile/<L>/` or `tile/entries/`); nil unless canonical.
    public static func parseIndex(_ path: Substring) -> (index: UInt64, width: Int)? {
        var indexPart = path
        var width = fullWidth
        if let partial = path.range(of: ".p/") {
            let w = path[partial.upperBound...]
            guard let value = Int(w), value >= 1, value < fullWidth, String(value) == w else { return nil }
            width = value
            indexPart = path[..<partial.lowerBound]
        }
        let elements = indexPart.split(separator: "/", omittingEmptySubsequences: false)
        guard !elements.isEmpty, elements.count <= 7 else { return nil }
        var index: UInt64 = 0
        for (i, element) in elements.enumerated() {
            var digits = element
            if i < elements.count - 1 {
                guard digits.hasPrefix("x") else { return nil }
                digits = digits.dropFirst()
            }
            guard digits.count == 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = UInt64(digits) else { return nil }
            let (scaled, overflow) = index.multipliedReportingOverflow(by: 1000)
            guard !overflow else { return nil }
            index = scaled + value
        }
        // Canonical only: no leading "x000/" element.
        if elements.count > 1, elements[0] == "x000" { return nil }
        return (index, width)
    }

    /// Where the hash of perfect subtree `node` comes from: the tile of level `height / 8` holding its leftmost
    /// descendants at height 8·L, the first of them and how many (2^(height mod 8), all in that one tile).
    public static func source(of node: MerkleNodeID) -> (level: Int, tileIndex: UInt64, first: Int, count: Int) {
        let level = node.height / height
        let rise = node.height % height
        let firstAtBase = node.index << rise
        return (level, firstAtBase / UInt64(fullWidth), Int(firstAtBase % UInt64(fullWidth)), 1 << rise)
    }

    /// The tiles of a tree of `size` leaves: all full tiles up to the partial ones, the partial tile of each
    /// level, and nothing empty.
    public static func width(level: Int, index: UInt64, treeSize: UInt64) -> Int {
        let atBase = treeSize >> (UInt64(height) * UInt64(level))
        // An index a request names can be up to 10^21 (seven groups of three digits): one whose first leaf is beyond
        // 2^64 is in no tree (it trapped here, stopping the daemon: found by the contract's fuzzing, issue 51).
        let (start, overflow) = index.multipliedReportingOverflow(by: UInt64(fullWidth))
        guard !overflow, atBase > start else { return 0 }
        return Int(min(UInt64(fullWidth), atBase - start))
    }

    /// The hash of the perfect subtree over `hashes` (a power of two of them, consecutive, same height).
    public static func fold(_ hashes: ArraySlice<[UInt8]>) -> [UInt8] {
        precondition(!hashes.isEmpty && hashes.count & (hashes.count - 1) == 0)
        var row = Array(hashes)
        while row.count > 1 {
            row = stride(from: 0, to: row.count, by: 2).map { Merkle.nodeHash(row[$0], row[$0 + 1]) }
        }
        return row[0]
    }

    /// A tile's bytes: its hashes concatenated.
    public static func bytes(_ hashes: [[UInt8]]) -> [UInt8] { hashes.flatMap { $0 } }

    /// An entry bundle's bytes: each entry with a big-endian uint16 length prefix.
    public static func entryBundle(_ entries: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = []
        for entry in entries {
            precondition(entry.count <= Int(UInt16.max))
            bytes += [UInt8(entry.count >> 8), UInt8(entry.count & 0xff)] + entry
        }
        return bytes
    }
}

/// Roots and proofs from tiles: plan the perfect subtrees (``MerklePlan``), fetch the few tiles that hold them
/// (at most two per level: the leaf's and the right edge's), fold. What the ledger serves proofs with; `fetch`
/// returns each asked tile's bytes (`width` × 32), and a missing or short tile is an error, never a guess.
public enum TiledMerkle {
    public typealias Fetch = @Sendable ([LogTile]) async throws -> [LogTile: [UInt8]]

    /// The tiles of a tree of `treeSize` leaves that hold `nodes`.
    public static func tiles(for nodes: [MerkleNodeID], treeSize: UInt64) -> [LogTile] {
        var seen: Set<LogTile> = []
        var tiles: [LogTile] = []
        for node in nodes {
            let source = LogTile.source(of: node)
            let width = LogTile.width(level: source.level, index: source.tileIndex, treeSize: treeSize)
            precondition(source.first + source.count <= width, "node \(node) is not in a tree of size \(treeSize)")
            let tile = LogTile(level: source.level, index: source.tileIndex, width: width)
            if seen.insert(tile).inserted { tiles.append(tile) }
        }
        return tiles
    }

    /// The hashes of `nodes` in a tree of `treeSize` leaves, from the tiles `fetch` returns.
    public static func nodes(_ nodes: [MerkleNodeID], treeSize: UInt64, fetch: Fetch) async throws -> [MerkleNodeID: [UInt8]] {
        let wanted = tiles(for: nodes, treeSize: treeSize)
        let fetched = try await fetch(wanted)
        var hashes: [MerkleNodeID: [UInt8]] = [:]
        for node in nodes {
            let source = LogTile.source(of: node)
            let tile = LogTile(
                level: source.level,
                index: source.tileIndex,
                width: LogTile.width(level: source.level, index: source.tileIndex, treeSize: treeSize)
            )
            guard let bytes = fetched[tile], bytes.count == tile.width * Merkle.hashSize else {
                throw MerkleProofError("tile \(tile) is not stored (the tree is not built that far)")
            }
            let slice = (source.first..<(source.first + source.count)).map { i in
                Array(bytes[(i * Merkle.hashSize)..<((i + 1) * Merkle.hashSize)])
            }
            hashes[node] = LogTile.fold(slice[...])
        }
        return hashes
    }

    /// `MTH` of each range (all within a tree of `treeSize` leaves), in order.
    public static func subtreeHashes(_ ranges: [Range<UInt64>], treeSize: UInt64, fetch: Fetch) async throws -> [[UInt8]] {
        let resolved = try await nodes(MerklePlan.nodes(for: ranges), treeSize: treeSize, fetch: fetch)
        return ranges.map { range in MerklePlan.subtreeHash(range) { resolved[$0]! } }
    }

    public static func root(size: UInt64, fetch: Fetch) async throws -> [UInt8] {
        guard size > 0 else { return Merkle.emptyRoot }
        return try await subtreeHashes([0..<size], treeSize: size, fetch: fetch)[0]
    }

    /// The inclusion proof of leaf `index` in the tree of `size` leaves, and that tree's root.
    public static func inclusion(index: UInt64, size: UInt64, fetch: Fetch) async throws -> (proof: [[UInt8]], root: [UInt8]) {
        let ranges = MerklePlan.inclusion(index: index, size: size)
        let hashes = try await subtreeHashes(ranges + [0..<size], treeSize: size, fetch: fetch)
        return (Array(hashes.dropLast()), hashes[hashes.count - 1])
    }

    /// The consistency proof from `size1` to `size2`, and both roots.
    public static func consistency(
        from size1: UInt64,
        to size2: UInt64,
        fetch: Fetch
    ) async throws -> (proof: [[UInt8]], root1: [UInt8], root2: [UInt8]) {
        guard size2 > 0 else { return ([], Merkle.emptyRoot, Merkle.emptyRoot) }
        let ranges = MerklePlan.consistency(from: size1, to: size2)
        let extra: [Range<UInt64>] = size1 > 0 ? [0..<size1, 0..<size2] : [0..<size2]
        let hashes = try await subtreeHashes(ranges + extra, treeSize: size2, fetch: fetch)
        let root2 = hashes[hashes.count - 1]
        let root1 = size1 > 0 ? hashes[hashes.count - 2] : Merkle.emptyRoot
        return (Array(hashes.prefix(ranges.count)), root1, root2)
    }
}

extension MerkleTree {
    /// A tile of this tree as tlog-tiles serves it (its hashes are perfect subtrees, all present when the tile's
    /// width is within the tree).
    public func tile(_ tile: LogTile) -> [UInt8] {
        LogTile.bytes((0..<tile.width).map { node(tile.node($0)) })
    }
}
