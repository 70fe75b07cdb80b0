import Crypto
import Foundation
import LedgerCore
import LedgerPostgres
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// The transparency log over the event log: the RFC 9162 tree stored as tlog tiles (sql/0021), C2SP checkpoints
/// signed with the checkpoint key, tiles and entry bundles as tlog-tiles serves them, and inclusion and
/// consistency proofs. Every answer reads a few tiles; none recomputes the tree.
///
/// The tree can prove any size up to ``size()``: the durable head (``HeadWatcher``: no checkpoint, proof or tile covers
/// a position a failover could take back), as long as the stored full tiles reach its last partial tile (the builder
/// keeps them there).
public struct TransparencyLog: Sendable {
    let tiles: MerkleTileStore
    /// Signs checkpoints with the checkpoint key under the log's origin; nil: no key, no checkpoints.
    let signer: NoteSigner?
    public let origin: String
    let latest: LatestCheckpoint
    /// The tiles read so far (a tile of a given width never changes): a proof reads from PostgreSQL only the tiles it
    /// has not seen, typically its leaf's level-0 tile.
    let cache: TileCache
    /// The durable head, which bounds every size served.
    let watcher: HeadWatcher
    let logger: Logger
    /// A crash test's fault point (`merkle.tiles_stored`: after a batch of tiles commits, before the next).
    let faultCrashAt: FaultPoint?

    /// - Parameters:
    ///   - origin: the checkpoint's origin line and the signature's key name (`LEDGERD_LOG_ORIGIN`).
    ///   - key: the checkpoint key (`LEDGERD_CHECKPOINT_KEY`); the same Ed25519 key signs the `(position, hash)`
    ///     checkpoints, whose message starts with `ledgerd-checkpoint-v1`, never a valid origin here.
    public init(
        client: DatabaseClient,
        origin: String,
        key: CheckpointKey?,
        watcher: HeadWatcher,
        logger: Logger,
        faultCrashAt: FaultPoint? = nil
    ) throws {
        guard origin != Checkpoint.format else {
            throw ConfigurationError("the log origin cannot be \(Checkpoint.format) (the (position, hash) checkpoints' header)")
        }
        do {
            signer = try key.map { try NoteSigner(name: origin, kind: .ed25519, key: $0.key) }
            _ = try LogCheckpoint(origin: origin, size: 0, rootHash: Merkle.emptyRoot)
        } catch let error as NoteError {
            throw ConfigurationError("the log origin \(origin) is not a valid key name and origin line: \(error.reason)")
        }
        self.origin = origin
        tiles = MerkleTileStore(client: client, logger: logger)
        latest = LatestCheckpoint()
        cache = TileCache()
        self.watcher = watcher
        self.logger = logger
        self.faultCrashAt = faultCrashAt
    }

    /// The verifier key auditors check checkpoints with (`<origin>+<key ID>+<base64 key>`).
    public var verifierKey: String? { signer?.verifier.vkey }

    /// The verifier key of the log `origin` signed with `key` (what a witness's operator configures).
    public static func verifierKey(origin: String, key: CheckpointKey) throws -> String {
        try NoteSigner(name: origin, kind: .ed25519, key: key.key).verifier.vkey
    }

    /// The largest tree size the stored tiles can prove, at most the durable head.
    public func size() async throws -> UInt64 {
        let (head, built) = try await tiles.extent()
        let durable = try await watcher.servable(committed: Int64(head))
        return min(UInt64(durable), built + UInt64(LogTile.fullWidth - 1))
    }

    /// Extends the stored tree (in transactions of at most `batch` tiles) until it proves the head as it was when
    /// called, or more; returns the size it can prove. While another builder (the background one, another daemon's)
    /// holds the tree, this waits for it rather than stopping short: a checkpoint signed after `build()` covers
    /// every event appended before it.
    @discardableResult
    public func build(batch: Int = 256) async throws -> UInt64 {
        let (head, built) = try await tiles.extent()
        // The tiles must cover every full tile below the head; the partial one is computed when asked.
        let needed = head - head % UInt64(LogTile.fullWidth)
        var covered = built
        while covered < needed {
            covered = try await tiles.extend(maximumTiles: batch, wait: true)
            if covered < needed { FaultPoint.merkleTilesStored.crashIfConfigured(faultCrashAt, logger: logger) }
        }
        return try await size()
    }

