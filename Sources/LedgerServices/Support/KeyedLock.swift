import Synchronization

/// An async FIFO lock per key. Payments for the same product take turns deciding and appending,
/// so within one process they never invalidate each other's decisions (no version-conflict
/// retries on a hot product); different keys run concurrently. Waiters are resumed in arrival
/// order; an entry disappears when its last holder leaves.
final class KeyedLock: Sendable {
    private struct Entry {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let entries = Mutex<[String: Entry]>([:])

    func withLock<T: Sendable>(_ key: String, _ body: () async throws -> T) async throws -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    /// How many callers wait for `key` (not counting its holder); for tests of the order of entry.
    func waiting(_ key: String) -> Int { entries.withLock { $0[key]?.waiters.count ?? 0 } }

    /// Whether someone holds `key`; for tests.
    func isHeld(_ key: String) -> Bool { entries.withLock { $0[key]?.held ?? false } }

    private func acquire(_ key: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = entries.withLock { entries -> Bool in
                var entry = entries[key] ?? Entry()
                if entry.held {
                    entry.waiters.append(continuation)
                    entries[key] = entry
                    return false
                }
                entry.held = true
                entries[key] = entry
                return true
            }
            if acquired { continuation.resume() }
        }
    }

    private func release(_ key: String) {
        let next = entries.withLock { entries -> CheckedContinuation<Void, Never>? in
            guard var entry = entries[key] else { return nil }
            if entry.waiters.isEmpty {
                entries[key] = nil
                return nil
            }
            let next = entry.waiters.removeFirst()  // ownership passes straight to the next waiter
            entries[key] = entry
            return next
        }
        next?.resume()
    }
}
