import Foundation
import LedgerCore
import LedgerEngine
import Testing

/// The group-commit writer's decisions, event by event, without PostgreSQL: the planner is fed
/// the version cache's contents and `ledger.append_batch`'s answer rows as values, and every
/// action it returns is compared whole (the exact bind arrays, results and cache updates).
@Suite struct BatchPlannerTests {
    // MARK: Beliefs

    @Test func aFreshStreamExpectedAsNoStreamIsBelievedAtZeroWithoutAnyRead() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .noStream, event(1), event(2)))])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        #expect(plan.requests == [.append(firstOrdinal: 1, eventCount: 2, streams: [version("order-1", 2)])])
        var expected = BatchStatement()
        expected.checkStreams = ["order-1"]
        expected.checkVersions = [0]
        expected.events.streamIDs = ["order-1", "order-1"]
        expected.events.versions = [1, 2]
        expected.events.eventIDs = [uuid(1), uuid(2)]
        expected.events.types = ["SampleRecorded", "SampleRecorded"]
        expected.events.schemaVersions = [1, 1]
        expected.events.data = [#"{"n":1}"#, #"{"n":2}"#]
        expected.events.metadata = ["{}", "{}"]
        expected.events.effectiveMicros = [epochMicros + 1, epochMicros + 2]
        #expect(plan.statement == expected)
        #expect(plan.versionsAfter == ["order-1": 2])

        #expect(
            planner.batchAnswered([.appended(41)])
                == .complete(
                    [.success(AppendResult(firstPosition: 41, lastPosition: 42, streams: [version("order-1", 2)]))],
                    committed: ["order-1": 2]
                )
        )
    }

    @Test func aFreshStreamWithAnExactExpectationIsBelievedAtThatVersion() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .exact(5), event(1), event(2)))])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        #expect(plan.statement.checkStreams == ["order-1"])
        #expect(plan.statement.checkVersions == [5])
        #expect(plan.statement.events.versions == [6, 7])
        #expect(plan.requests == [.append(firstOrdinal: 1, eventCount: 2, streams: [version("order-1", 7)])])
        #expect(plan.versionsAfter == ["order-1": 7])
    }

    @Test func anUncachedAnyStreamIsLoadedAndTheLoadedVersionIsUsed() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .any, event(1)))])
        #expect(planner.startAttempt(cached: [:]) == .loadVersions(["order-1"]))

        let plan = try #require(planner.versionsLoaded(["order-1": 7]).executed)
        #expect(plan.statement.checkStreams == ["order-1"])
        #expect(plan.statement.checkVersions == [7])
        #expect(plan.statement.events.versions == [8])
        #expect(plan.requests == [.append(firstOrdinal: 1, eventCount: 1, streams: [version("order-1", 8)])])
    }

    @Test func loadVersionsAsksForEachUnknownStreamOnceInQueueOrder() throws {
        var planner = BatchPlanner(requests: [
            request(on("b", .any, event(1))), request(on("a", .any, event(2))), request(on("b", .any, event(3))),
        ])
        #expect(planner.streams == ["b", "a"])
        #expect(planner.startAttempt(cached: [:]) == .loadVersions(["b", "a"]))

        let plan = try #require(planner.versionsLoaded(["b": 2, "a": 0]).executed)
        #expect(plan.statement.checkStreams == ["b", "a"])
        #expect(plan.statement.checkVersions == [2, 0])
        #expect(plan.statement.events.streamIDs == ["b", "a", "b"])
        #expect(plan.statement.events.versions == [3, 1, 4])
        #expect(
            plan.requests == [
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("b", 3)]),
                .append(firstOrdinal: 2, eventCount: 1, streams: [version("a", 1)]),
                .append(firstOrdinal: 3, eventCount: 1, streams: [version("b", 4)]),
            ]
        )
    }

    @Test func aLoadedVersionOverridesALaterRequestsExactExpectation() throws {
        var planner = BatchPlanner(requests: [request(on("a", .any, event(1))), request(on("a", .exact(3), event(2)))])
        #expect(planner.startAttempt(cached: [:]) == .loadVersions(["a"]))

        let plan = try #require(planner.versionsLoaded(["a": 5]).executed)
        #expect(plan.statement.checkVersions == [5])
        #expect(plan.statement.events.versions == [6])
        expectPlans(
            plan.requests,
            [
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("a", 6)]),
                .refuse(.versionConflict(stream: stream("a"), expected: .exact(3), actual: 6)),
            ]
        )
    }

    @Test func cachedVersionsOverrideExpectationsAndSkipTheRead() throws {
        var planner = BatchPlanner(requests: [
            request(on("a", .any, event(1))),
            request(on("b", .exact(1), event(2))),
            request(on("c", .noStream, event(3))),
            request(on("b", .exact(2), event(4))),
        ])
        let plan = try #require(planner.startAttempt(cached: ["a": 4, "b": 2, "c": 9, "unrelated": 1]).executed)

        #expect(plan.statement.checkStreams == ["a", "b", "c"])
        #expect(plan.statement.checkVersions == [4, 2, 9])
        #expect(plan.statement.events.streamIDs == ["a", "b"])
        #expect(plan.statement.events.versions == [5, 3])
        expectPlans(
            plan.requests,
            [
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("a", 5)]),
                .refuse(.versionConflict(stream: stream("b"), expected: .exact(1), actual: 2)),
                .refuse(.versionConflict(stream: stream("c"), expected: .noStream, actual: 9)),
                .append(firstOrdinal: 2, eventCount: 1, streams: [version("b", 3)]),
            ]
        )
        #expect(plan.versionsAfter == ["a": 5, "b": 3, "c": 9])
    }

    // MARK: Streams read, not appended (a shipping method's price)

    @Test func aStreamExpectedUnchangedIsCheckedNotAppendedAndRefusesWhenAnEarlierRequestMovedIt() throws {
        var unchanged = request(on("order-1", .noStream, event(1)))
        unchanged.unchanged = [version("method-1", 2)]
        var again = request(on("order-2", .noStream, event(3)))
        again.unchanged = [version("method-1", 2)]
        var planner = BatchPlanner(requests: [unchanged, request(on("method-1", .exact(2), event(2))), again])
        #expect(planner.streams == ["order-1", "method-1", "order-2"])
        // Not cached: the version the decision read is believed (no read); the database checks it with the rest.
        let plan = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(plan.statement.checkStreams == ["order-1", "method-1", "order-2"])
        #expect(plan.statement.checkVersions == [0, 2, 0])
        #expect(plan.statement.events.streamIDs == ["order-1", "method-1"])
        expectPlans(
            plan.requests,
            [
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("order-1", 1)]),
                .append(firstOrdinal: 2, eventCount: 1, streams: [version("method-1", 3)]),
                .refuse(.versionConflict(stream: stream("method-1"), expected: .exact(2), actual: 3)),
            ]
        )
        #expect(plan.versionsAfter == ["order-1": 1, "method-1": 3, "order-2": 0])
    }

    @Test func aStreamExpectedUnchangedIsBelievedAtItsCachedVersionAndAStaleAnswerRedecides() throws {
        var unchanged = request(on("order-1", .noStream, event(1)))
        unchanged.unchanged = [version("method-1", 2)]
        var planner = BatchPlanner(requests: [unchanged])
        let stale = try #require(planner.startAttempt(cached: ["method-1": 4]).executed)
        expectPlans(stale.requests, [.refuse(.versionConflict(stream: stream("method-1"), expected: .exact(2), actual: 4))])

        planner = BatchPlanner(requests: [unchanged])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        // Another process moved the method: the database says so, and the batch is decided again on what it learned.
        #expect(planner.batchAnswered([.stale("method-1", 3)]) == .redecide(learned: ["method-1": 3]))
        let again = try #require(planner.startAttempt(cached: ["method-1": 3]).executed)
        expectPlans(again.requests, [.refuse(.versionConflict(stream: stream("method-1"), expected: .exact(2), actual: 3))])
    }

    @Test func contactsGoWithTheirAcceptedRequestsOnly() throws {
        func contact(_ ref: String) throws -> ContactRow {
            try ContactRow(ref: ref, contact: ShippingContact(name: "J", email: "j@example.com", street: "s", city: "c", state: "CA", zip: "1"))
        }
        var first = request(on("order-1", .noStream, event(1)))
        first.contacts = [try contact("contact-1")]
        var refused = request(on("order-1", .noStream, event(2)))
        refused.contacts = [try contact("contact-2")]
        var planner = BatchPlanner(requests: [first, refused])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(plan.statement.contacts.refs == ["contact-1"])
        #expect(plan.statement.contacts.json == [try contact("contact-1").json])
    }

    @Test func aRedecisionReadsTheCacheAgainInsteadOfLoadingWhatItLearned() throws {
        var planner = BatchPlanner(requests: [request(on("a", .any, event(1)))])
        #expect(planner.startAttempt(cached: [:]) == .loadVersions(["a"]))
        let first = try #require(planner.versionsLoaded(["a": 2]).executed)
        #expect(first.statement.checkVersions == [2])

        #expect(planner.batchAnswered([.stale("a", 3)]) == .redecide(learned: ["a": 3]))
        let second = try #require(planner.startAttempt(cached: ["a": 3]).executed)
        #expect(second.statement.checkVersions == [3])
        #expect(second.statement.events.versions == [4])
    }

    @Test func aRedecisionLoadsAgainAnAnyStreamTheCacheNoLongerHolds() throws {
        var planner = BatchPlanner(requests: [request(on("a", .any, event(1))), request(on("b", .exact(1), event(2)))])
        #expect(planner.startAttempt(cached: [:]) == .loadVersions(["a"]))
        _ = try #require(planner.versionsLoaded(["a": 2]).executed)
        #expect(planner.batchAnswered([.stale("b", 4)]) == .redecide(learned: ["b": 4]))

        // The cache was emptied at its limit meanwhile: `a` is read again, `b` falls back to its expectation.
        #expect(planner.startAttempt(cached: [:]) == .loadVersions(["a"]))
        let plan = try #require(planner.versionsLoaded(["a": 2]).executed)
        #expect(plan.statement.checkStreams == ["a", "b"])
        #expect(plan.statement.checkVersions == [2, 1])
    }

    // MARK: Deciding requests

    @Test func aVersionConflictIsRefusedWithoutConsumingVersionsAndLaterRequestsStillGoThrough() throws {
        var planner = BatchPlanner(requests: [
            request(on("b", .noStream, event(1)), on("a", .exact(1), event(2))),
            request(on("b", .noStream, event(3))),
            request(on("a", .exact(2), event(4))),
        ])
        let plan = try #require(planner.startAttempt(cached: ["a": 2]).executed)

        let conflict = AppendError.versionConflict(stream: stream("a"), expected: .exact(1), actual: 2)
        expectPlans(
            plan.requests,
            [
                .refuse(conflict),
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("b", 1)]),
                .append(firstOrdinal: 2, eventCount: 1, streams: [version("a", 3)]),
            ]
        )
        #expect(plan.statement.checkStreams == ["b", "a"])
        #expect(plan.statement.checkVersions == [0, 2])
        #expect(plan.statement.events.streamIDs == ["b", "a"])
        #expect(plan.statement.events.versions == [1, 3])
        #expect(plan.statement.events.eventIDs == [uuid(3), uuid(4)])

        expectCompletion(
            planner.batchAnswered([.appended(10)]),
            [
                .failure(conflict),
                .success(AppendResult(firstPosition: 10, lastPosition: 10, streams: [version("b", 1)])),
                .success(AppendResult(firstPosition: 11, lastPosition: 11, streams: [version("a", 3)])),
            ],
            committed: ["b": 1, "a": 3]
        )
    }

    @Test func twoRequestsOnOneStreamInOneBatchGetConsecutiveVersions() throws {
        // The `.any` request is not read: an earlier request's expectation already says where `a` stands.
        var planner = BatchPlanner(requests: [
            request(on("a", .noStream, event(1), event(2))), request(on("a", .exact(2), event(3))), request(on("a", .any, event(4))),
        ])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        #expect(plan.statement.checkStreams == ["a"])
        #expect(plan.statement.checkVersions == [0])
        #expect(plan.statement.events.versions == [1, 2, 3, 4])
        #expect(
            plan.requests == [
                .append(firstOrdinal: 1, eventCount: 2, streams: [version("a", 2)]),
                .append(firstOrdinal: 3, eventCount: 1, streams: [version("a", 3)]),
                .append(firstOrdinal: 4, eventCount: 1, streams: [version("a", 4)]),
            ]
        )
        #expect(plan.versionsAfter == ["a": 4])
    }

    @Test func ordinalsMetadataAndKeyColumnsAcrossSeveralRequestsAndStreams() throws {
        let metadata = EventMetadata(correlationID: "pay/1", actor: "operator:k1", command: "PlaceOrder")
        var planner = BatchPlanner(requests: [
            request(
                on("order-1", .noStream, event(1), event(2)),
                on("hold-1", .noStream, event(3, schema: 2)),
                metadata: metadata,
                key: "k-1",
                hash: 1
            ),
            request(on("order-2", .noStream, event(4), event(5), event(6))),
        ])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        let first = [version("order-1", 2), version("hold-1", 1)]
        let second = [version("order-2", 3)]
        #expect(
            plan.requests == [
                .append(firstOrdinal: 1, eventCount: 3, streams: first), .append(firstOrdinal: 4, eventCount: 3, streams: second),
            ]
        )
        var expected = BatchStatement()
        expected.checkStreams = ["order-1", "hold-1", "order-2"]
        expected.checkVersions = [0, 0, 0]
        expected.probeKeys = ["k-1"]
        expected.keys.keys = ["k-1"]
        expected.keys.hashes = [hash(1)]
        expected.keys.first = [1]
        expected.keys.last = [3]
        expected.keys.streams = [#"[{"stream_id":"order-1","version":2},{"stream_id":"hold-1","version":1}]"#]
        expected.events.streamIDs = ["order-1", "order-1", "hold-1", "order-2", "order-2", "order-2"]
        expected.events.versions = [1, 2, 1, 1, 2, 3]
        expected.events.eventIDs = (1...6).map(uuid)
        expected.events.types = Array(repeating: "SampleRecorded", count: 6)
        expected.events.schemaVersions = [1, 1, 2, 1, 1, 1]
        expected.events.data = (1...6).map { #"{"n":\#($0)}"# }
        // Sorted keys, slashes unescaped, and the idempotency key joins the caller's metadata.
        let firstMetadata = #"{"actor":"operator:k1","command":"PlaceOrder","correlation_id":"pay/1","idempotency_key":"k-1"}"#
        expected.events.metadata = [firstMetadata, firstMetadata, firstMetadata, "{}", "{}", "{}"]
        expected.events.effectiveMicros = (1...6).map { epochMicros + Int64($0) }
        #expect(plan.statement == expected)

        expectCompletion(
            planner.batchAnswered([.appended(101)]),
            [
                .success(AppendResult(firstPosition: 101, lastPosition: 103, streams: first)),
                .success(AppendResult(firstPosition: 104, lastPosition: 106, streams: second)),
            ],
            committed: ["order-1": 2, "hold-1": 1, "order-2": 3]
        )
    }

    @Test func projectionRowsKeepTheNewestRowWithTheFirstCreationOrdinal() throws {
        var planner = BatchPlanner(requests: [
            request(
                on("product-1", .noStream, event(1), event(2)),
                on("catalog", .noStream, event(3)),
                projections: [
                    row("inventory", "p1", stream: "product-1", version: 2, json: #"{"v":2}"#),
                    row("listing", "p1", stream: "catalog", version: 1, json: #"{"l":1}"#),
                ]
            ),
            // Refused: its row must not replace anything.
            request(
                on("product-1", .exact(9), event(4)),
                projections: [
                    row("inventory", "p1", stream: "product-1", version: 10, json: #"{"v":10}"#)
                ]
            ),
            request(
                on("product-1", .exact(2), event(5)),
                projections: [
                    row("inventory", "p1", stream: "product-1", version: 3, json: #"{"v":3}"#)
                ]
            ),
        ])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        var expected = BatchStatement.RowColumns()
        expected.projections = ["inventory", "listing"]
        expected.keys = ["p1", "p1"]
        expected.versions = [3, 1]
        expected.json = [#"{"v":3}"#, #"{"l":1}"#]
        expected.ordinals = [1, 3]  // product-1's first event, catalog's first event
        #expect(plan.statement.rows == expected)
        #expect(plan.statement.events.versions == [1, 2, 1, 3])
    }

    @Test func aProjectionRowForAStreamOutsideItsRequestTakesTheRequestsFirstOrdinal() throws {
        // validate() refuses such a request before it reaches a batch; the planner still gives the row a creation point.
        var planner = BatchPlanner(requests: [
            request(on("product-1", .noStream, event(1))),
            request(
                on("product-2", .noStream, event(2), event(3)),
                projections: [
                    row("inventory", "p9", stream: "product-9", version: 1, json: "{}")
                ]
            ),
        ])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(plan.statement.rows.keys == ["p9"])
        #expect(plan.statement.rows.ordinals == [2])
    }

    // MARK: Idempotency

    @Test func aStoredKeyWithTheSameHashIsReplayedAfterTheKeyExistsAnswer() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .noStream, event(1)), key: "k", hash: 7)])
        let first = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(first.statement.probeKeys == ["k"])
        #expect(first.statement.keys.keys == ["k"])

        // The original request appended order-1 and stored its result: both beliefs were wrong.
        #expect(
            planner.batchAnswered([.stale("order-1", 1), .keyExists("k", hash: 7, result: storedResult)])
                == .redecide(learned: ["order-1": 1])
        )

        let second = try #require(planner.startAttempt(cached: ["order-1": 1]).executed)
        let replayed = AppendResult(firstPosition: 5, lastPosition: 5, streams: [version("order-1", 1)], replayed: true)
        #expect(second.requests == [.replay(replayed)])
        var expected = BatchStatement()
        expected.checkStreams = ["order-1"]
        expected.checkVersions = [1]
        #expect(second.statement == expected)  // nothing to append, no key to probe or store

        let done = planner.batchAnswered([])
        expectCompletion(done, [.success(replayed)], committed: ["order-1": 1])
        #expect(done.results?.first.flatMap { try? $0.get().replayed } == true)
    }

    @Test func aStoredKeyWithADifferentHashIsAnIdempotencyConflict() throws {
        var planner = BatchPlanner(requests: [request(on("order-2", .noStream, event(1)), key: "k", hash: 8)])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(planner.batchAnswered([.keyExists("k", hash: 7, result: storedResult)]) == .redecide(learned: [:]))

        let plan = try #require(planner.startAttempt(cached: [:]).executed)
        expectPlans(plan.requests, [.refuse(.idempotencyConflict(key: "k"))])
        #expect(plan.statement.probeKeys == [])
        #expect(plan.statement.events.count == 0)
        expectCompletion(planner.batchAnswered([]), [.failure(.idempotencyConflict(key: "k"))], committed: ["order-2": 0])
    }

    @Test func anUnreadableStoredResultFailsTheBatchWhenItWouldBeReplayed() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .noStream, event(1)), key: "k", hash: 7)])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(planner.batchAnswered([.keyExists("k", hash: 7, result: "not json")]) == .redecide(learned: [:]))

        expectFailure(planner.startAttempt(cached: [:]), .storageFailure, message: #"the stored result of idempotency key "k" is unreadable"#)
    }

    @Test func anUnreadableStoredResultIsNotReadForADifferentRequest() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .noStream, event(1)), key: "k", hash: 8)])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(planner.batchAnswered([.keyExists("k", hash: 7, result: "not json")]) == .redecide(learned: [:]))

        let plan = try #require(planner.startAttempt(cached: [:]).executed)
        expectPlans(plan.requests, [.refuse(.idempotencyConflict(key: "k"))])
    }

    @Test func storedKeysSurviveLaterRedecisionsAndAreNotProbedAgain() throws {
        var planner = BatchPlanner(requests: [
            request(on("order-1", .exact(1), event(1)), key: "k", hash: 7), request(on("order-2", .noStream, event(2)), key: "j", hash: 2),
        ])
        #expect(try #require(planner.startAttempt(cached: [:]).executed).statement.probeKeys == ["k", "j"])
        #expect(planner.batchAnswered([.keyExists("k", hash: 7, result: storedResult)]) == .redecide(learned: [:]))

        let second = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(second.statement.probeKeys == ["j"])
        #expect(planner.batchAnswered([.stale("order-2", 1)]) == .redecide(learned: ["order-2": 1]))

        let third = try #require(planner.startAttempt(cached: ["order-2": 1]).executed)
        #expect(third.statement.probeKeys == ["j"])
        expectPlans(
            third.requests,
            [
                .replay(AppendResult(firstPosition: 5, lastPosition: 5, streams: [version("order-1", 1)], replayed: true)),
                .refuse(.versionConflict(stream: stream("order-2"), expected: .noStream, actual: 1)),
            ]
        )
    }

    @Test func theSameKeyTwiceInOneBatchWithTheSameHashIsSameAsTheFirst() throws {
        var planner = BatchPlanner(requests: [
            request(on("order-1", .noStream, event(1)), key: "k", hash: 1),
            // A retry racing the original: decided by the key before its (now stale) expectation.
            request(on("order-1", .noStream, event(2)), key: "k", hash: 1),
        ])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        #expect(plan.requests == [.append(firstOrdinal: 1, eventCount: 1, streams: [version("order-1", 1)]), .sameAs(0)])
        #expect(plan.statement.probeKeys == ["k"])
        #expect(plan.statement.keys.keys == ["k"])
        #expect(plan.statement.events.eventIDs == [uuid(1)])

        let original = AppendResult(firstPosition: 20, lastPosition: 20, streams: [version("order-1", 1)])
        var replay = original
        replay.replayed = true
        let done = planner.batchAnswered([.appended(20)])
        expectCompletion(done, [.success(original), .success(replay)], committed: ["order-1": 1])
        #expect(done.results?.map { try? $0.get().replayed } == [false, true])
    }

    @Test func theSameKeyTwiceInOneBatchWithADifferentHashIsAConflict() throws {
        var planner = BatchPlanner(requests: [
            request(on("order-1", .noStream, event(1)), key: "k", hash: 1), request(on("order-2", .noStream, event(2)), key: "k", hash: 2),
        ])
        let plan = try #require(planner.startAttempt(cached: [:]).executed)

        expectPlans(
            plan.requests,
            [
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("order-1", 1)]), .refuse(.idempotencyConflict(key: "k")),
            ]
        )
        #expect(plan.statement.keys.hashes == [hash(1)])
        expectCompletion(
            planner.batchAnswered([.appended(3)]),
            [
                .success(AppendResult(firstPosition: 3, lastPosition: 3, streams: [version("order-1", 1)])),
                .failure(.idempotencyConflict(key: "k")),
            ],
            committed: ["order-1": 1, "order-2": 0]
        )
    }

    @Test func aRefusedRequestDoesNotClaimItsKeyForLaterRequests() throws {
        var planner = BatchPlanner(requests: [
            request(on("order-1", .noStream, event(1)), key: "k", hash: 1), request(on("order-1", .exact(1), event(2)), key: "k", hash: 2),
        ])
        let plan = try #require(planner.startAttempt(cached: ["order-1": 1]).executed)

        expectPlans(
            plan.requests,
            [
                .refuse(.versionConflict(stream: stream("order-1"), expected: .noStream, actual: 1)),
                .append(firstOrdinal: 1, eventCount: 1, streams: [version("order-1", 2)]),
            ]
        )
        #expect(plan.statement.probeKeys == ["k"])
        #expect(plan.statement.keys.keys == ["k"])
        #expect(plan.statement.keys.hashes == [hash(2)])
    }

    // MARK: Answers

    @Test func aStaleAnswerRedecidesWithTheCacheUpdatedAndTheNewTruthRefuses() throws {
        var planner = BatchPlanner(requests: [request(on("a", .exact(1), event(1)))])
        _ = try #require(planner.startAttempt(cached: ["a": 1]).executed)

        #expect(planner.batchAnswered([.stale("a", 3)]) == .redecide(learned: ["a": 3]))
        let plan = try #require(planner.startAttempt(cached: ["a": 3]).executed)
        #expect(plan.statement.checkVersions == [3])
        #expect(plan.statement.events.count == 0)

        let conflict = AppendError.versionConflict(stream: stream("a"), expected: .exact(1), actual: 3)
        expectPlans(plan.requests, [.refuse(conflict)])
        expectCompletion(planner.batchAnswered([]), [.failure(conflict)], committed: ["a": 3])
    }

    @Test func aStaleRowWithoutAVersionStillRedecidesButTeachesNothing() throws {
        var planner = BatchPlanner(requests: [request(on("a", .exact(1), event(1)))])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(planner.batchAnswered([BatchAnswerRow(kind: "stale", name: "a")]) == .redecide(learned: [:]))
        #expect(try #require(planner.startAttempt(cached: [:]).executed).statement.checkVersions == [1])
    }

    @Test func aKeyExistsRowWithoutItsRecordStillRedecidesButStoresNothing() throws {
        var planner = BatchPlanner(requests: [request(on("order-1", .noStream, event(1)), key: "k", hash: 7)])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(planner.batchAnswered([BatchAnswerRow(kind: "key_exists", name: "k", requestHash: hash(7))]) == .redecide(learned: [:]))

        let plan = try #require(planner.startAttempt(cached: [:]).executed)
        #expect(plan.statement.probeKeys == ["k"])
        #expect(plan.requests == [.append(firstOrdinal: 1, eventCount: 1, streams: [version("order-1", 1)])])
    }

    @Test func anUnknownAnswerKindIsAStorageFailure() throws {
        var planner = BatchPlanner(requests: [request(on("a", .noStream, event(1)))])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        expectFailure(
            planner.batchAnswered([.appended(1), BatchAnswerRow(kind: "vacuumed")]),
            .storageFailure,
            message: "ledger.append_batch answered vacuumed"
        )
    }

    @Test func aMissingAppendedRowWhenEventsWerePlannedIsAStorageFailure() throws {
        var planner = BatchPlanner(requests: [request(on("a", .noStream, event(1)))])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        expectFailure(planner.batchAnswered([]), .storageFailure, message: "ledger.append_batch did not append")
    }

    @Test func anAppendedRowWithoutAFirstPositionIsAStorageFailure() throws {
        var planner = BatchPlanner(requests: [request(on("a", .noStream, event(1)))])
        _ = try #require(planner.startAttempt(cached: [:]).executed)
        expectFailure(planner.batchAnswered([.appended(nil)]), .storageFailure, message: "ledger.append_batch did not append")
    }

    @Test func anAllRefusedBatchStillVerifiesItsBeliefsAndCompletesWithoutAnAppendedRow() throws {
        var planner = BatchPlanner(requests: [request(on("a", .noStream, event(1))), request(on("b", .exact(2), event(2)))])
        let plan = try #require(planner.startAttempt(cached: ["a": 3, "b": 1]).executed)

        var expected = BatchStatement()
        expected.checkStreams = ["a", "b"]
        expected.checkVersions = [3, 1]
        #expect(plan.statement == expected)
        expectCompletion(
            planner.batchAnswered([]),
            [
                .failure(.versionConflict(stream: stream("a"), expected: .noStream, actual: 3)),
                .failure(.versionConflict(stream: stream("b"), expected: .exact(2), actual: 1)),
            ],
            committed: ["a": 3, "b": 1]
        )
    }

    /// Other writers winning eight times in a row is a version conflict for every request (each caller decides again
    /// in a later batch), not a storage failure: a flash sale across two daemons answered six payments 500 when it was.
    @Test func exceedingMaximumAttemptsIsTheTooContendedFailure() throws {
        var planner = BatchPlanner(requests: [request(on("a", .exact(1), event(1)))])
        var cached: [String: Int64] = [:]
        for attempt in 1...BatchPlanner.maximumAttempts {
            let plan = try #require(planner.startAttempt(cached: cached).executed, "attempt \(attempt)")
            #expect(plan.statement.checkVersions == [Int64(attempt)])
            // Another process keeps writing the stream just before each statement.
            let actual = Int64(attempt + 1)
            #expect(planner.batchAnswered([.stale("a", actual)]) == .redecide(learned: ["a": actual]))
            cached["a"] = actual
        }
        #expect(BatchPlanner.maximumAttempts == 8)
        expectFailure(
            planner.startAttempt(cached: cached),
            .versionConflict,
            message: "the ledger is too contended: 8 attempts found other writers first"
        )
    }

    @Test func attemptsThatLoadVersionsCountTowardsTheLimit() throws {
        var planner = BatchPlanner(requests: [request(on("a", .any, event(1)))])
        for attempt in 1...BatchPlanner.maximumAttempts {
            #expect(planner.startAttempt(cached: [:]) == .loadVersions(["a"]), "attempt \(attempt)")
            _ = try #require(planner.versionsLoaded(["a": 1]).executed)
            #expect(planner.batchAnswered([.stale("a", 2)]) == .redecide(learned: ["a": 2]))
        }
        expectFailure(
            planner.startAttempt(cached: [:]),
            .versionConflict,
            message: "the ledger is too contended: 8 attempts found other writers first"
        )
    }

    // MARK: Events out of order (programming errors in the writer's loop)

    @Test func versionsLoadedWithoutALoadIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            var planner = BatchPlanner(requests: [request(on("a", .noStream, event(1)))])
            _ = planner.startAttempt(cached: [:])
            _ = planner.versionsLoaded(["a": 0])
        }
    }

    @Test func batchAnsweredWhileLoadingIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            var planner = BatchPlanner(requests: [request(on("a", .any, event(1)))])
            _ = planner.startAttempt(cached: [:])
            _ = planner.batchAnswered([])
        }
    }

    @Test func startingAnAttemptAfterCompletionIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            var planner = BatchPlanner(requests: [request(on("a", .noStream, event(1)))])
            _ = planner.startAttempt(cached: [:])
            _ = planner.batchAnswered([.appended(1)])
            _ = planner.startAttempt(cached: [:])
        }
    }
}