    var fetch: TiledMerkle.Fetch {
        let (tiles, cache) = (self.tiles, self.cache)
        return { wanted in
            var found = cache.tiles(wanted)
            let missing = wanted.filter { found[$0] == nil }
            guard !missing.isEmpty else { return found }
            let read = try await tiles.tiles(missing)
            cache.keep(read)
            found.merge(read) { $1 }
            return found
        }
    }

    /// The signed checkpoint of the current size: the one signed last if the size has not grown since.
    public func checkpoint() async throws -> SignedNote {
        guard let signer else {
            throw ServiceError.conflict("checkpoint_key_missing", "no signing key is configured (LEDGERD_CHECKPOINT_KEY)")
        }
        // Signed on demand too: extend the tree to the head first (cheap when the builder keeps up).
        let size = try await build()
        if let note = await latest.note, let current = try? LogCheckpoint(text: note.text), current.size == size { return note }
        let root = try await TiledMerkle.root(size: size, fetch: fetch)
        let checkpoint = try LogCheckpoint(origin: origin, size: size, rootHash: root)
        let note = SignedNote(text: checkpoint.text, signatures: [try signer.sign(checkpoint.text)])
        await latest.replace(with: note, size: size)
        return note
    }

    /// The checkpoint signed last, as served (nil before the first); never signs.
    public func latestCheckpoint() async -> SignedNote? { await latest.note }

    /// Adds witnesses' cosignature lines to the latest checkpoint if it is still the one they cosigned.
    public func attach(_ cosignatures: [SignedNote.Signature], to note: SignedNote) async {
        await latest.attach(cosignatures, to: note)
    }

    /// The inclusion proof of the event at `position` in the tree of `size` leaves (default: the current size).
    public func inclusionProof(position: Int64, size: UInt64?) async throws -> InclusionProof {
        let current = try await self.size()
        let size = size ?? current
        guard size <= current else {
            throw ServiceError.conflict("tree_size_unavailable", "the tree can prove sizes up to \(current)", field: "size")
        }
        guard position >= 1, UInt64(position) <= size else {
            throw ServiceError.invalid("position_outside_tree", "position must be between 1 and the tree size \(size)", field: "position")
        }
        let index = UInt64(position - 1)
        let (proof, root) = try await TiledMerkle.inclusion(index: index, size: size, fetch: fetch)
        guard let data = try await tiles.leafData(first: index, count: 1).first else { throw ServiceError.notFound("no event at \(position)") }
        return InclusionProof(position: position, size: size, leafData: data, proof: proof, root: root)
    }

    /// The consistency proof from the tree of `from` leaves to the tree of `to` leaves.
    public func consistencyProof(from: UInt64, to: UInt64) async throws -> ConsistencyProof {
        let current = try await size()
        guard to <= current else { throw ServiceError.conflict("tree_size_unavailable", "the tree can prove sizes up to \(current)", field: "to") }
        guard from <= to else { throw ServiceError.invalid("sizes_out_of_order", "from must not exceed to", field: "from") }
        let (proof, root1, root2) = try await TiledMerkle.consistency(from: from, to: to, fetch: fetch)
        return ConsistencyProof(from: from, to: to, proof: proof, fromRoot: root1, toRoot: root2)
    }

    /// A hash tile's bytes (tlog-tiles), if the current tree has it at that width.
    public func tile(_ tile: LogTile) async throws -> [UInt8] {
        let size = try await size()
        let available = LogTile.width(level: tile.level, index: tile.index, treeSize: size)
        guard tile.width <= available else { throw ServiceError.notFound("the tree of size \(size) has no tile \(tile.path)") }
        guard let bytes = try await tiles.tiles([tile])[tile] else { throw ServiceError.notFound("tile \(tile.path) is not built yet") }
        return bytes
    }

    /// An entry bundle's bytes (tlog-tiles): each leaf's data, the event's 32-byte hash, after a uint16 length.
    public func entryBundle(index: UInt64, width: Int) async throws -> [UInt8] {
        let size = try await size()
        let available = LogTile.width(level: 0, index: index, treeSize: size)
        guard width <= available else { throw ServiceError.notFound("the tree of size \(size) has no entry bundle \(index) of width \(width)") }
        let entries = try await tiles.leafData(first: index * UInt64(LogTile.fullWidth), count: width)
        guard entries.count == width else { throw ServiceError.notFound("entry bundle \(index) is not available") }
        return LogTile.entryBundle(entries)
    }
}

