import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

@Suite(.machine(.shared)) struct ImmutabilityTests {
    func seed(_ db: TestDatabase, count: Int) async throws {
        try await db.withWriter { writer, _ in
            for n in 1...count {
                _ = try await writer.append(AppendRequest(stream: stream("sample-\(n % 3)"), expectedVersion: .any, events: [sampleEvent(n)]))
            }
        }
    }

    @Test func theAppRoleCannotUpdateDeleteOrTruncate() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 5)
        try await db.withApp { client in
            // 42501: insufficient privilege — the grants stop the application role.
            await expectRejected(client, "UPDATE ledger.events SET data = '{}' WHERE position = 1", sqlState: "42501")
            await expectRejected(client, "DELETE FROM ledger.events WHERE position = 1", sqlState: "42501")
            await expectRejected(client, "TRUNCATE ledger.events", sqlState: "42501")
            await expectRejected(client, "DELETE FROM ledger.idempotency_keys", sqlState: "42501")
            let count = try await eventCount(client)
            #expect(count == 5)
        }
        try await db.withAuditor { client in
            await expectRejected(client, "INSERT INTO ledger.events SELECT * FROM ledger.events LIMIT 1", sqlState: "42501")
            #expect(try await eventCount(client) == 5)
            // The auditor can verify with SQL alone.
            let ok = try await column(client, "SELECT ok FROM ledger.verify_chain()", as: Bool.self)
            #expect(ok == [true])
        }
    }

    @Test func triggersRejectMutationEvenByTheOwner() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 3)
        try await db.withOwner { client in
            await expectRejected(client, "UPDATE ledger.events SET data = '{}' WHERE position = 1", sqlState: "LDG01")
            await expectRejected(client, "DELETE FROM ledger.events WHERE position = 2", sqlState: "LDG01")
            await expectRejected(client, "TRUNCATE ledger.events", sqlState: "LDG01")
            await expectRejected(client, "UPDATE ledger.idempotency_keys SET key = 'x'", sqlState: "LDG01")
            let count = try await eventCount(client)
            #expect(count == 3)
        }
    }

    @Test func superuserTamperingIsReportedAtItsPositionByBothVerifiers() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 20)
        try await db.withOwner { client in
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            #expect(try await verifier.verify().ok)

            // Edit one event's data with the trigger disabled.
            try await client.query("ALTER TABLE ledger.events DISABLE TRIGGER events_append_only")
            try await client.query(#"UPDATE ledger.events SET data = '{"n": 1000000}', data_text = '{"n": 1000000}' WHERE position = 7"#)
            try await client.query("ALTER TABLE ledger.events ENABLE TRIGGER events_append_only")
            var swift = try await verifier.verify()
            var sql = try await verifier.verifyInDatabase()
            #expect(swift.firstBadPosition == 7 && !swift.ok)
            #expect(sql == swift)
            // A range that ends before the edit still verifies.
            #expect(try await verifier.verify(from: 1, to: 6).ok)
            #expect(try await verifier.verifyInDatabase(from: 1, to: 6).ok)
            // An edit of the metadata or a time is caught too.
            try await tamper(client, "UPDATE ledger.events SET recorded_at = recorded_at + interval '1 microsecond' WHERE position = 4")
            swift = try await verifier.verify()
            sql = try await verifier.verifyInDatabase()
            #expect(swift.firstBadPosition == 4 && sql == swift)

            // Deleting an event is reported as the missing position.
            try await tamper(client, "DELETE FROM ledger.events WHERE position = 2")
            swift = try await verifier.verify()
            sql = try await verifier.verifyInDatabase()
            #expect(swift.firstBadPosition == 2 && sql == swift)
            #expect(swift.reason == "event is missing")

            // Truncating the tail (the head still says 20) is reported at the first missing position.
            try await tamper(client, "DELETE FROM ledger.events WHERE position >= 18")
            swift = try await verifier.verify(from: 8)
            sql = try await verifier.verifyInDatabase(from: 8)
            #expect(swift.firstBadPosition == 18 && sql == swift)
        }
    }

    @Test func movingTheHeadBackOverAnEditedTailIsCaughtByBothVerifiers() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 10)
        // The daemon's own role may update ledger.head (every append moves it): it moves the head
        // back one event, with a hash that matches the event it now points at.
        _ = try await db.withApp { client in
            try await client.query(
                "UPDATE ledger.head SET position = 9, hash = (SELECT hash FROM ledger.events WHERE position = 9) WHERE singleton"
            )
        }
        let beyond = "event stored beyond the ledger head: the head was moved back"
        try await db.withOwner { client in
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            // The stored event 10 lies beyond the head: tampering in itself.
            var swift = try await verifier.verify()
            #expect(!swift.ok && swift.firstBadPosition == 10 && swift.reason == beyond, "\(swift)")
            #expect(try await verifier.verifyInDatabase() == swift)
            // An explicit range past the head is capped at the last stored event, not at the head.
            #expect(try await verifier.verify(from: 5, to: 50).firstBadPosition == 10)
            #expect(try await verifier.verifyInDatabase(from: 5, to: 50).firstBadPosition == 10)

            // Now the tail event beyond the head is edited: reported at its position as an edit.
            try await tamper(client, #"UPDATE ledger.events SET data = '{"n": 999}', data_text = '{"n": 999}' WHERE position = 10"#)
            swift = try await verifier.verify()
            #expect(!swift.ok && swift.firstBadPosition == 10 && swift.reason == "hash does not match the event's contents", "\(swift)")
            #expect(try await verifier.verifyInDatabase() == swift)
            #expect(try await verifier.verify(parallelism: 4, minimumPartSize: 2) == swift)
            #expect(try await verifier.verify(from: 10) == (try await verifier.verifyInDatabase(from: 10)))
            #expect(try await verifier.verify(from: 10).firstBadPosition == 10)
            // A range that ends before the head still verifies.
            #expect(try await verifier.verify(from: 1, to: 9).ok)
            #expect(try await verifier.verifyInDatabase(from: 1, to: 9).ok)
        }
        // The auditor's psql recipe (README) answers the same.
        try await db.withAuditor { client in
            let rows = try await client.query("SELECT ok, first_bad_position FROM ledger.verify_chain()")
            var answers: [(Bool, Int64?)] = []
            for try await row in rows.decode((Bool, Int64?).self) { answers.append(row) }
            #expect(answers.count == 1 && answers.first?.0 == false && answers.first?.1 == 10)
        }
    }

    @Test func aHeadThatClaimsLessOrOtherThanTheStoredEventsIsReported() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 6)
        _ = try await db.withApp { client in
            // The head moved back, but its hash left as it was: the head disagrees with event 5.
            try await client.query("UPDATE ledger.head SET position = 5 WHERE singleton")
        }
        try await db.withOwner { client in
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            let swift = try await verifier.verify()
            #expect(!swift.ok && swift.firstBadPosition == 5 && swift.reason == "ledger head does not match the last event", "\(swift)")
            #expect(try await verifier.verifyInDatabase() == swift)
        }
    }

    @Test func rewritingHashesToHideAnEditBreaksTheLinkAfterIt() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 10)
        try await db.withOwner { client in
            // A careful tamperer recomputes the edited event's own hash; the next event's
            // prev_hash no longer matches, and that position is reported.
            try await tamper(
                client,
                #"""
                UPDATE ledger.events SET data = '{"n": 5, "note": "forged"}', data_text = '{"n": 5, "note": "forged"}' WHERE position = 5;
                UPDATE ledger.events e SET hash = ledger.event_hash(e.prev_hash, e.position, e.stream_id, e.stream_version,
                    e.event_id, e.type, e.schema_version, e.data_text, e.metadata_text, e.effective_at, e.recorded_at)
                WHERE position = 5
                """#
            )
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            let swift = try await verifier.verify()
            #expect(swift.firstBadPosition == 6)
            #expect(try await verifier.verifyInDatabase() == swift)
        }
    }

    /// The chain covers the stored texts (sql/0017), and the jsonb is their parse: what the writer
    /// hashed in Swift is what SQL recomputes from the row, for every event; then an edit of the
    /// jsonb alone, of the text alone (even to an equal JSON value), or of the metadata text is
    /// named at its position by both verifiers, each with its own reason.
    @Test func theStoredHashedTextIsWhatTheJsonbSaysAndAnEditOfEitherIsCaught() async throws {
        let db = try await TestDatabase.fresh()
        try await seed(db, count: 10)
        // Two texts whose jsonb output differs from them (key order, spacing): the hash covers these bytes.
        try await db.withWriter { writer, _ in
            for n in 11...12 {
                let event = NewEvent(type: "SampleRecorded", data: #"{"z":\#(n),  "a":[1,2.50]}"#, effectiveAt: testEpoch)
                _ = try await writer.append(AppendRequest(stream: stream("sample-text"), expectedVersion: .any, events: [event]))
            }
        }
        try await db.withOwner { client in
            // Every row: the stored hash is SHA-256 over the stored text, recomputed in SQL and in Swift,
            // and the jsonb columns are exactly the parse of the texts.
            let rows = try await client.query(
                """
                SELECT count(*) FILTER (WHERE hash = ledger.event_hash(prev_hash, position, stream_id, stream_version, event_id,
                           type, schema_version, data_text, metadata_text, effective_at, recorded_at)),
                       count(*) FILTER (WHERE data_text::jsonb = data AND metadata_text::jsonb = metadata),
                       count(*) FILTER (WHERE data_text <> data::text), count(*)
                FROM ledger.events
                """
            )
            for try await (linked, parsed, notJsonbText, all) in rows.decode((Int64, Int64, Int64, Int64).self) {
                #expect(all == 12 && linked == 12 && parsed == 12, "\(linked) \(parsed) of \(all)")
                // The last two texts are not jsonb's output: the hash really is over the stored text.
                #expect(notJsonbText == 2)
            }
            let store = EventStore(client: client, logger: TestCluster.logger)
            var prev = CanonicalEventLayout.genesisHash
            for position in Int64(1)...12 {
                let event = try #require(try await store.event(at: position))
                #expect(ChainVerifier.linkHash(prevHash: prev, event: event) == event.hash, "position \(position)")
                prev = event.hash
            }

            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            func both(_ position: Int64, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let swift = try await verifier.verify()
                #expect(!swift.ok && swift.firstBadPosition == position && swift.reason == reason, "\(swift)", sourceLocation: sourceLocation)
                #expect(try await verifier.verifyInDatabase() == swift, sourceLocation: sourceLocation)
                #expect(try await verifier.verify(pageSize: 3, parallelism: 3, minimumPartSize: 2) == swift, sourceLocation: sourceLocation)
            }
            // 1. The jsonb alone: PostgreSQL refuses it (the CHECK of sql/0017), even a superuser's with the
            //    append-only trigger off …
            #expect(try await column(client, "SELECT ledger.events_jsonb_guarded()", as: Bool.self) == [true])
            await #expect(throws: PSQLError.self) {
                try await tamper(client, #"UPDATE ledger.events SET data = '{"n": 1000000}' WHERE position = 11"#)
            }
            #expect(try await verifier.verify() == ChainReport(ok: true, checked: 12))
            // … so it takes dropping the constraint first, which the catalog shows: then both verifiers
            // compare every row's jsonb with its text and name the edited one.
            try await tamper(
                client,
                #"""
                ALTER TABLE ledger.events DROP CONSTRAINT events_jsonb_is_hashed_text;
                UPDATE ledger.events SET data = '{"n": 1000000}' WHERE position = 11
                """#
            )
            #expect(try await column(client, "SELECT ledger.events_jsonb_guarded()", as: Bool.self) == [false])
            try await both(11, "the stored jsonb is not the hashed text")
            // 2. The text alone, to the same JSON value with other spacing: the jsonb still equals its parse,
            //    the hash does not.
            try await tamper(client, "UPDATE ledger.events SET data_text = ' ' || data_text WHERE position = 8")
            try await both(8, "hash does not match the event's contents")
            // 3. The metadata text, to another value.
            try await tamper(client, #"UPDATE ledger.events SET metadata_text = '{"actor": "mallory"}' WHERE position = 5"#)
            try await both(5, "hash does not match the event's contents")
            // 4. The metadata jsonb alone.
            try await tamper(client, #"UPDATE ledger.events SET metadata = '{"actor": "mallory"}' WHERE position = 3"#)
            try await both(3, "the stored jsonb is not the hashed text")
        }
    }

    /// Two writers on one database (two daemons): each links its batches onto the head its own last
    /// commit left, so each time the other has appended in between, its belief is stale. The
    /// statement appends nothing and says so, the writer links the batch again under the head lock,
    /// and the chain stays whole and gapless.
    @Test func aWriterWhoseHeadMovedLinksItsBatchAgainOntoTheRealHead() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { a, _ in
            try await db.withWriter { b, _ in
                for n in 1...10 {
                    let writer = n % 2 == 0 ? a : b
                    let result = try await writer.append(
                        AppendRequest(stream: stream("relink-\(n % 3)"), expectedVersion: .any, events: [sampleEvent(n), sampleEvent(n + 100)])
                    )
                    #expect(result.firstPosition == Int64(2 * n - 1) && result.lastPosition == Int64(2 * n))
                }
                // Both at once, many times: every append lands once, in one gapless chain.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for n in 11...60 {
                        let writer = n % 2 == 0 ? a : b
                        group.addTask {
                            _ = try await writer.append(
                                AppendRequest(stream: stream("relink-\(n)"), expectedVersion: .noStream, events: [sampleEvent(n)])
                            )
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
        try await db.withOwner { client in
            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            #expect(try await verifier.verify() == ChainReport(ok: true, checked: 70))
            #expect(try await verifier.verifyInDatabase() == ChainReport(ok: true, checked: 70))
            for try await (position, recordedOrdered) in try await client.query(
                """
                SELECT max(position), bool_and(recorded_at >= prev_at) FROM (
                    SELECT position, recorded_at, coalesce(lag(recorded_at) OVER (ORDER BY position), recorded_at) AS prev_at
                    FROM ledger.events) t
                """
            ).decode((Int64, Bool).self) {
                #expect(position == 70 && recordedOrdered)
            }
        }
    }
}
