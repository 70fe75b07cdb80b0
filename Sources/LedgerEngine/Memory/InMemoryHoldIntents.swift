import Foundation
import Synchronization

/// The hold operations' notes in memory (``HoldIntents``), for simulations and tests: as `HoldIntentStore` keeps them
/// in `ledger.hold_operation_intents` — the first note of a reference stays, recovery reads them oldest first.
package final class InMemoryHoldIntents: HoldIntents {
    private let notes = Mutex<[String: HoldIntent]>([:])

    package init() {}

    /// How many notes are kept (a simulation's check: a recorded answer leaves none behind).
    package var count: Int { notes.withLock { $0.count } }

    /// The orders of the notes kept: their ledger may lack an operation the acquirer applied.
    package var orders: Set<String> { notes.withLock { Set($0.values.map(\.orderID)) } }

    package func note(_ intent: HoldIntent) {
        notes.withLock { notes in
            if notes[intent.modificationReference] == nil { notes[intent.modificationReference] = intent }
        }
    }

    package func drop(_ modificationReference: String) { _ = notes.withLock { $0.removeValue(forKey: modificationReference) } }

    package func delete(_ modificationReference: String) { drop(modificationReference) }

    package func due(before cutoff: Date, limit: Int) -> [HoldIntent] {
        let due = notes.withLock { notes in notes.values.filter { $0.notedAt < cutoff } }
        return Array(due.sorted { ($0.notedAt, $0.modificationReference) < ($1.notedAt, $1.modificationReference) }.prefix(limit))
    }
}
