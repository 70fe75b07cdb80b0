import Synchronization

/// Folded states by stream, with the version each reflects. Type-erased values; each stream is only
/// ever folded into one state type.
final class StateCache: Sendable {
    private let entries: Mutex<[String: any Sendable]>
    private let limit: Int

    init(limit: Int) {
        self.entries = Mutex([:])
        self.limit = limit
    }

    func get<Value: Sendable>(_ key: String) -> Value? {
        entries.withLock { $0[key] as? Value }
    }

    func put(_ key: String, _ value: some Sendable) {
        entries.withLock { entries in
            if entries.count >= limit && entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }
}
