import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Synchronization
import Testing

@Suite(.machine(.shared)) struct LedgerWriterTests {
    @Test func concurrentAppendsAreGaplessPerStreamOrderedAndChained() async throws {
        let db = try await TestDatabase.fresh()
        let tasks = 8
        let perTask = 1_000
        let streams = 100
        try await db.withWriter { writer, client in
            try await withThrowingTaskGroup(of: [AppendResult].self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var results: [AppendResult] = []
                        for i in 0..<perTask {
                            let n = task * perTask + i
                            results.append(
                                try await writer.append(
                                    AppendRequest(
                                        stream: stream("sample-\(n % streams)"),
                                        expectedVersion: .any,
                                        events: [sampleEvent(n)]
                                    )
                                )
                            )
                        }
                        return results
                    }
                }
                var positions: [Int64] = []
                for try await results in group { positions += results.map(\.firstPosition) }
                #expect(positions.sorted() == Array(1...Int64(tasks * perTask)))
            }

            let all = try await column(client, "SELECT position FROM ledger.events ORDER BY position", as: Int64.self)
            #expect(all == Array(1...Int64(tasks * perTask)))
            let badStreams = try await column(
                client,
                """
                SELECT stream_id FROM ledger.events GROUP BY stream_id
                HAVING min(stream_version) <> 1 OR max(stream_version) <> count(*) OR count(DISTINCT stream_version) <> count(*)
                """,
                as: String.self
            )
            #expect(badStreams.isEmpty)
            #expect(try await column(client, "SELECT count(DISTINCT stream_id) FROM ledger.events", as: Int64.self) == [Int64(streams)])

            let verifier = ChainVerifier(client: client, logger: TestCluster.logger)
            let swift = try await verifier.verify()
            let sql = try await verifier.verifyInDatabase()
            #expect(swift == ChainReport(ok: true, checked: Int64(tasks * perTask)))
            #expect(sql == swift)
        }
    }

    /// Two writers on one fresh database, each with its own aggregate store: two daemons' write paths, in one test process.
    static func withTwoProcesses(
        _ body: @Sendable (LedgerWriter, AggregateStore, LedgerWriter, AggregateStore, DatabaseClient) async throws -> Void
    ) async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { first, client in
            try await db.withWriter { second, _ in
                let here = AggregateStore(writer: first, store: EventStore(client: client, logger: TestCluster.logger))
                let there = AggregateStore(writer: second, store: EventStore(client: client, logger: TestCluster.logger))
                try await body(first, here, second, there, client)
            }
        }
    }

    /// A command decided in a writer's batch on a state another process has moved since: the database refuses the
    /// batch's belief, the writer learns the version, reads the product fresh and decides again — the sale lands on
    /// the true stock, and the next one is refused once that stock is gone.
    @Test func aCommandDecidedOnAStaleCacheIsDecidedAgainOnTheStockAnotherProcessLeft() async throws {
        try await Self.withTwoProcesses { first, here, second, there, client in
            let pen = PenCommands.pen
            let list = LedgerCommand(reads: AggregateKeys(products: [pen]), now: PenCommands.t0, metadata: EventMetadata()) { states in
                #expect(states.products[pen] == nil)
                let listed = ProductListed(
                    productID: pen,
                    sku: "pen",
                    name: "Pen",
                    description: "",
                    imageFile: "pen.png",
                    price: Money(minorUnits: 2500, currency: .usd)
                )
                let events: [DomainEvent] = [.product(.listed(listed)), .product(.stockReceived(StockReceived(productID: pen, quantity: 2)))]
                return CommandPlan(plan: AppendPlan([PlannedAppend(streamID: pen.streamID, expectedVersion: .noStream, events: events)]))
            }
            _ = try await first.decide(list, states: here)
            // The other process sells one: this writer's cache still says two are left.
            _ = try await second.decide(PenCommands.reserve("order-there"), states: there)
            let sold = try await first.decide(PenCommands.reserve("order-here"), states: here)
            #expect(sold.result != nil)
            #expect(sold.states?.products[pen]?.version == 4)
            #expect(sold.states?.products[pen]?.available == 0)
            await #expect(throws: ProductRejection.self) { try await first.decide(PenCommands.reserve("order-late"), states: here) }
            #expect(
                try await column(client, "SELECT count(*) FROM ledger.events WHERE stream_id = \(pen.streamID.rawValue)", as: Int64.self) == [4]
            )
        }
    }

    /// A command that reads a stream it does not append to but depends on (``LedgerCommand/checked``: a shipping
    /// method's price), decided on this process's remembered state after another process moved that stream: the
    /// database refuses the batch's belief and the command is decided again on the stream caught up. Without the
    /// check the stale read would pass, since only appended streams are checked.
    @Test func aCheckedReadAnotherProcessMovedIsDecidedAgainOnItsNewState() async throws {
        try await Self.withTwoProcesses { first, here, second, there, client in
            let (pen, cup) = (PenCommands.pen, ProductID("cup")!)
            func listing(_ id: ProductID) -> LedgerCommand {
                LedgerCommand(reads: AggregateKeys(products: [id]), now: PenCommands.t0, metadata: EventMetadata()) { _ in
                    let listed = ProductListed(
                        productID: id,
                        sku: id.rawValue,
                        name: id.rawValue,
                        description: "",
                        imageFile: "\(id.rawValue).png",
                        price: Money(minorUnits: 2500, currency: .usd)
                    )
                    return CommandPlan(
                        plan: AppendPlan([PlannedAppend(streamID: id.streamID, expectedVersion: .noStream, events: [.product(.listed(listed))])])
                    )
                }
            }
            func restock(_ id: ProductID, reads: [ProductID], checked: [ProductID], seen: SeenVersions? = nil) -> LedgerCommand {
                LedgerCommand(
                    reads: AggregateKeys(products: reads),
                    checked: AggregateKeys(products: checked),
                    now: PenCommands.t0,
                    metadata: EventMetadata()
                ) { states in
                    seen?.versions.withLock { $0.append(states.products[pen]?.version ?? 0) }
                    let version = states.products[id]?.version ?? 0
                    let received: DomainEvent = .product(.stockReceived(StockReceived(productID: id, quantity: 1)))
                    return CommandPlan(plan: AppendPlan([PlannedAppend(streamID: id.streamID, expectedVersion: .exact(version), events: [received])]))
                }
            }
            _ = try await first.decide(listing(pen), states: here)
            _ = try await first.decide(listing(cup), states: here)
            _ = try await first.decide(restock(cup, reads: [pen, cup], checked: [pen]), states: here)  // pen remembered at 1
            // The other process moves the pen: this process still remembers it at version 1.
            _ = try await second.decide(restock(pen, reads: [pen], checked: []), states: there)
            let seen = SeenVersions()
            let outcome = try await first.decide(restock(cup, reads: [pen, cup], checked: [pen], seen: seen), states: here)
            #expect(seen.versions.withLock { $0 } == [1, 2])
            #expect(outcome.decidedOn.products[pen]?.version == 2)
            #expect(try await column(client, "SELECT count(*) FROM ledger.events WHERE stream_id = \(cup.streamID.rawValue)", as: Int64.self) == [3])
        }
    }

    /// A command that reads two streams and appends to one: when another process moved both, the conflict on the
    /// one it appends to makes the writer read *every* stream of the command fresh, so the decision never mixes a
    /// stream caught up with one left behind (the read-only one would pass the database's check stale).
    @Test func aStaleReadMakesEveryReadOfTheCommandFresh() async throws {
        try await Self.withTwoProcesses { first, here, second, there, client in
            let (pen, cup) = (PenCommands.pen, ProductID("cup")!)
            let t0 = PenCommands.t0
            func list(_ id: ProductID) -> LedgerCommand {
                LedgerCommand(reads: AggregateKeys(products: [id]), now: t0, metadata: EventMetadata()) { _ in
                    let listed = ProductListed(
                        productID: id,
                        sku: id.rawValue,
                        name: id.rawValue,
                        description: "",
                        imageFile: "x.png",
                        price: Money(minorUnits: 100, currency: .usd)
                    )
                    let events: [DomainEvent] = [.product(.listed(listed)), .product(.stockReceived(StockReceived(productID: id, quantity: 5)))]
                    return CommandPlan(plan: AppendPlan([PlannedAppend(streamID: id.streamID, expectedVersion: .noStream, events: events)]))
                }
            }
            func receive(_ id: ProductID) -> LedgerCommand {
                LedgerCommand(reads: AggregateKeys(products: [id]), now: t0, metadata: EventMetadata()) { states in
                    let version = states.products[id]!.version
                    let event = DomainEvent.product(.stockReceived(StockReceived(productID: id, quantity: 1)))
                    return CommandPlan(
                        plan: AppendPlan([PlannedAppend(streamID: id.streamID, expectedVersion: .exact(version), events: [event])])
                    )
                }
            }
            _ = try await first.decide(list(pen), states: here)
            _ = try await first.decide(list(cup), states: here)
            // The other process moves both: the cup (which the command below only reads), then the pen.
            _ = try await second.decide(receive(cup), states: there)
            _ = try await second.decide(receive(pen), states: there)
            // Reads both, appends to the pen only.
            var reserve = PenCommands.reserve("order-here")
            reserve.reads = AggregateKeys(products: [pen, cup])
            let sold = try await first.decide(reserve, states: here)
            #expect(sold.decidedOn.products[pen]?.version == 3)
            #expect(sold.decidedOn.products[cup]?.version == 3, "the cup was decided on as this writer remembered it")
        }
    }

    @Test func twoWritersRacingOnOneStreamExactlyOneWins() async throws {
        let db = try await TestDatabase.fresh()
        // Two writers with separate pools stand for two daemons; each round both expect version n.
        try await db.withWriter { first, client in
            try await db.withWriter { second, _ in
                let s = stream("order-race")
                for round in 0..<50 {
                    let expected: ExpectedVersion = round == 0 ? .noStream : .exact(Int64(round))
                    async let a = outcome {
                        try await first.append(AppendRequest(stream: s, expectedVersion: expected, events: [sampleEvent(round)]))
                    }
                    async let b = outcome {
                        try await second.append(AppendRequest(stream: s, expectedVersion: expected, events: [sampleEvent(round)]))
                    }
                    let outcomes = await [a, b]
                    let wins = outcomes.filter { if case .success = $0 { true } else { false } }
                    #expect(wins.count == 1, "round \(round)")
                    for case .failure(let error) in outcomes {
                        let appendError = try #require(error as? AppendError)
                        #expect(appendError == .versionConflict)
                        #expect(appendError.isRetryable)
                        #expect(appendError.streamID == s)
                        #expect(appendError.actualVersion == Int64(round + 1))
                    }
                }
                // Same race inside one writer's batch: the second of two identical expectations loses.
                async let c = outcome { try await first.append(AppendRequest(stream: s, expectedVersion: .exact(50), events: [sampleEvent(1)])) }
                async let d = outcome { try await first.append(AppendRequest(stream: s, expectedVersion: .exact(50), events: [sampleEvent(2)])) }
                let inBatch = await [c, d]
                #expect(inBatch.filter { if case .success = $0 { true } else { false } }.count == 1)
                #expect(try await column(client, "SELECT count(*) FROM ledger.events WHERE stream_id = 'order-race'", as: Int64.self) == [51])
                let versions = try await column(
                    client,
                    "SELECT stream_version FROM ledger.events WHERE stream_id = 'order-race' ORDER BY 1",
                    as: Int64.self
                )
                #expect(versions == Array(1...51))
            }
        }
    }

    @Test func noStreamAndExactExpectationsAreEnforced() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let s = stream("product-1")
            let created = try await writer.append(AppendRequest(stream: s, expectedVersion: .noStream, events: [sampleEvent(1), sampleEvent(2)]))
            #expect(created.streams == [StreamVersion(streamID: s, version: 2)])
            await #expect(throws: AppendError.versionConflict) {
                try await writer.append(AppendRequest(stream: s, expectedVersion: .noStream, events: [sampleEvent(3)]))
            }
            await #expect(throws: AppendError.versionConflict) {
                try await writer.append(AppendRequest(stream: s, expectedVersion: .exact(1), events: [sampleEvent(3)]))
            }
            _ = try await writer.append(AppendRequest(stream: s, expectedVersion: .exact(2), events: [sampleEvent(3)]))
            #expect(try await eventCount(client) == 3)
        }
    }

    @Test func multiStreamAppendIsAtomic() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let order = stream("order-1")
            let product = stream("product-9")
            _ = try await writer.append(AppendRequest(stream: product, expectedVersion: .noStream, events: [sampleEvent(0)]))
            // The product expectation fails, so the order's events must not be written either.
            await #expect(throws: AppendError.versionConflict) {
                try await writer.append(
                    AppendRequest(streams: [
                        StreamAppend(streamID: order, expectedVersion: .noStream, events: [sampleEvent(1)]),
                        StreamAppend(streamID: product, expectedVersion: .exact(5), events: [sampleEvent(2)]),
                    ])
                )
            }
            #expect(try await eventCount(client) == 1)
            let ok = try await writer.append(
                AppendRequest(streams: [
                    StreamAppend(streamID: order, expectedVersion: .noStream, events: [sampleEvent(1)]),
                    StreamAppend(streamID: product, expectedVersion: .exact(1), events: [sampleEvent(2)]),
                ])
            )
            #expect(ok.firstPosition == 2 && ok.lastPosition == 3)
            #expect(ok.streams == [StreamVersion(streamID: order, version: 1), StreamVersion(streamID: product, version: 2)])
        }
    }

    /// A shipping contact is stored by the append that carries it, in its transaction (sql/0023): with the batch's
    /// first call (an explicit transaction) and the later one-call commits alike, and never for a request that is
    /// refused or replayed.
    @Test func aContactIsStoredExactlyWhenItsAppendCommits() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            func request(_ name: String, _ expected: ExpectedVersion, key: String? = nil, contact ref: String) throws -> AppendRequest {
                var request = AppendRequest(stream: stream(name), expectedVersion: expected, events: [sampleEvent(1)])
                request.contacts = [
                    try ContactRow(
                        ref: ref,
                        contact: ShippingContact(
                            name: "Jane",
                            email: "jane@example.com",
                            street: "1 Main St",
                            city: "Town",
                            state: "CA",
                            zip: "95014"
                        )
                    )
                ]
                if let key { request.idempotency = IdempotencyKey(key: key, for: request) }
                return request
            }
            func contacts() async throws -> [String] {
                try await column(client, "SELECT contact_ref FROM ledger.shipping_contacts ORDER BY contact_ref", as: String.self)
            }
            _ = try await writer.append(try request("order-1", .noStream, contact: "contact-1"))  // the head read under its lock
            _ = try await writer.append(try request("order-2", .noStream, key: "k-2", contact: "contact-2"))  // one call
            #expect(try await contacts() == ["contact-1", "contact-2"])
            #expect(
                try await column(client, "SELECT data ->> 'email' FROM ledger.shipping_contacts LIMIT 1", as: String.self) == ["jane@example.com"]
            )

            await #expect(throws: AppendError.versionConflict) {
                try await writer.append(try request("order-1", .noStream, contact: "contact-3"))
            }
            var replay = try request("order-2", .noStream, contact: "contact-4")
            replay.idempotency = IdempotencyKey(key: "k-2", for: try request("order-2", .noStream, contact: "contact-2"))
            #expect(try await writer.append(replay).replayed)
            #expect(try await contacts() == ["contact-1", "contact-2"])
            #expect(try await eventCount(client) == 2)
        }
    }

    @Test func malformedRequestsAreRejectedWithoutAppending() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let s = stream("sample-1")
            await #expect(throws: AppendError.invalidAppend) {
                try await writer.append(AppendRequest(streams: []))
            }
            await #expect(throws: AppendError.invalidAppend) {
                try await writer.append(AppendRequest(stream: s, expectedVersion: .any, events: []))
            }
            await #expect(throws: AppendError.invalidAppend) {
                try await writer.append(AppendRequest(stream: s, expectedVersion: .exact(0), events: [sampleEvent(1)]))
            }
            let once = StreamAppend(streamID: s, expectedVersion: .noStream, events: [sampleEvent(1)])
            let other = StreamAppend(streamID: stream("sample-2"), expectedVersion: .noStream, events: [sampleEvent(1)])
            await #expect(throws: AppendError.invalidAppend) {  // a stream twice in one append
                try await writer.append(AppendRequest(streams: [once, other, once]))
            }
            func row(_ stream: StreamID) -> ProjectionRow { ProjectionRow(projection: "p", key: "k", stream: stream, version: 1, json: "{}") }
            await #expect(throws: AppendError.invalidAppend) {  // a row for a stream the append does not hold
                try await writer.append(AppendRequest(streams: [once, other], projections: [row(other.streamID), row(stream("sample-3"))]))
            }
            await #expect(throws: AppendError.invalidAppend) {  // a row for a stream expected at any version
                var loose = other
                loose.expectedVersion = .any
                _ = try await writer.append(AppendRequest(streams: [once, loose], projections: [row(s), row(other.streamID)]))
            }
            #expect(try await eventCount(client) == 0)
            // Invalid JSON reaches the database; it fails alone, its batch neighbours succeed.
            let bad = NewEvent(type: "Broken", data: "{not json", effectiveAt: testEpoch)
            async let good1 = writer.append(AppendRequest(stream: s, expectedVersion: .any, events: [sampleEvent(1)]))
            async let broken = outcome { try await writer.append(AppendRequest(stream: s, expectedVersion: .any, events: [bad])) }
            async let good2 = writer.append(AppendRequest(stream: s, expectedVersion: .any, events: [sampleEvent(2)]))
            _ = try await (good1, good2)
            guard case .failure(let error) = await broken else {
                Issue.record("invalid JSON was accepted")
                return
            }
            #expect(error as? AppendError == .invalidAppend)
            #expect(try await eventCount(client) == 2)
            #expect(try await ChainVerifier(client: client, logger: TestCluster.logger).verify().ok)
        }
    }

    @Test func aClosedBatchTheSettlementRuleDisagreesWithIsAnItemsMismatchNotAVersionConflict() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withWriter { writer, client in
            let batch = stream("settlement-b-1")
            let opened = NewEvent(
                type: "SettlementBatchOpened",
                data: #"{"batch_id": "b-1", "currency": "EUR", "pinned_position": 1, "cut_off_at": "2030-01-01T00:00:00Z"}"#,
                effectiveAt: testEpoch
            )
            _ = try await writer.append(AppendRequest(stream: batch, expectedVersion: .noStream, events: [opened]))
            // The ledger has no captures at all; the event claims one (sql/0008 raises LDG10).
            let closed = NewEvent(
                type: "SettlementBatchClosed",
                schemaVersion: 2,
                data: #"{"batch_id": "b-1", "capture_count": 1, "refund_count": 0, "#
                    + #""gross_credit": {"amount": "10.00"}, "gross_debit": {"amount": "0.00"}}"#,
                effectiveAt: testEpoch
            )
            let mismatch = await #expect(throws: AppendError.self) {
                try await writer.append(AppendRequest(stream: batch, expectedVersion: .exact(1), events: [closed]))
            }
            #expect(mismatch == .settlementItemsMismatch)
            #expect(mismatch != .versionConflict)
            #expect(mismatch?.isRetryable == false)
            #expect(mismatch?.message == AppendError.settlementItemsMismatch.message)  // not the database's text

            // Closing a batch that was never opened is the same disagreement.
            let orphan = await #expect(throws: AppendError.self) {
                try await writer.append(AppendRequest(stream: stream("settlement-b-2"), expectedVersion: .noStream, events: [closed]))
            }
            #expect(orphan == .settlementItemsMismatch)
            #expect(try await eventCount(client) == 1)
        }
    }
}

