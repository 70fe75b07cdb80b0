import Crypto
import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import Testing

/// The in-memory event log keeps `ledger.append_batch`'s rules: gapless positions, each event chained onto the one
/// before by `SHA-256(prev ‖ canonical layout)`, stale beliefs and reused keys answered without appending anything.
@Suite struct InMemoryEventLogTests {
    @Test func batchesTakeGaplessPositionsAndChainFromTheGenesisHead() async throws {
        let log = InMemoryEventLog()
        let clock = ManualClock(ChainSamples.start)
        var appended = 0
        for request in ChainSamples.requests() {
            let results = try await log.append([request], clock: clock)
            let result = try #require(try results.first?.get())
            #expect(result.firstPosition == Int64(appended + 1) && result.lastPosition == Int64(appended + request.eventCount))
            appended += request.eventCount
            clock.advance(by: 0.001)
        }
        let events = await log.events
        #expect(events.map(\.position) == Array(1...Int64(appended)))
        var prev = ChainHead.genesis.hash
        for event in events {
            #expect(event.prevHash == prev)
            #expect(event.hash == Array(SHA256.hash(data: CanonicalEventLayout.hashInput(prevHash: prev, event: event))))
            prev = event.hash
        }
        let head = await log.head()
        #expect(head.position == Int64(appended) && head.hash == prev)
        #expect(head.recordedAtMicros == events.last?.recordedAtMicros)
    }

    @Test func aStaleExpectationIsRefusedAndAppendsNothing() async throws {
        let log = InMemoryEventLog()
        let clock = ManualClock(ChainSamples.start)
        let first = ChainSamples.requests(count: 2)[1]  // no idempotency key: a second append is not a replay
        #expect(first.idempotency == nil)
        _ = try await log.append([first], clock: clock)
        let again = try await log.append([first], clock: clock)  // expects .noStream on a stream now at version 1
        #expect(throws: AppendError.versionConflict) { try again[0].get() }
        #expect(await log.events.count == first.eventCount)
    }

    @Test func aStoredKeyReplaysItsResultAndRefusesAnotherRequest() async throws {
        let log = InMemoryEventLog()
        let clock = ManualClock(ChainSamples.start)
        let keyed = ChainSamples.requests(count: 1)[0]
        let original = try await log.append([keyed], clock: clock)[0].get()
        let replay = try await log.append([keyed], clock: clock)[0].get()
        #expect(replay.replayed && replay.firstPosition == original.firstPosition && replay.streams == original.streams)
        var other = ChainSamples.requests(count: 2)[1]
        other.idempotency = IdempotencyKey(key: keyed.idempotency!.key, for: other)
        let refused = try await log.append([other], clock: clock)
        #expect(throws: AppendError.idempotencyConflict) { try refused[0].get() }
        #expect(await log.events.count == keyed.eventCount)
    }

    @Test func aRecordedTimeNeverGoesBackPastTheHead() async throws {
        let log = InMemoryEventLog()
        let later = ManualClock(ChainSamples.start.addingTimeInterval(60))
        let requests = ChainSamples.requests(count: 2)
        _ = try await log.append([requests[0]], clock: later)
        _ = try await log.append([requests[1]], clock: ManualClock(ChainSamples.start))
        let times = await log.events.map(\.recordedAtMicros)
        #expect(Set(times) == [ChainSamples.start.addingTimeInterval(60).epochMicroseconds])
    }

    @Test func seededIDsRepeatPerSeedAndAreVersionFourUUIDs() {
        let (a, b, c) = (SeededIDs(seed: 7), SeededIDs(seed: 7), SeededIDs(seed: 8))
        let first = (0..<100).map { _ in a.next() }
        #expect(first == (0..<100).map { _ in b.next() })
        #expect(Set(first).isDisjoint(with: (0..<100).map { _ in c.next() }))
        #expect(Set(first).count == 100)
        #expect(first.allSatisfy { $0.uuidString.dropFirst(14).first == "4" && "89AB".contains($0.uuidString.dropFirst(19).first!) })
    }
}
