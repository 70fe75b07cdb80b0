import Foundation
import LedgerCore

/// The event log in memory, for simulations and tests: ``EventLog`` with `ledger.append_batch`'s rules (sql/0002,
/// sql/0017, sql/0023) and the same hash chain (``ChainLinks``, genesis as sql/0001), so that the same batches
/// committed at the same times end on the same head as on PostgreSQL (InMemoryChainTests compares them).
package actor InMemoryEventLog: EventLog {
    /// A projection row as `ledger.projection_rows` keeps it.
    package struct Row: Sendable, Hashable {
        package var version: Int64
        package var json: String
        package var createdPosition: Int64
    }

    private struct StoredKey: Sendable {
        var hash: [UInt8]
        var result: String
        var positions: ClosedRange<Int64>?
    }

    /// Every event, in position order (`events[i].position == i + 1`).
    package private(set) var events: [RecordedEvent] = []
    /// Positions of each stream's events, in version order.
    private var positions: [String: [Int64]] = [:]
    private var eventIDs: Set<UUID> = []
    private var keys: [String: StoredKey] = [:]
    /// Projection → key → row.
    package private(set) var rows: [String: [String: Row]] = [:]
    /// Shipping contacts by reference.
    package private(set) var contacts: [String: String] = [:]
    private var chain = ChainHead.genesis
    /// The open holds' expiries (`holds` rows whose `state` is `open`), by key: the due-holds read's index, kept as the
    /// rows are written (the open-holds index of sql/0004).
    private var openHoldExpiries: [String: String] = [:]
    /// The orders waiting for their payment's answer (`orders` rows `pending_payment` or `payment_unknown`), by key:
    /// the waiting orders' read, kept as the rows are written.
    private var waitingOrderKeys: Set<String> = []

    package init() {}

    package func commit(_ batch: BatchStatement, recordedAtMicros: Int64) throws -> [BatchAnswerRow] {
        var answer: [BatchAnswerRow] = []
        for (stream, believed) in zip(batch.checkStreams, batch.checkVersions) {
            let actual = Int64(positions[stream]?.count ?? 0)
            if actual != believed {
                answer.append(BatchAnswerRow(kind: "stale", name: stream, version: actual, requestHash: nil, result: nil, firstPosition: nil))
            }
        }
        for key in batch.probeKeys {
            if let stored = keys[key] {
                answer.append(
                    BatchAnswerRow(kind: "key_exists", name: key, version: nil, requestHash: stored.hash, result: stored.result, firstPosition: nil)
                )
            }
        }
        let columns = batch.events
        guard answer.isEmpty, columns.count > 0 else { return answer }
        try Self.check(batch)
        // What the table's constraints refuse (the SQL raises; nothing is appended): a stream version that is not the
        // next, an event id seen before.
        var next: [String: Int64] = [:]
        var seen: Set<UUID> = []
        for i in 0..<columns.count {
            let stream = columns.streamIDs[i]
            let expected = (next[stream] ?? Int64(positions[stream]?.count ?? 0)) + 1
            guard columns.versions[i] == expected, StreamID(stream) != nil else {
                throw AppendError.storageFailure("append_batch: \(stream) version \(columns.versions[i]) is not the next (\(expected))")
            }
            guard !eventIDs.contains(columns.eventIDs[i]), seen.insert(columns.eventIDs[i]).inserted else {
                throw AppendError.storageFailure("append_batch: event id \(columns.eventIDs[i]) is taken")
            }
            next[stream] = expected
        }

        let links = ChainLinks(events: columns, onto: chain, nowMicros: recordedAtMicros)
        let first = chain.position + 1
        for i in 0..<columns.count {
            let position = chain.position + Int64(i + 1)
            events.append(
                RecordedEvent(
                    position: position,
                    streamID: StreamID(columns.streamIDs[i])!,
                    streamVersion: columns.versions[i],
                    eventID: columns.eventIDs[i],
                    type: columns.types[i],
                    schemaVersion: columns.schemaVersions[i],
                    data: columns.data[i],
                    metadata: columns.metadata[i],
                    effectiveAtMicros: columns.effectiveMicros[i],
                    recordedAtMicros: links.recordedAtMicros,
                    prevHash: links.prevHashes[i],
                    hash: links.hashes[i]
                )
            )
            positions[columns.streamIDs[i], default: []].append(position)
            eventIDs.insert(columns.eventIDs[i])
        }
        chain = links.newHead

        let stored = batch.keys
        for i in stored.keys.indices {
            let (firstPosition, lastPosition) = (first + Int64(stored.first[i]) - 1, first + Int64(stored.last[i]) - 1)
            keys[stored.keys[i]] = StoredKey(
                hash: stored.hashes[i],
                result: #"{"first_position": \#(firstPosition), "last_position": \#(lastPosition), "streams": \#(stored.streams[i])}"#,
                positions: firstPosition <= lastPosition ? firstPosition...lastPosition : nil
            )
        }
        let written = batch.rows
        for i in written.keys.indices {
            let row = Row(version: written.versions[i], json: written.json[i], createdPosition: first + Int64(written.ordinals[i]) - 1)
            // ON CONFLICT … DO UPDATE … WHERE the stored version is older: a row never goes back; it keeps its creation.
            if let existing = rows[written.projections[i]]?[written.keys[i]] {
                guard existing.version < row.version else { continue }
                rows[written.projections[i]]![written.keys[i]] = Row(version: row.version, json: row.json, createdPosition: existing.createdPosition)
            } else {
                rows[written.projections[i], default: [:]][written.keys[i]] = row
            }
            try index(written.projections[i], key: written.keys[i], json: row.json)
        }
        for (ref, json) in zip(batch.contacts.refs, batch.contacts.json) {
            guard contacts[ref] == nil else { throw AppendError.storageFailure("append_batch: contact \(ref) exists") }
            contacts[ref] = json
        }
        return [BatchAnswerRow(kind: "appended", name: nil, version: nil, requestHash: nil, result: nil, firstPosition: first)]
    }

    /// The arrays' lengths agree, as `unnest` of the SQL needs them to.
    private static func check(_ batch: BatchStatement) throws {
        let e = batch.events
        let k = batch.keys
        let r = batch.rows
        let lengthsAgree =
            [e.streamIDs.count, e.versions.count, e.types.count, e.schemaVersions.count, e.data.count, e.metadata.count, e.effectiveMicros.count]
            .allSatisfy { $0 == e.count }
            && [k.hashes.count, k.first.count, k.last.count, k.streams.count].allSatisfy { $0 == k.keys.count }
            && [r.projections.count, r.versions.count, r.json.count, r.ordinals.count].allSatisfy { $0 == r.keys.count }
            && batch.contacts.refs.count == batch.contacts.json.count
        guard lengthsAgree else { throw AppendError.storageFailure("append_batch: arrays differ in length") }
    }

    package func versions(of streams: [String]) -> [String: Int64] {
        Dictionary(streams.map { ($0, Int64(positions[$0]?.count ?? 0)) }, uniquingKeysWith: { first, _ in first })
    }

    package func read(_ streams: [StreamID], after versions: [StreamID: Int64]) -> [RecordedEvent] {
        var found: [Int64] = []
        for stream in Set(streams) {
            let all = positions[stream.rawValue] ?? []
            found += all.dropFirst(Int(max(0, versions[stream] ?? 0)))
        }
        return found.sorted().map { events[Int($0 - 1)] }
    }

    package func head() -> ChainHead { chain }

    /// The events after `position`, in position order (a simulation's checks read each new event once).
    package func events(after position: Int64) -> [RecordedEvent] { Array(events[Int(max(0, min(position, Int64(events.count))))...]) }

    /// The fields of a `holds` row the lapse rule reads (`ledger.hold_lapsed`, sql/0010).
    private struct HoldRowLapse: Decodable {
        var state: String
        var expires_at: String
    }

    /// The field of an `orders` row the waiting orders' read compares.
    private struct OrderRowStatus: Decodable { var status: String }

    /// Keeps the indexes of the reads below as a row is stored (the row as it now stands).
    private func index(_ projection: String, key: String, json: String) throws {
        switch projection {
        case HoldReadModel.projection:
            let row = try JSONDecoder().decode(HoldRowLapse.self, from: Data(json.utf8))
            openHoldExpiries[key] = row.state == "open" ? row.expires_at : nil
        case OrderReadModel.projection:
            let status = try JSONDecoder().decode(OrderRowStatus.self, from: Data(json.utf8)).status
            if status == OrderStatus.pendingPayment.rawValue || status == OrderStatus.paymentUnknown.rawValue {
                waitingOrderKeys.insert(key)
            } else {
                waitingOrderKeys.remove(key)
            }
        default: break
        }
    }
}

