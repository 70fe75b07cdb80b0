import LedgerCore
import LedgerEngine
import Synchronization

/// The in-memory log's reads, with another writer's append slipped in: after each of the first `moves` whole-stream
/// reads of a stream `moving` accepts, `interfere` runs (it appends to that stream, as another daemon would) and the
/// read is returned as it was. The runner then decides on a stream that has moved under it.
package final class MovingReads: StreamReads {
    package let log: InMemoryEventLog
    let moves: Int
    let moving: @Sendable (StreamID) -> Bool
    let interfere: @Sendable (StreamID, [RecordedEvent]) async throws -> Void
    /// The whole-stream reads of moving streams so far.
    package let reads = Atomic(0)

    package init(
        log: InMemoryEventLog,
        moves: Int,
        moving: @escaping @Sendable (StreamID) -> Bool = { _ in true },
        interfere: @escaping @Sendable (StreamID, [RecordedEvent]) async throws -> Void
    ) {
        self.log = log
        self.moves = moves
        self.moving = moving
        self.interfere = interfere
    }

    package func readStream(_ streamID: StreamID) async throws -> [RecordedEvent] {
        let read = await log.readStream(streamID)
        guard moving(streamID), reads.add(1, ordering: .relaxed).newValue <= moves else { return read }
        try await interfere(streamID, read)
        return read
    }

    package func readStream(_ streamID: StreamID, after version: Int64) async throws -> [RecordedEvent] {
        await log.readStream(streamID, after: version)
    }
    package func readStreams(_ streams: [StreamID]) async throws -> [RecordedEvent] { await log.readStreams(streams) }
    package func readStreams(_ streams: [StreamID], through position: Int64) async throws -> [RecordedEvent] {
        await log.readStreams(streams, through: position)
    }
}
