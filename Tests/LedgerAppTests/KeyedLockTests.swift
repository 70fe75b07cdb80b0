import Foundation
import Synchronization
import Testing

@testable import LedgerServices

@Suite struct KeyedLockTests {
    /// Who is inside the lock for each key, the most ever inside at once, and the order of entry.
    final class Tracker: Sendable {
        struct State {
            var inside: [String: Int] = [:]
            var maximum: [String: Int] = [:]
            var order: [Int] = []
        }
        let state = Mutex(State())
    }

    @Test func holdersOfOneKeyTakeTurnsAndOtherKeysDoNotWait() async throws {
        let lock = KeyedLock()
        let tracker = Tracker()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                let key = i % 2 == 0 ? "a" : "b"
                group.addTask {
                    try await lock.withLock(key) {
                        tracker.state.withLock { state in
                            state.inside[key, default: 0] += 1
                            state.maximum[key] = max(state.maximum[key] ?? 0, state.inside[key]!)
                            if key == "a" { state.order.append(i) }
                        }
                        try await Task.sleep(for: .microseconds(200))
                        tracker.state.withLock { $0.inside[key]! -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = tracker.state.withLock { $0 }
        #expect(final.maximum == ["a": 1, "b": 1])
        #expect(final.order.count == 100)
        // A throwing body releases the lock.
        await #expect(throws: CancellationError.self) { try await lock.withLock("c") { throw CancellationError() } }
        #expect(try await lock.withLock("c") { 42 } == 42)
    }
}