/// An inclusion proof as the ledger serves it: leaf `position − 1` of the tree of `size` leaves, its data (the
/// event's chain hash), the RFC 9162 audit path and the root it leads to.
public struct InclusionProof: Sendable, Hashable {
    public var position: Int64
    public var size: UInt64
    public var leafData: [UInt8]
    public var proof: [[UInt8]]
    public var root: [UInt8]
}

/// A consistency proof from the tree of `from` leaves to the tree of `to` leaves, with both roots.
public struct ConsistencyProof: Sendable, Hashable {
    public var from: UInt64
    public var to: UInt64
    public var proof: [[UInt8]]
    public var fromRoot: [UInt8]
    public var toRoot: [UInt8]
}

/// Tiles as read, by level, index and width. The first `width` hashes of a tile never change once the tree reaches
/// them (the log only grows), so a tile read once is the tile for good — a partial one too, under its width. At most
/// `capacity` tiles (8 KiB each at most: 32 MiB), the oldest read dropped first.
final class TileCache: Sendable {
    static let capacity = 4_096
    private let state = Mutex<(tiles: [LogTile: [UInt8]], order: [LogTile], next: Int)>(([:], [], 0))

    func tiles(_ wanted: [LogTile]) -> [LogTile: [UInt8]] {
        state.withLock { state in
            var found: [LogTile: [UInt8]] = [:]
            for tile in wanted { found[tile] = state.tiles[tile] }
            return found
        }
    }

    func keep(_ read: [LogTile: [UInt8]]) {
        state.withLock { state in
            for (tile, bytes) in read where state.tiles[tile] == nil {
                if state.order.count < Self.capacity {
                    state.order.append(tile)
                } else {
                    state.tiles[state.order[state.next]] = nil
                    state.order[state.next] = tile
                    state.next = (state.next + 1) % Self.capacity
                }
                state.tiles[tile] = bytes
            }
        }
    }
}

/// The checkpoint signed last (with the cosignatures witnesses returned for it), shared by the routes and the
/// builder so that a size is signed once.
actor LatestCheckpoint {
    private(set) var note: SignedNote?
    private var size: UInt64 = 0

    func replace(with note: SignedNote, size: UInt64) {
        // Never step back to a smaller tree (two signers racing).
        guard self.note == nil || size >= self.size else { return }
        if size == self.size, self.note != nil { return }
        self.note = note
        self.size = size
    }

    func attach(_ cosignatures: [SignedNote.Signature], to signed: SignedNote) {
        guard var current = note, current.text == signed.text else { return }
        for signature in cosignatures where !current.signatures.contains(signature) { current.signatures.append(signature) }
        note = current
    }
}

/// Keeps the tree built to the head and a checkpoint signed for it: every `interval`, extends the stored tree,
/// signs a checkpoint when the tree grew and asks the witnesses to cosign it. At start it builds the tree of an
/// existing ledger (resumably: each transaction adds whole tiles).
public struct TransparencyLogBuilder: Service {
    let log: TransparencyLog
    let witnesses: [any WitnessSubmitter]
    let interval: Duration
    let logger: Logger

    public init(log: TransparencyLog, witnesses: [any WitnessSubmitter] = [], interval: Duration, logger: Logger) {
        self.log = log
        self.witnesses = witnesses
        self.interval = interval
        self.logger = logger
    }

    /// Where one witness stands: the size it cosigned, the signed size it last answered for (a refusal is not asked
    /// again until the log grows), and when to try again after it could not be reached.
    struct WitnessProgress: Sendable {
        var cosigned: UInt64 = 0
        var answered: UInt64 = 0
        var failures = 0
        var retryAt: ContinuousClock.Instant?
    }

    /// What the log signed last (its own note, without cosignatures): published by the signing loop, read by the
    /// witnesses' loops.
    final class LatestSigned: Sendable {
        let state = Mutex<(size: UInt64, note: SignedNote?)>((0, nil))
    }

    /// The wait before trying an unreachable witness again: 1 s, doubling to 60 s.
    static func backoff(failures: Int) -> Duration { .seconds(min(60, 1 << min(max(failures - 1, 0), 6))) }

