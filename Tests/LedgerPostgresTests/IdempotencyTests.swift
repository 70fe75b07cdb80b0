import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite(.machine(.shared)) struct IdempotencyTests {
    func request(_ n: Int, key: String) -> AppendRequest {
        var request = AppendRequest(stream: stream("order-\(n)"), expectedVersion: .noStream, events: [sampleEvent(n)])
        request.idempotency = IdempotencyKey(key: key, for: request)
        return request
    }

    @Test func sameKeySameRequestReplaysTheOriginalResult() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let original = try await writer.append(request(1, key: "k-1"))
            #expect(!original.replayed)
            // A retry builds the request again (new event ids, new effective time): same content.
            var retry = request(1, key: "k-1")
            retry.streams[0].events[0].effectiveAt = testEpoch.addingTimeInterval(99)
            let replayed = try await writer.append(retry)
            #expect(replayed.replayed)
            #expect(replayed.firstPosition == original.firstPosition && replayed.streams == original.streams)
            #expect(try await eventCount(client) == 1)
            let stored = try await column(client, "SELECT metadata->>'idempotency_key' FROM ledger.events", as: String.self)
            #expect(stored == ["k-1"])
        }
    }

    @Test func sameKeyDifferentRequestConflicts() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            _ = try await writer.append(request(1, key: "k-1"))
            await #expect(throws: AppendError.idempotencyConflict) {
                try await writer.append(request(2, key: "k-1"))
            }
            #expect(try await eventCount(client) == 1)
        }
    }

    @Test func duplicatesInsideOneBatchAppendOnce() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
                for _ in 0..<20 { group.addTask { try await writer.append(request(7, key: "same")) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(results.map(\.firstPosition)) == [1])
            #expect(results.filter { !$0.replayed }.count == 1)
            #expect(try await eventCount(client) == 1)
        }
    }

    @Test func keyIsRememberedAcrossARestart() async throws {
        let db = try await TestDatabase.fresh()
        let original = try await db.withWriter { writer, _ in try await writer.append(request(3, key: "restart")) }
        // A new writer and a new connection pool: nothing remembered in memory.
        try await db.withWriter { writer, client in
            let replayed = try await writer.append(request(3, key: "restart"))
            #expect(replayed.replayed && replayed.firstPosition == original.firstPosition)
            await #expect(throws: AppendError.idempotencyConflict) {
                try await writer.append(request(4, key: "restart"))
            }
            #expect(try await eventCount(client) == 1)
        }
    }

    @Test func aRefusedRequestLeavesItsKeyUnused() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            _ = try await writer.append(AppendRequest(stream: stream("order-5"), expectedVersion: .noStream, events: [sampleEvent(0)]))
            await #expect(throws: AppendError.versionConflict) { try await writer.append(request(5, key: "k-5")) }
            #expect(try await column(client, "SELECT count(*) FROM ledger.idempotency_keys", as: Int64.self) == [0])
        }
    }
}
