import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The idempotency probe (`IdempotencyStore`) against a real database: it sees exactly the keys that
/// committed appends stored, with the hash of the request they were first used with.
@Suite(.machine(.shared)) struct IdempotencyStoreTests {
    func request(_ n: Int, key: String) -> AppendRequest {
        var request = AppendRequest(stream: stream("order-\(n)"), expectedVersion: .noStream, events: [sampleEvent(n)])
        request.idempotency = IdempotencyKey(key: key, for: request)
        return request
    }

    @Test func theProbeAnswersTheFirstRequestsHashAndNothingForAnUnusedKey() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let probe = IdempotencyStore(client: client, logger: TestCluster.logger)
            #expect(try await probe.requestHash(forKey: "k-1") == nil)
            let first = request(1, key: "k-1")
            _ = try await writer.append(first)
            let stored = try await probe.requestHash(forKey: "k-1")
            #expect(stored == first.idempotency?.requestHash)
            #expect(stored?.count == 32)
            // A conflicting request with the same key is refused and leaves the first hash in place.
            await #expect(throws: AppendError.idempotencyConflict) { try await writer.append(request(2, key: "k-1")) }
            #expect(try await probe.requestHash(forKey: "k-1") == first.idempotency?.requestHash)
            #expect(try await probe.requestHash(forKey: "k-2") == nil)
            #expect(try await probe.requestHash(forKey: "K-1") == nil)  // keys are compared exactly
        }
    }

    @Test func aRefusedAppendStoresNoKey() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let probe = IdempotencyStore(client: client, logger: TestCluster.logger)
            _ = try await writer.append(AppendRequest(stream: stream("order-5"), expectedVersion: .noStream, events: [sampleEvent(0)]))
            await #expect(throws: AppendError.versionConflict) { try await writer.append(request(5, key: "k-5")) }
            #expect(try await probe.requestHash(forKey: "k-5") == nil)
        }
    }
}