    public func run() async throws {
        let latest = LatestSigned()
        let signing = PeriodicJob(
            "transparency log: building or signing",
            metric: nil,
            wait: .afterEachPass(interval),
            jobs: JobMetrics(),
            logger: logger
        )
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await signing.run {
                    let size = try await self.log.build()
                    guard self.log.signer != nil, size > latest.state.withLock({ $0.size }) else { return }
                    let signed = try await self.log.checkpoint()
                    // The log's own signature only: witnesses are sent the checkpoint the log signed, not others' cosignatures.
                    let note = SignedNote(text: signed.text, signatures: Array(signed.signatures.prefix(1)))
                    let signedSize = try LogCheckpoint(text: note.text).size
                    latest.state.withLock { $0 = (signedSize, note) }
                }
            }
            // Each witness in a loop of its own: one that is down or slow (an unreachable address can take the HTTP
            // client's whole connect timeout) delays neither the signing nor any other witness, and is asked again
            // after a backoff even when the log has not grown since.
            for witness in witnesses {
                group.addTask {
                    let progress = Mutex(WitnessProgress())
                    let asking = PeriodicJob(
                        "transparency log: asking \(witness.name)",
                        metric: nil,
                        wait: .afterEachPass(self.interval),
                        jobs: JobMetrics(),
                        logger: self.logger
                    )
                    await asking.run {
                        let (signed, note) = latest.state.withLock { ($0.size, $0.note) }
                        let now = ContinuousClock.now
                        let (due, old) = progress.withLock { w in
                            (w.cosigned < signed && w.answered < signed && (w.retryAt.map { now >= $0 } ?? true), w.cosigned)
                        }
                        guard let note, due else { return }
                        do {
                            let cosigned = try await self.submit(note, to: witness, old: old)
                            progress.withLock { $0 = WitnessProgress(cosigned: cosigned, answered: signed) }
                        } catch  where !Task.isCancelled {
                            let wait = progress.withLock { w in
                                w.failures += 1
                                let wait = Self.backoff(failures: w.failures)
                                w.retryAt = ContinuousClock.now + wait
                                return wait
                            }
                            self.logger.warning(
                                "witness unreachable; will try again",
                                metadata: ["witness": "\(witness.name)", "in": "\(wait)", "size": "\(signed)"]
                            )
                        }
                    }
                }
            }
        }
    }

    /// Submits `note` to `witness` from the size it last cosigned; returns the size it cosigned now (or still).
    func submit(_ note: SignedNote, to witness: any WitnessSubmitter, old: UInt64) async throws -> UInt64 {
        let checkpoint = try LogCheckpoint(text: note.text)
        var old = old
        for _ in 0..<2 {
            let proof = old > 0 && old < checkpoint.size ? try await log.consistencyProof(from: old, to: checkpoint.size).proof : []
            let request = try AddCheckpointRequest(oldSize: old, proof: proof, note: note)
            switch try await witness.addCheckpoint(request) {
            case .cosigned(let signatures):
                await log.attach(signatures, to: note)
                return checkpoint.size
            case .conflict(let latest) where latest != old && latest <= checkpoint.size:
                old = latest
            case .conflict(let latest):
                logger.error("witness refused the checkpoint", metadata: ["witness": "\(witness.name)", "size": "\(latest)"])
                return old
            case .refused(let status, let reason):
                logger.error(
                    "witness refused the checkpoint",
                    metadata: ["witness": "\(witness.name)", "status": "\(status)", "reason": "\(reason)"]
                )
                return old
            }
        }
        return old
    }
}

/// A witness the ledger submits checkpoints to (c2sp.org/tlog-witness `add-checkpoint`).
public protocol WitnessSubmitter: Sendable {
    var name: String { get }
    func addCheckpoint(_ request: AddCheckpointRequest) async throws -> WitnessAnswer
}

/// A witness's answer to add-checkpoint.
public enum WitnessAnswer: Sendable, Hashable {
    /// 200: its cosignature lines.
    case cosigned([SignedNote.Signature])
    /// 409 with the size it last cosigned.
    case conflict(latestSize: UInt64)
    /// Any other refusal: status and body.
    case refused(status: Int, reason: String)
}
