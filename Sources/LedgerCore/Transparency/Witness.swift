import Foundation

/// A `POST /add-checkpoint` body (c2sp.org/tlog-witness): `old <size>`, zero to 63 base64 consistency-proof
/// lines, a blank line, then the signed checkpoint note.
public struct AddCheckpointRequest: Sendable, Hashable {
    public var oldSize: UInt64
    public var proof: [[UInt8]]
    public var note: SignedNote
    public var checkpoint: LogCheckpoint

    public init(oldSize: UInt64, proof: [[UInt8]], note: SignedNote) throws(NoteError) {
        self.oldSize = oldSize
        self.proof = proof
        self.note = note
        checkpoint = try LogCheckpoint(text: note.text)
    }

    /// The request body.
    public var body: String {
        "old \(oldSize)\n" + proof.map { Data($0).base64EncodedString() + "\n" }.joined() + "\n" + note.serialized
    }

    public init(body: String) throws(NoteError) {
        guard let blank = body.range(of: "\n\n") else { throw NoteError("the request is old size, proof lines, a blank line, the checkpoint") }
        let head = body[..<blank.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = head.first, first.hasPrefix("old "), let old = UInt64(first.dropFirst(4)), String(old) == first.dropFirst(4) else {
            throw NoteError("the first line is \"old <size>\" in decimal without leading zeroes")
        }
        let lines = head.dropFirst()
        guard lines.count <= 63 else { throw NoteError("at most 63 consistency proof lines") }
        var proof: [[UInt8]] = []
        for line in lines {
            guard let hash = Data(base64Encoded: String(line)), hash.count == Merkle.hashSize else {
                throw NoteError("a consistency proof line is base64 of \(Merkle.hashSize) bytes")
            }
            proof.append(Array(hash))
        }
        try self.init(oldSize: old, proof: proof, note: try SignedNote(parsing: String(body[blank.upperBound...])))
    }
}

/// What a witness remembers of one log: the latest checkpoint it cosigned.
public struct WitnessedCheckpoint: Codable, Sendable, Hashable {
    public var size: UInt64
    /// Base64 of the root hash, as the checkpoint carries it.
    public var rootHash: String

    public init(size: UInt64, rootHash: String) {
        self.size = size
        self.rootHash = rootHash
    }
}

/// Why a witness refused a checkpoint: the HTTP status the protocol prescribes, a stable code for the metric
/// and the log, and a sentence for the operator.
public struct WitnessRefusal: Error, Sendable, Hashable {
    public enum Code: String, Sendable, CaseIterable {
        /// 400: the body is not an add-checkpoint request, or the old size is beyond the checkpoint.
        case malformed
        /// 404: no trusted key for this origin.
        case unknownOrigin = "unknown_origin"
        /// 403: no signature from a trusted key verifies.
        case badSignature = "bad_signature"
        /// 409: the old size is not the size this witness last cosigned (the client is stale).
        case staleOldSize = "stale_old_size"
        /// 409: same size as the last cosigned checkpoint, another root: a split view.
        case splitView = "split_view"
        /// 422: the consistency proof does not show the checkpoint extends the last cosigned one (fork, rewrite).
        case inconsistent
    }

    public var code: Code
    public var reason: String
    /// With ``Code/staleOldSize``: the size this witness last cosigned (the 409 body).
    public var latestSize: UInt64?

    public init(_ code: Code, _ reason: String, latestSize: UInt64? = nil) {
        self.code = code
        self.reason = reason
        self.latestSize = latestSize
    }

    public var status: Int {
        switch code {
        case .malformed: 400
        case .unknownOrigin: 404
        case .badSignature: 403
        case .staleOldSize, .splitView: 409
        case .inconsistent: 422
        }
    }
}

/// The witness's decision for one request (c2sp.org/tlog-witness, add-checkpoint): pure, so every branch is
/// tested without a server; the service persists ``WitnessedCheckpoint`` atomically before it cosigns.
public enum WitnessDecider {
    public static func decide(
        _ request: AddCheckpointRequest,
        trustedKeys: [NoteVerifier],
        latest: WitnessedCheckpoint?
    ) -> Result<WitnessedCheckpoint, WitnessRefusal> {
        let checkpoint = request.checkpoint
        let keys = trustedKeys.filter { $0.name == checkpoint.origin && $0.kind == .ed25519 }
        guard !keys.isEmpty else { return .failure(WitnessRefusal(.unknownOrigin, "no trusted key for the origin \(checkpoint.origin)")) }
        do {
            _ = try request.note.verified(by: keys)
        } catch {
            return .failure(WitnessRefusal(.badSignature, "the checkpoint is not signed by a trusted key: \(error)"))
        }
        guard request.oldSize <= checkpoint.size else {
            return .failure(WitnessRefusal(.malformed, "old size \(request.oldSize) is beyond the checkpoint's size \(checkpoint.size)"))
        }
        let latestSize = latest?.size ?? 0
        guard request.oldSize == latestSize else {
            return .failure(
                WitnessRefusal(
                    .staleOldSize,
                    "old size \(request.oldSize) is not the size this witness last cosigned (\(latestSize))",
                    latestSize: latestSize
                )
            )
        }
        let root = Data(checkpoint.rootHash).base64EncodedString()
        let next = WitnessedCheckpoint(size: checkpoint.size, rootHash: root)
        guard let latest, latest.size > 0 else {
            guard request.proof.isEmpty else { return .failure(WitnessRefusal(.inconsistent, "from size 0 the consistency proof is empty")) }
            return .success(next)
        }
        if checkpoint.size == latest.size {
            guard root == latest.rootHash else {
                return .failure(
                    WitnessRefusal(
                        .splitView,
                        "split view: size \(latest.size) was cosigned with root \(latest.rootHash), this checkpoint has root \(root)"
                    )
                )
            }
            return .success(next)
        }
        do {
            try MerkleProof.verifyConsistency(
                size1: latest.size,
                size2: checkpoint.size,
                proof: request.proof,
                root1: Array(Data(base64Encoded: latest.rootHash) ?? Data()),
                root2: checkpoint.rootHash
            )
        } catch {
            return .failure(
                WitnessRefusal(
                    .inconsistent,
                    "the checkpoint of size \(checkpoint.size) does not extend the one cosigned at size \(latest.size) "
                        + "(root \(latest.rootHash)): a fork or a rewritten log (\(error))"
                )
            )
        }
        return .success(next)
    }
}