// MARK: - Helpers

private let epochMicros: Int64 = 1_800_000_000_000_000

private let storedResult = #"{"first_position": 5, "last_position": 5, "streams": [{"stream_id": "order-1", "version": 1}]}"#

private func uuid(_ n: Int) -> UUID {
    let digits = String(n)
    return UUID(uuidString: "00000000-0000-0000-0000-" + String(repeating: "0", count: 12 - digits.count) + digits)!
}

private func event(_ n: Int, schema: Int32 = 1) -> NewEvent {
    NewEvent(
        eventID: uuid(n),
        type: "SampleRecorded",
        schemaVersion: schema,
        data: #"{"n":\#(n)}"#,
        effectiveAt: Date(epochMicroseconds: epochMicros + Int64(n))
    )
}

private func hash(_ byte: UInt8) -> [UInt8] { Array(repeating: byte, count: 32) }

private func on(_ name: String, _ expected: ExpectedVersion, _ events: NewEvent...) -> StreamAppend {
    StreamAppend(streamID: stream(name), expectedVersion: expected, events: events)
}

private func request(
    _ streams: StreamAppend...,
    metadata: EventMetadata = .init(),
    key: String? = nil,
    hash byte: UInt8 = 1,
    projections: [ProjectionRow] = []
) -> AppendRequest {
    AppendRequest(
        streams: streams,
        metadata: metadata,
        idempotency: key.map { IdempotencyKey(key: $0, requestHash: hash(byte)) },
        projections: projections
    )
}