/// The outcome of an async throwing call as a value, for racing calls with `async let`.
func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}

/// An append is acknowledged on its transaction's COMMIT, not on the statement's completion: a deferred
/// constraint trigger that refuses only at COMMIT fails the append, and the log holds nothing of it.
@Suite(.machine(.shared)) struct LedgerWriterCommitTests {
    @Test func anAppendWhoseCommitFailsIsRefusedAndLeavesNothing() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withOwner { owner in
            try await owner.withConnection { connection in
                try await Migrator.run(
                    script: """
                        CREATE FUNCTION public.refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN
                            IF NEW.stream_id LIKE 'doomed-%' THEN RAISE EXCEPTION 'refused at commit'; END IF;
                            RETURN NULL;
                        END $$;
                        CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON ledger.events
                            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.refuse_at_commit();
                        """,
                    connection: connection,
                    logger: TestCluster.logger
                )
            }
        }
        try await db.withWriter { writer, client in
            await #expect(throws: AppendError.self) {
                try await writer.append(AppendRequest(stream: stream("doomed-1"), expectedVersion: .any, events: [sampleEvent(1)]))
            }
            #expect(try await eventCount(client) == 0)
            let next = try await writer.append(AppendRequest(stream: stream("fine-1"), expectedVersion: .any, events: [sampleEvent(2)]))
            #expect(next.firstPosition == 1)
            #expect(try await eventCount(client) == 1)
            // Now the writer knows the head and commits in one call (sql/0018; an error there reaches the caller, so
            // this append succeeding shows the call commits) …
            let called = try await writer.append(AppendRequest(stream: stream("fine-1b"), expectedVersion: .any, events: [sampleEvent(3)]))
            #expect(called.firstPosition == 2)
            // … and a COMMIT that fails inside the procedure is still a refusal; the head it believed is forgotten.
            await #expect(throws: AppendError.self) {
                try await writer.append(AppendRequest(stream: stream("doomed-2"), expectedVersion: .any, events: [sampleEvent(4)]))
            }
            #expect(try await eventCount(client) == 2)
            let last = try await writer.append(AppendRequest(stream: stream("fine-2"), expectedVersion: .any, events: [sampleEvent(5)]))
            #expect(last.firstPosition == 3)
            #expect(try await ChainVerifier(client: client, logger: TestCluster.logger).verify() == ChainReport(ok: true, checked: 3))
        }
    }
}

/// The versions a command's decisions saw, across its attempts.
final class SeenVersions: Sendable {
    let versions = Mutex<[Int64]>([])
}
