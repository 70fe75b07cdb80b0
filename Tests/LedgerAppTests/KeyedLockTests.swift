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

    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// A gate a holder waits at until the test opens it.
    struct Gate: Sendable {
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream<Void>.makeStream() }
        func wait() async { for await _ in stream { return } }
        func open() { continuation.yield() }
    }

    /// Waits (yielding, no clock) until `key` has `count` waiters queued.
    static func untilWaiting(_ lock: KeyedLock, _ key: String, _ count: Int) async {
        while lock.waiting(key) < count { await Task.yield() }
    }

    /// Waits (yielding, no clock) until someone holds `key`.
    static func untilHeld(_ lock: KeyedLock, _ key: String) async {
        while !lock.isHeld(key) { await Task.yield() }
    }

    @Test func holdersOfOneKeyTakeTurns() async throws {
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
                        await Task.yield()
                        tracker.state.withLock { $0.inside[key]! -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = tracker.state.withLock { $0 }
        #expect(final.maximum == ["a": 1, "b": 1])
        #expect(final.order.count == 100)
        #expect(lock.waiting("a") == 0 && lock.waiting("b") == 0)
        // A throwing body releases the lock.
        await #expect(throws: CancellationError.self) { try await lock.withLock("c") { throw CancellationError() } }
        #expect(try await lock.withLock("c") { 42 } == 42)
    }

    @Test(.timeLimit(.minutes(3))) func waitersEnterInTheOrderTheyArrived() async throws {
        let lock = KeyedLock()
        let gate = Gate()
        let tracker = Tracker()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await lock.withLock("a") { await gate.wait() } }
            await Self.untilHeld(lock, "a")
            // Twenty waiters, each queued before the next arrives.
            for i in 1...20 {
                group.addTask { try await lock.withLock("a") { tracker.state.withLock { $0.order.append(i) } } }
                await Self.untilWaiting(lock, "a", i)
            }
            gate.open()
            try await group.waitForAll()
        }
        #expect(tracker.state.withLock { $0.order } == Array(1...20))
        #expect(lock.waiting("a") == 0)
    }

    @Test(.timeLimit(.minutes(3))) func anotherKeyDoesNotWaitForAHeldOne() async throws {
        let lock = KeyedLock()
        let gate = Gate()
        let aHeld = Flag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await lock.withLock("a") {
                    aHeld.value.store(true, ordering: .sequentiallyConsistent)
                    await gate.wait()
                    aHeld.value.store(false, ordering: .sequentiallyConsistent)
                }
            }
            while !aHeld.value.load(ordering: .sequentiallyConsistent) { await Task.yield() }
            // "a" is held until the gate opens, which happens only after "b" was entered and left:
            // if "b" waited for "a", this would never return (and the time limit fails the test).
            let seenHeld = try await lock.withLock("b") { aHeld.value.load(ordering: .sequentiallyConsistent) }
            #expect(seenHeld, "b ran while a was held")
            #expect(lock.waiting("b") == 0)
            gate.open()
            try await group.waitForAll()
        }
    }
}