private func row(_ projection: String, _ key: String, stream name: String, version: Int64, json: String) -> ProjectionRow {
    ProjectionRow(projection: projection, key: key, stream: stream(name), version: version, json: json)
}

private func version(_ name: String, _ version: Int64) -> StreamVersion { StreamVersion(streamID: stream(name), version: version) }

extension BatchAnswerRow {
    fileprivate static func stale(_ stream: String, _ actual: Int64) -> BatchAnswerRow {
        BatchAnswerRow(kind: "stale", name: stream, version: actual)
    }

    fileprivate static func keyExists(_ key: String, hash byte: UInt8, result: String) -> BatchAnswerRow {
        BatchAnswerRow(kind: "key_exists", name: key, requestHash: hash(byte), result: result)
    }

    fileprivate static func appended(_ firstPosition: Int64?) -> BatchAnswerRow {
        BatchAnswerRow(kind: "appended", firstPosition: firstPosition)
    }
}

extension BatchPlanner.Action {
    fileprivate var executed: BatchPlan? {
        if case .execute(let plan) = self { plan } else { nil }
    }

    fileprivate var results: [Result<AppendResult, AppendError>]? {
        if case .complete(let results, _) = self { results } else { nil }
    }
}

/// Everything an ``AppendError`` carries: its `==` compares only the code.
private struct ErrorDetails: Equatable {
    var message: String
    var streamID: StreamID?
    var expectedVersion: ExpectedVersion?
    var actualVersion: Int64?