/// The idempotency records on the log in memory, as `ledger.idempotency_keys` keeps them.
extension InMemoryEventLog: IdempotencyRecords {
    package func requestHash(forKey key: String) -> [UInt8]? { keys[key]?.hash }

    package func positions(forKey key: String) -> ClosedRange<Int64>? { keys[key]?.positions }

    package func storedResult(forKey key: String) throws -> AppendResult? {
        try keys[key].map { try AppendResult.replaying(stored: $0.result, key: key) }
    }
}

/// The due holds on the log in memory: the `holds` rows by the rule `ProjectionHoldReader` states in SQL
/// (`ledger.hold_lapsed`: still `open`, `expires_at` at or before the instant, as read-model text), by (expiry, key).
extension InMemoryEventLog: DueHolds {
    package func dueHolds(now: Date, limit: Int, after cursor: DueHoldCursor?) -> (ids: [OrderID], next: DueHoldCursor?) {
        let at = OrderReadModel.timestamp(now)
        let after = cursor ?? DueHoldCursor(expiresAt: "", key: "")
        let page = openHoldExpiries.filter { key, expiresAt in
            expiresAt <= at && (expiresAt > after.expiresAt || (expiresAt == after.expiresAt && key > after.key))
        }
        .sorted { ($0.value, $0.key) < ($1.value, $1.key) }
        .prefix(limit)
        let next = page.last.map { DueHoldCursor(expiresAt: $0.value, key: $0.key) } ?? cursor
        return (page.compactMap { OrderID($0.key) }, next)
    }
}

