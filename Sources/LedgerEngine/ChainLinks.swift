import Crypto
import Foundation
import LedgerCore

/// The end of the chain: the last position, its hash and its `recorded_at` (µs since 1970), as
/// `ledger.head` holds them.
public struct ChainHead: Sendable, Hashable {
    public var position: Int64
    public var hash: [UInt8]
    public var recordedAtMicros: Int64

    public init(position: Int64, hash: [UInt8], recordedAtMicros: Int64) {
        self.position = position
        self.hash = hash
        self.recordedAtMicros = recordedAtMicros
    }
}

/// A batch's chain links, computed by the writer (sql/0017): the batch takes positions
/// `head.position + 1 …`, one `recorded_at` no earlier than the head's, and each event's
/// `hash = SHA-256(prev_hash ‖ canonical layout)` over the exact texts that are stored. Pure:
/// `ledger.append_batch` checks under the head lock that the head is the one linked onto.
package struct ChainLinks: Sendable, Equatable {
    package var head: ChainHead
    package var recordedAtMicros: Int64
    package var prevHashes: [[UInt8]]
    package var hashes: [[UInt8]]

    /// The head once these links are committed.
    package var newHead: ChainHead {
        guard let last = hashes.last else { return head }
        return ChainHead(position: head.position + Int64(hashes.count), hash: last, recordedAtMicros: recordedAtMicros)
    }

    /// Links `events` onto `head`; `nowMicros` is the writer's wall clock (the batch's time never
    /// goes back past the head's, so `recorded_at` never decreases with position).
    package init(events: BatchStatement.EventColumns, onto head: ChainHead, nowMicros: Int64) {
        self.head = head
        recordedAtMicros = max(nowMicros, head.recordedAtMicros)
        prevHashes = []
        hashes = []
        prevHashes.reserveCapacity(events.count)
        hashes.reserveCapacity(events.count)
        var prev = head.hash
        for i in 0..<events.count {
            var hasher = SHA256()
            hasher.update(data: prev)
            CanonicalEventLayout.write(
                position: head.position + Int64(i + 1),
                streamID: events.streamIDs[i],
                streamVersion: events.versions[i],
                eventID: events.eventIDs[i],
                type: events.types[i],
                schemaVersion: events.schemaVersions[i],
                data: events.data[i],
                metadata: events.metadata[i],
                effectiveAtMicros: events.effectiveMicros[i],
                recordedAtMicros: recordedAtMicros
            ) { hasher.update(bufferPointer: $0) }
            let hash = Array(hasher.finalize())
            prevHashes.append(prev)
            hashes.append(hash)
            prev = hash
        }
    }
}
