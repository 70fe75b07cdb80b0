import Foundation
import LedgerCore
import Synchronization

/// Where the ledger's new identifiers come from (event ids, order ids, correlation ids): a port, so that a simulator
/// run mints the same ids from the same seed and ends on the same chain head. The daemon's source is ``RandomIDs``.
public protocol IDSource: Sendable {
    /// A new UUID, never minted before.
    func next() -> UUID
}

extension IDSource {
    /// A new id as the ledger writes ids in text (lowercase): correlation ids, order ids.
    public func nextString() -> String { next().lowercasedString }
}

/// The daemon's ids: time-ordered version-7 UUIDs (`UUID.newTimeOrdered()`, LedgerCore/RandomUUID.swift), so that
/// the B-trees keyed by them grow at their right edge (issue 57's write volume); their random bits come from the C
/// library's CSPRNG, no system call.
public struct RandomIDs: IDSource {
    public init() {}

    public func next() -> UUID { UUID.newTimeOrdered() }
}

/// Ids drawn from a seed (SplitMix64, as the acquirer model's `SeededRandom`): the same seed mints the same ids in
/// the same order. For simulations and tests only; never for the daemon, whose ids must not be guessable.
package final class SeededIDs: IDSource {
    private let state: Mutex<UInt64>

    package init(seed: UInt64) { state = Mutex(seed) }

    package func next() -> UUID {
        let (high, low) = state.withLock { state in (Self.splitMix(&state), Self.splitMix(&state)) }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4, as UUID.newRandom()
        bytes.8 = (bytes.8 & 0x3F) | 0x80  // variant 10 (RFC 9562)
        return UUID(uuid: bytes)
    }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