/// The catalog's names on the log in memory: a read-model row's text field, as `ProjectionStorefrontReader` selects it
/// (the first row created).
extension InMemoryEventLog: CatalogNames {
    package func key(in projection: String, where field: String, equals value: String) throws -> String? {
        for (key, row) in (rows[projection] ?? [:]).sorted(by: { $0.value.createdPosition < $1.value.createdPosition }) {
            let object = try JSONSerialization.jsonObject(with: Data(row.json.utf8)) as? [String: Any]
            if object?[field] as? String == value { return key }
        }
        return nil
    }
}

/// The orders recovery looks at on the log in memory: `orders` rows pending payment or unknown, oldest first, as
/// `ProjectionOrderReader` selects them.
extension InMemoryEventLog: WaitingOrders {
    package func waitingOrders(limit: Int) -> [OrderID] {
        let orders = rows[OrderReadModel.projection] ?? [:]
        let waiting = waitingOrderKeys.map { (orders[$0]?.createdPosition ?? 0, $0) }
        return waiting.sorted { $0 < $1 }.prefix(limit).compactMap { OrderID($0.1) }
    }
}

/// The runner's reads on the log in memory, as the event store answers them in SQL.
extension InMemoryEventLog: StreamReads {
    package func readStream(_ streamID: StreamID) -> [RecordedEvent] { read([streamID], after: [:]) }

    package func readStream(_ streamID: StreamID, after version: Int64) -> [RecordedEvent] { read([streamID], after: [streamID: version]) }

    package func readStreams(_ streams: [StreamID]) -> [RecordedEvent] { read(streams, after: [:]) }

    package func readStreams(_ streams: [StreamID], through position: Int64) -> [RecordedEvent] {
        read(streams, after: [:]).filter { $0.position <= position }
    }
}

/// The dispute index on the log in memory: the dispute streams' events, as `DisputeReader` selects them in SQL.
extension InMemoryEventLog: DisputeIndex {
    package func allDisputeEvents() -> [RecordedEvent] { events.filter { $0.streamID.rawValue.hasPrefix("dispute-") } }
}
