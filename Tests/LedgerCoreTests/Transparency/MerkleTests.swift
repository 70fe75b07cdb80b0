import LedgerAcquirer
import LedgerCore
import LedgerCoreTestSupport
import Testing

/// The RFC 9162 tree and its proofs against published vectors, then as properties over every size and leaf.
struct MerkleTests {
    // The leaf inputs, node hashes and roots of the RFC 6962 test tree used by Certificate Transparency's Go
    // implementations: transparency-dev/merkle `testonly/constants.go` (LeafInputs, NodeHashes, RootHashes),
    // and its inclusion and consistency vectors: transparency-dev/merkle `proof/verify_test.go`
    // (inclusionProofs, consistencyProofs; there the leaf number is 1-based), both from
    // google/certificate-transparency-go.
    static let leafInputs: [[UInt8]] = [
        "", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f",
    ].map(hex)
    static let roots: [[UInt8]] = [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ].map(hex)
    static let leafHashes: [[UInt8]] = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
        "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
        "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
        "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
    ].map(hex)
    /// (leaf index 0-based, tree size, path)
    static let inclusionVectors: [(UInt64, UInt64, [String])] = [
        (0, 1, []),
        (
            0, 8,
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ]
        ),
        (
            5, 8,
            [
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ]
        ),
        (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
        (
            1, 5,
            [
                "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            ]
        ),
    ]
    /// (size 1, size 2, proof)
    static let consistencyVectors: [(UInt64, UInt64, [String])] = [
        (1, 1, []),
        (
            1, 8,
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ]
        ),
        (
            6, 8,
            [
                "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ]
        ),
        (
            2, 5,
            [
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            ]
        ),
        (
            6, 7,
            [
                "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ]
        ),
    ]

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    static var vectorTree: MerkleTree { MerkleTree(leafHashes: leafInputs.map { Merkle.leafHash($0) }) }

    @Test func leafHashesAndRootsMatchTheRFC6962Vectors() {
        #expect(Self.leafInputs.map { Merkle.leafHash($0) } == Self.leafHashes)
        let tree = Self.vectorTree
        for size in 0...8 {
            #expect(tree.root(size: UInt64(size)) == Self.roots[size], "root of size \(size)")
            #expect(Merkle.rootHash(leafHashes: Self.leafHashes.prefix(size)[...]) == Self.roots[size], "reference root of size \(size)")
        }
    }

    @Test func proofsMatchTheRFC6962Vectors() throws {
        let tree = Self.vectorTree
        for (index, size, path) in Self.inclusionVectors {
            let expected = path.map(Self.hex)
            #expect(tree.inclusionProof(index: index, size: size) == expected, "inclusion \(index) in \(size)")
            try MerkleProof.verifyInclusion(
                leafHash: Self.leafHashes[Int(index)],
                index: index,
                size: size,
                proof: expected,
                root: Self.roots[Int(size)]
            )
        }
        for (size1, size2, path) in Self.consistencyVectors {
            let expected = path.map(Self.hex)
            #expect(tree.consistencyProof(from: size1, to: size2) == expected, "consistency \(size1) → \(size2)")
            try MerkleProof.verifyConsistency(
                size1: size1,
                size2: size2,
                proof: expected,
                root1: Self.roots[Int(size1)],
                root2: Self.roots[Int(size2)]
            )
        }
    }

    static func randomTree(leaves: Int, _ random: inout SeededRandom) -> MerkleTree {
        MerkleTree(leafHashes: (0..<leaves).map { _ in Merkle.leafHash((0..<32).map { _ in UInt8(truncatingIfNeeded: random.next()) }) })
    }

    /// Acceptance: for every tree size 1…1,100 and every leaf, the inclusion proof verifies (and the incremental
    /// root equals RFC 9162's recursive definition).
    @Test(.seeded()) func everyLeafOfEverySizeUpTo1100IsProvablyIncluded() throws {
        var random = PropertySeed.generator()
        let tree = Self.randomTree(leaves: 1100, &random)
        for size in UInt64(1)...1100 {
            let root = tree.root(size: size)
            #expect(root == Merkle.rootHash(leafHashes: tree.levels[0].prefix(Int(size))[...]), "root of size \(size)")
            for index in 0..<size {
                let proof = tree.inclusionProof(index: index, size: size)
                try MerkleProof.verifyInclusion(leafHash: tree.levels[0][Int(index)], index: index, size: size, proof: proof, root: root)
            }
        }
    }

    /// Acceptance: 10,000 random (size1 ≤ size2) pairs, each consistency proof verifies.
    @Test(.seeded()) func tenThousandRandomConsistencyProofsVerify() throws {
        var random = PropertySeed.generator()
        let tree = Self.randomTree(leaves: 5000, &random)
        for _ in 0..<10_000 {
            let size2 = 1 + random.next(below: tree.size)
            let size1 = random.next(below: size2 + 1)
            let proof = tree.consistencyProof(from: size1, to: size2)
            try MerkleProof.verifyConsistency(
                size1: size1,
                size2: size2,
                proof: proof,
                root1: tree.root(size: size1),
                root2: tree.root(size: size2)
            )
        }
    }

    /// Acceptance: flipping any byte of a proof, the leaf or the root makes verification fail.
    @Test(.seeded()) func flippingAnyByteFailsVerification() throws {
        var random = PropertySeed.generator()
        let tree = Self.randomTree(leaves: 300, &random)
        for _ in 0..<40 {
            let size = 1 + random.next(below: tree.size)
            let index = random.next(below: size)
            let leaf = tree.levels[0][Int(index)]
            let root = tree.root(size: size)
            let proof = tree.inclusionProof(index: index, size: size)
            for (n, hash) in proof.enumerated() {
                for byte in 0..<hash.count {
                    var bad = proof
                    bad[n][byte] ^= 1 << UInt8(random.next(below: 8))
                    #expect(throws: MerkleProofError.self) {
                        try MerkleProof.verifyInclusion(leafHash: leaf, index: index, size: size, proof: bad, root: root)
                    }
                }
            }
            for byte in 0..<32 {
                var badLeaf = leaf
                badLeaf[byte] ^= 0x80
                #expect(throws: MerkleProofError.self) {
                    try MerkleProof.verifyInclusion(leafHash: badLeaf, index: index, size: size, proof: proof, root: root)
                }
                var badRoot = root
                badRoot[byte] ^= 0x01
                #expect(throws: MerkleProofError.self) {
                    try MerkleProof.verifyInclusion(leafHash: leaf, index: index, size: size, proof: proof, root: badRoot)
                }
            }
            // A proof cut short or padded, or offered for another index, fails too.
            if !proof.isEmpty {
                #expect(throws: MerkleProofError.self) {
                    try MerkleProof.verifyInclusion(leafHash: leaf, index: index, size: size, proof: Array(proof.dropLast()), root: root)
                }
            }
            #expect(throws: MerkleProofError.self) {
                try MerkleProof.verifyInclusion(leafHash: leaf, index: index, size: size, proof: proof + [root], root: root)
            }

            let size1 = 1 + random.next(below: size)
            let consistency = tree.consistencyProof(from: size1, to: size)
            let root1 = tree.root(size: size1)
            for (n, hash) in consistency.enumerated() {
                for byte in 0..<hash.count {
                    var bad = consistency
                    bad[n][byte] ^= 0x04
                    #expect(throws: MerkleProofError.self) {
                        try MerkleProof.verifyConsistency(size1: size1, size2: size, proof: bad, root1: root1, root2: root)
                    }
                }
            }
            if size1 < size {
                for byte in 0..<32 {
                    var bad1 = root1
                    bad1[byte] ^= 0x10
                    var bad2 = root
                    bad2[byte] ^= 0x10
                    #expect(throws: MerkleProofError.self) {
                        try MerkleProof.verifyConsistency(size1: size1, size2: size, proof: consistency, root1: bad1, root2: root)
                    }
                    #expect(throws: MerkleProofError.self) {
                        try MerkleProof.verifyConsistency(size1: size1, size2: size, proof: consistency, root1: root1, root2: bad2)
                    }
                }
            }
        }
    }

    /// Proofs served from tlog tiles (full tiles, partial right-edge tiles, three levels) equal the in-memory
    /// tree's, and each fetch asks for at most two tiles per level.
    @Test(.seeded()) func tiledProofsEqualTheTreesAndFetchFewTiles() async throws {
        var random = PropertySeed.generator()
        let tree = Self.randomTree(leaves: 70_000, &random)
        let fetch: TiledMerkle.Fetch = { tiles in
            #expect(tiles.count <= 2 * 3, "fetched \(tiles)")
            return Dictionary(uniqueKeysWithValues: tiles.map { ($0, tree.tile($0)) })
        }
        var sizes: [UInt64] = [1, 255, 256, 257, 65_535, 65_536, 65_537, 70_000]
        for _ in 0..<40 { sizes.append(1 + random.next(below: tree.size)) }
        for size in sizes {
            #expect(try await TiledMerkle.root(size: size, fetch: fetch) == tree.root(size: size), "root of \(size)")
            let index = random.next(below: size)
            let (proof, root) = try await TiledMerkle.inclusion(index: index, size: size, fetch: fetch)
            #expect(proof == tree.inclusionProof(index: index, size: size) && root == tree.root(size: size), "inclusion \(index) in \(size)")
            let size1 = random.next(below: size + 1)
            let consistency = try await TiledMerkle.consistency(from: size1, to: size, fetch: fetch)
            #expect(consistency.proof == tree.consistencyProof(from: size1, to: size), "consistency \(size1) → \(size)")
            #expect(consistency.root1 == tree.root(size: size1) && consistency.root2 == tree.root(size: size))
        }
        // The spec's example: a tree of 70,000 leaves has 273 full level-0 tiles, a partial one of width 112, one full
        // level-1 tile, a partial one of width 17 and a partial level-2 tile of width 1.
        #expect(LogTile.width(level: 0, index: 272, treeSize: 70_000) == 256)
        #expect(LogTile.width(level: 0, index: 273, treeSize: 70_000) == 112)
        #expect(LogTile.width(level: 1, index: 0, treeSize: 70_000) == 256)
        #expect(LogTile.width(level: 1, index: 1, treeSize: 70_000) == 17)
        #expect(LogTile.width(level: 2, index: 0, treeSize: 70_000) == 1)
        #expect(LogTile.width(level: 0, index: 274, treeSize: 70_000) == 0)
        // An index whose first leaf is beyond 2^64 (a request can name one) is in no tree; it trapped.
        #expect(LogTile.width(level: 4, index: 828_029_267_845_895_328, treeSize: .max) == 0)
    }

    @Test func tilePathsAreTheSpecsEncoding() {
        #expect(LogTile(level: 0, index: 1_234_067).path == "tile/0/x001/x234/067")
        #expect(LogTile(level: 4, index: 1_234_067, width: 1).path == "tile/4/x001/x234/067.p/1")
        #expect(LogTile(level: 1, index: 5).path == "tile/1/005")
        #expect(LogTile.parseIndex("x001/x234/067")! == (1_234_067, 256))
        #expect(LogTile.parseIndex("067.p/17")! == (67, 17))
        for bad in ["67", "x001/234/067", "001/x234/067", "067.p/256", "067.p/0", "067.p/017", "x000/067", "06a", "067/"] {
            #expect(LogTile.parseIndex(bad[...]) == nil, "\(bad)")
        }
    }

    @Test func badArgumentsAreRefusedNotTrapped() {
        #expect(throws: MerkleProofError.self) {
            try MerkleProof.verifyInclusion(leafHash: Self.leafHashes[0], index: 3, size: 3, proof: [], root: Self.roots[3])
        }
        #expect(throws: MerkleProofError.self) {
            try MerkleProof.verifyConsistency(size1: 5, size2: 4, proof: [], root1: Self.roots[5], root2: Self.roots[4])
        }
        #expect(throws: MerkleProofError.self) {
            try MerkleProof.verifyConsistency(size1: 4, size2: 8, proof: [], root1: Self.roots[4], root2: Self.roots[8])
        }
        #expect(throws: MerkleProofError.self) {
            try MerkleProof.verifyInclusion(leafHash: [1, 2], index: 0, size: 1, proof: [], root: [1, 2])
        }
    }
}
