import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import Synchronization
import Testing

/// Commands on streams outside the four aggregates (issue 56, step 3: settlement batches, reconciliations, erasures,
/// checkpoints, Apple Pay refusals), run by the one runner on the in-memory log: the caller holds no retry loop, so the
/// runner must decide again on what another writer appended between its read and its append.
@Suite struct StreamCommandTests {
    static let t0 = PenCommands.t0
    static let stream = ContactErased.stream(for: "c-1")!

    /// Erases contact c-1 unless an erasure is recorded already: the erasure's position (nil: appended now).
    static func erase(_ reason: String) -> StreamCommand<Int64?> {
        StreamCommand(stream: stream, now: t0, metadata: EventMetadata(correlationID: reason)) { recorded in
            if let first = recorded.first { return .nothing(first.position) }
            return .append([ContactErased(contactRef: "c-1", orderIDs: [], erasedAt: t0, reason: reason)], nil)
        }
    }

    /// The log's reads, with another writer's erasure of c-1 appended after each of the first `moves` reads of the
    /// stream (the runner then decides on a stream that has moved under it).
    static func movingReads(_ log: InMemoryEventLog, _ writer: LedgerWriter, moves: Int) -> MovingReads {
        MovingReads(log: log, moves: moves) { streamID, read in
            let other = try NewEvent(
                payload: ContactErased(contactRef: "c-1", orderIDs: [], erasedAt: StreamCommandTests.t0, reason: "other \(read.count)"),
                effectiveAt: StreamCommandTests.t0
            )
            _ = try await writer.append(
                AppendRequest(stream: streamID, expectedVersion: PlannedAppend.expectation(forVersion: Int64(read.count)), events: [other])
            )
        }
    }

    /// A writer whose loop runs in the background for `body`.
    static func withWriter(_ body: (InMemoryEventLog, LedgerWriter) async throws -> Void) async throws {
        let log = InMemoryEventLog()
        let writer = LedgerWriter(log: log, clock: ManualClock(t0), ids: SeededIDs(seed: 56))
        let loop = Task { try await writer.run() }
        defer {
            writer.stop()
            loop.cancel()
        }
        try await body(log, writer)
    }

    @Test func aStreamMovedBetweenTheReadAndTheAppendIsDecidedAgainOnWhatMovedIt() async throws {
        try await Self.withWriter { log, writer in
            let reads = Self.movingReads(log, writer, moves: 1)
            let outcome = try await AggregateStore(writer: writer, store: reads).run(Self.erase("ours"))
            // Decided first on an empty stream (append), refused as a version conflict, read again, decided: recorded already.
            #expect(reads.reads.load(ordering: .relaxed) == 2)
            #expect(outcome.result == nil)
            #expect(outcome.signal == 1)
            let recorded = await log.readStream(Self.stream)
            #expect(recorded.count == 1)
        }
    }

    @Test func aDecisionOnAnUnmovedStreamAppendsOnceAndItsSecondRunAppendsNothing() async throws {
        try await Self.withWriter { log, writer in
            let runner = AggregateStore(writer: writer, store: log)
            let first = try await runner.run(Self.erase("ours"))
            #expect(first.signal == nil)
            #expect(first.result?.firstPosition == 1)
            let again = try await runner.run(Self.erase("again"))
            #expect(again.signal == 1)
            #expect(again.result == nil)
            #expect(await log.head().position == 1)
        }
    }

    @Test func aDecisionThatThrowsAppendsNothingAndAStreamAlwaysMovedEndsContended() async throws {
        struct Refused: Error {}
        try await Self.withWriter { log, writer in
            let refused = StreamCommand<Void>(stream: Self.stream, now: Self.t0, metadata: EventMetadata()) { _ in throw Refused() }
            await #expect(throws: Refused.self) { try await AggregateStore(writer: writer, store: log).run(refused) }
            #expect(await log.head().position == 0)

            let always = Self.movingReads(log, writer, moves: .max)
            let append = StreamCommand<Void>(stream: Self.stream, now: Self.t0, metadata: EventMetadata()) { _ in
                .append([ContactErased(contactRef: "c-1", orderIDs: [], erasedAt: Self.t0, reason: "ours")], ())
            }
            await #expect(throws: AggregateStore.Contended.self) { try await AggregateStore(writer: writer, store: always).run(append) }
            #expect(always.reads.load(ordering: .relaxed) == AggregateStore.maximumAttempts)
            #expect(await log.head().position == Int64(AggregateStore.maximumAttempts))
        }
    }
}