    init(_ error: AppendError) {
        message = error.message
        streamID = error.streamID
        expectedVersion = error.expectedVersion
        actualVersion = error.actualVersion
    }
}

private func details(_ plans: [RequestPlan]) -> [ErrorDetails?] {
    plans.map { if case .refuse(let error) = $0 { ErrorDetails(error) } else { nil } }
}

private func details(_ results: [Result<AppendResult, AppendError>]) -> [ErrorDetails?] {
    results.map { if case .failure(let error) = $0 { ErrorDetails(error) } else { nil } }
}

/// Plans equal, refusals to the last detail.
private func expectPlans(_ actual: [RequestPlan], _ expected: [RequestPlan], sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(actual == expected, sourceLocation: sourceLocation)
    #expect(details(actual) == details(expected), sourceLocation: sourceLocation)
}

/// The batch completed with these results (failures to the last detail) and these versions for the cache.
private func expectCompletion(
    _ action: BatchPlanner.Action,
    _ results: [Result<AppendResult, AppendError>],
    committed: [String: Int64],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(action == .complete(results, committed: committed), sourceLocation: sourceLocation)
    #expect(action.results.map(details) == details(results), sourceLocation: sourceLocation)
}

private func expectFailure(
    _ action: BatchPlanner.Action,
    _ error: AppendError,
    message: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(action == .fail(error), sourceLocation: sourceLocation)
    if case .fail(let actual) = action { #expect(actual.message == message, sourceLocation: sourceLocation) }
}
