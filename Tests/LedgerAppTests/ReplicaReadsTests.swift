import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import Testing

/// Auditors' reads on a streaming replica (`LEDGERD_READ_DATABASE_URL`): a real primary and a real standby made
/// with pg_basebackup. One application writes to the primary and reads history, the feed, verification and as-of
/// from the standby; another reads everything from the primary, for comparison.
@Suite(.machine(.shared)) struct ReplicaReadsTests {
    let storefront = StorefrontDriver()

    /// `GET uri` as the auditor: status, `Ledger-Position`, body.
    static func read(_ client: any TestClientProtocol, _ uri: String) async throws -> (HTTPResponse.Status, Int64?, String) {
        try await client.execute(uri: uri, method: .get, headers: TestApp.bearer(TestApp.auditorKey)) { response in
            (response.status, response.headers[.ledgerPosition].flatMap { Int64($0) }, String(buffer: response.body))
        }
    }

    @Test(.timeLimit(.minutes(4))) func anAuditorsReadOnTheReplicaEqualsThePrimarysAtThePositionItReports() async throws {
        let clusters = try await ReplicatedClusters.start(synchronous: true)
        defer { clusters.stop() }
        // Time for the standby to replay the primary's head: 300 ms failed on a loaded two-core machine.
        let wait = ["LEDGERD_READ_WAIT_MS": "2000"]
        try await TestApp.withApp(seed: true, database: clusters.primaryDatabase, environment: wait) { primary, _ in
            try await TestApp.withApp(database: clusters.primaryDatabase, readDatabase: clusters.standbyDatabase, environment: wait) {
                app,
                services in
                #expect(services.positions.isReplica)
                var orders: [String] = []
                for _ in 0..<3 { orders.append(try await storefront.placeOrder(app)) }
                let head = try await clusters.head(on: clusters.primaryEndpoint)
                #expect(head > 0)

                // Each read, once the replica has replayed the primary's head, equals the primary's at that position.
                for uri in [
                    "/orders/\(orders[1])/history", "/streams/order-\(orders[2])/events", "/events?after=0&limit=1000",
                    "/audit/verify", "/orders/\(orders[0])/history",
                ] {
                    let separator = uri.contains("?") ? "&" : "?"
                    let (status, position, body) = try await Self.read(app, "\(uri)\(separator)min_position=\(head)")
                    #expect(status == .ok, "\(uri): \(body)")
                    #expect(position == head, "\(uri)")
                    let (primaryStatus, primaryPosition, primaryBody) = try await Self.read(primary, uri)
                    #expect(primaryStatus == .ok && primaryPosition == head, "\(uri)")
                    #expect(body == primaryBody, "\(uri)")
                }
                // As-of reads too, and without min_position every such reply still names its position.
                let asOf = "/authorizations/\(orders[0])?as_of=\(head)"
                let (asOfStatus, asOfPosition, asOfBody) = try await Self.read(app, asOf)
                #expect(asOfStatus == .ok && asOfPosition == head, "\(asOfBody)")
                #expect(asOfBody == (try await Self.read(primary, asOf)).2)

                // The replica is what answers: with its replay paused, it keeps reporting the old position and
                // serving the old log while the primary moves on; a read that needs the new position waits its bound
                // and is refused (503 replica_behind), never answered from an older state.
                _ = try await clusters.standbyDatabase.withOwner { client in try await client.query("SELECT pg_wal_replay_pause()") }
                let later = try await storefront.placeOrder(app)
                let newHead = try await clusters.head(on: clusters.primaryEndpoint)
                #expect(newHead > head)
                let (staleStatus, stalePosition, staleBody) = try await Self.read(app, "/events?after=\(head)")
                #expect(staleStatus == .ok && stalePosition == head && !staleBody.contains(later), "\(staleBody)")
                let (behind, behindPosition, behindBody) = try await Self.read(app, "/orders/\(later)/history?min_position=\(newHead)")
                #expect(behind == .serviceUnavailable && behindPosition == nil, "\(behindBody)")
                #expect(behindBody.contains("replica_behind"))
                let (badStatus, _, badBody) = try await Self.read(app, "/events?min_position=minus-one")
                #expect(badStatus == .badRequest && badBody.contains("min_position"), "\(badBody)")

                _ = try await clusters.standbyDatabase.withOwner { client in try await client.query("SELECT pg_wal_replay_resume()") }
                var caughtUp: (HTTPResponse.Status, Int64?, String) = (.serviceUnavailable, nil, "")
                for _ in 0..<50 where caughtUp.0 != .ok {
                    caughtUp = try await Self.read(app, "/orders/\(later)/history?min_position=\(newHead)")
                }
                #expect(caughtUp.0 == .ok && caughtUp.1 == newHead && caughtUp.2.contains(later), "\(caughtUp.2)")
                #expect(caughtUp.2 == (try await Self.read(primary, "/orders/\(later)/history")).2)
            }
        }
    }

    /// Without a replica the same reads carry the primary's head, and `min_position` beyond it answers at once.
    @Test func withoutAReplicaTheReadsNameThePrimarysHead() async throws {
        try await TestApp.withApp(seed: true) { app, services in
            #expect(!services.positions.isReplica)
            let order = try await storefront.placeOrder(app)
            let head = try await services.store.head().position
            let (status, position, body) = try await Self.read(app, "/orders/\(order)/history?min_position=\(head + 100)")
            #expect(status == .ok && position == head, "\(body)")
            let (verify, verifyPosition, _) = try await Self.read(app, "/audit/verify")
            #expect(verify == .ok && verifyPosition == head)
        }
    }
}
