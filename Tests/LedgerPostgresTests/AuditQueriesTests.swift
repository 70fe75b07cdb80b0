import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The auditor's queries on a real database: the position of a time, the filtered feed (every
/// matching event exactly once, whatever the page size), an order's history, and the check
/// against a signed checkpoint under a superuser's tampering.
@Suite(.machine(.shared)) struct AuditQueriesTests {
    /// 60 events, one append each (so recorded times differ), over order, hold and product streams,
    /// three types, four correlation ids; product events name an order in `order_id`.
    func seed(_ db: TestDatabase) async throws {
        try await db.withWriter { writer, _ in
            for n in 1...60 {
                let order = "o\(n % 5)"
                let (streamName, type): (String, String) =
                    switch n % 4 {
                    case 0: ("order-\(order)", "OrderThing")
                    case 1: ("hold-\(order)", "HoldThing")
                    case 2: ("product-p\(n % 2)", "StockThing")
                    default: ("other_stream-\(n % 3)", "OtherThing")
                    }
                let data = n % 4 == 3 ? #"{"n": \#(n)}"# : #"{"n": \#(n), "order_id": "\#(order)"}"#
                _ = try await writer.append(
                    AppendRequest(
                        stream: stream(streamName),
                        expectedVersion: .any,
                        events: [NewEvent(type: type, data: data, effectiveAt: testEpoch)],
                        metadata: EventMetadata(correlationID: "c\(n % 4 == 0 ? 0 : n % 3)", actor: "test")
                    )
                )
            }
        }
    }

    func correlation(_ event: RecordedEvent) -> String? {
        (try? JSONDecoder().decode(EventMetadata.self, from: Data(event.metadata.utf8)))?.correlationID
    }

    @Test func positionAtFindsTheLastEventRecordedByThen() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db)
        try await db.withAuditor { client in
            let store = EventStore(client: client, logger: TestCluster.logger)
            let all = try await store.read(from: 1, limit: 1_000)
            #expect(Set(all.map(\.recordedAtMicros)).count > 10, "appends should have distinct recorded times")
            for t in Set(all.flatMap { [$0.recordedAtMicros - 1, $0.recordedAtMicros, $0.recordedAtMicros + 1] }).sorted() {
                let expected = all.filter { $0.recordedAtMicros <= t }.map(\.position).max() ?? 0
                #expect(try await store.position(atMicros: t) == expected, "at \(RFC3339.format(t))")
            }
            #expect(try await store.position(atMicros: 0) == 0)
        }
    }

    @Test func everyFilteredFeedPagesThroughEachMatchOnceInOrder() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db)
        try await db.withAuditor { client in
            let store = EventStore(client: client, logger: TestCluster.logger)
            let all = try await store.read(from: 1, limit: 1_000)
            let t20 = all[19].recordedAtMicros
            let t45 = all[44].recordedAtMicros
            let filters = [
                EventFilter(),
                EventFilter(types: ["OrderThing"]),
                EventFilter(types: ["OrderThing", "StockThing"]),
                EventFilter(streamPrefix: "hold-"),
                EventFilter(streamPrefix: "other_"),  // `_` is literal, not LIKE's wildcard
                EventFilter(streamPrefix: "other%"),
                EventFilter(fromMicros: t20),
                EventFilter(toMicros: t45),
                EventFilter(fromMicros: t20, toMicros: t45),
                EventFilter(correlationID: "c1"),
                EventFilter(types: ["HoldThing"], streamPrefix: "hold-o1", fromMicros: t20, correlationID: "c1"),
                EventFilter(types: ["NoSuchType"]),
            ]
            for filter in filters {
                let expected = all.filter { filter.matches($0, correlationID: correlation($0)) }.map(\.position)
                for pageSize in [1, 2, 7, 60, 100] {
                    var after: Int64 = 0
                    var seen: [Int64] = []
                    while true {
                        let page = try await store.events(after: after, matching: filter, limit: pageSize)
                        seen += page.map(\.position)
                        guard page.count == pageSize, let last = page.last else { break }
                        after = last.position
                    }
                    #expect(seen == expected, "\(filter), page size \(pageSize)")
                }
            }
        }
    }

    @Test func anOrdersHistoryIsEveryEventThatNamesItInPositionOrder() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db)
        try await db.withAuditor { client in
            let store = EventStore(client: client, logger: TestCluster.logger)
            let all = try await store.read(from: 1, limit: 1_000)
            let history = try await store.orderHistory("o1")
            let expected = all.filter { $0.data.contains(#""order_id": "o1""#) || ["order-o1", "hold-o1"].contains($0.streamID.rawValue) }
            #expect(history.map(\.position) == expected.map(\.position))
            #expect(Set(history.map(\.type)) == ["OrderThing", "HoldThing", "StockThing"])
            #expect(try await store.orderHistory("nobody").isEmpty)
        }
    }

    @Test func verifyingInPartsOnSeveralConnectionsReportsWhatOneConnectionReports() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db)
        try await db.withOwner { client in
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            func same(_ from: Int64 = 1, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ChainReport {
                let one = try await verifier.verify(from: from, pageSize: 7)
                let sql = try await verifier.verifyInDatabase(from: from)
                #expect(one == sql, sourceLocation: sourceLocation)
                for parts in [2, 3, 5, 8] {
                    let parallel = try await verifier.verify(from: from, pageSize: 4, parallelism: parts, minimumPartSize: 5)
                    #expect(parallel == one, "\(parts) parts", sourceLocation: sourceLocation)
                }
                return one
            }
            #expect(try await same() == ChainReport(ok: true, checked: 60))
            #expect(try await same(17) == ChainReport(ok: true, checked: 44))
            try await tamper(client, #"UPDATE ledger.events SET data = '{"n": 0}', data_text = '{"n": 0}' WHERE position = 48"#)
            #expect(try await same().firstBadPosition == 48)
            try await tamper(client, "DELETE FROM ledger.events WHERE position = 30")
            #expect(try await same().firstBadPosition == 30)
            #expect(try await same(31).firstBadPosition == 30)  // the part's starting link is missing
            try await tamper(client, "UPDATE ledger.events SET prev_hash = hash WHERE position = 9")
            let report = try await same()
            #expect(report.firstBadPosition == 9 && report.reason == "prev_hash is not the hash of the previous event")
            try await tamper(client, "UPDATE ledger.head SET hash = decode(repeat('11', 32), 'hex')")
            let tail = try await same(49)
            #expect(tail.firstBadPosition == 60 && tail.reason == "ledger head does not match the last event")
        }
    }

    @Test func aHashShortenedBehindADroppedConstraintIsReportedWhereItIs() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db)
        try await db.withOwner { client in
            try await tamper(
                client,
                """
                ALTER TABLE ledger.events DROP CONSTRAINT events_hash_check;
                UPDATE ledger.events SET hash = substring(hash FROM 1 FOR 31) WHERE position = 23
                """
            )
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            let swift = try await verifier.verify(pageSize: 10, parallelism: 3, minimumPartSize: 5)
            #expect(swift.firstBadPosition == 23 && swift.reason == "hash does not match the event's contents", "\(swift)")
            #expect(try await verifier.verifyInDatabase() == swift)
        }
    }

    @Test func aSignedPrefixCatchesTruncationAndRewritesThatTheChainAloneMisses() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db)
        try await db.withOwner { client in
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            let store = EventStore(client: client, logger: TestCluster.logger)
            let signed = try #require(try await store.event(at: 40))
            func both(_ expectedBad: Int64?, _ reason: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let swift = try await verifier.verifyPrefix(position: 40, hash: signed.hash)
                let sql = try await verifier.verifyPrefixInDatabase(position: 40, hash: signed.hash)
                #expect(swift.firstBadPosition == expectedBad, "\(swift)", sourceLocation: sourceLocation)
                #expect(sql == swift, sourceLocation: sourceLocation)
                if let reason { #expect(swift.reason?.contains(reason) == true, "\(swift)", sourceLocation: sourceLocation) }
            }
            try await both(nil)
            #expect(try await verifier.verifyPrefix(position: 40, hash: signed.prevHash).firstBadPosition == 40)

            // A superuser truncates the tail and moves the head back: the chain that is left verifies.
            try await tamper(
                client,
                """
                DELETE FROM ledger.events WHERE position > 30;
                UPDATE ledger.head SET position = 30, hash = (SELECT hash FROM ledger.events WHERE position = 30)
                """
            )
            #expect(try await verifier.verify().ok)
            #expect(try await verifier.verifyInDatabase().ok)
            try await both(31, "the log ends at position 30 but the checkpoint covers 40")

            // … and appends new history over it: the chain verifies again, the signed hash does not match.
            try await db.withWriter { writer, _ in
                for n in 31...45 {
                    _ = try await writer.append(AppendRequest(stream: stream("forged-\(n)"), expectedVersion: .any, events: [sampleEvent(n)]))
                }
            }
            #expect(try await verifier.verify().ok)
            #expect(try await verifier.verifyInDatabase().ok)
            try await both(40, "does not have the signed hash")

            // An edit inside the prefix is named where it is.
            try await tamper(client, #"UPDATE ledger.events SET data = '{"n": -1}', data_text = '{"n": -1}' WHERE position = 12"#)
            try await both(12, "hash does not match")

            // Everything gone, head reset: the chain says "0 events, fine"; the checkpoint does not.
            try await tamper(client, "TRUNCATE ledger.events; UPDATE ledger.head SET position = 0, hash = decode(repeat('00', 32), 'hex')")
            #expect(try await verifier.verify() == ChainReport(ok: true, checked: 0))
            try await both(1, "the log ends at position 0")
        }
    }
}
