import Crypto
import LedgerCore
import Logging
import PostgresNIO

/// Verifies the hash chain, in Swift (independently of the database's own function) or by asking
/// the database to run `ledger.verify_chain`. Both follow the same rules and report the same
/// first bad position: a missing position, a `prev_hash` that is not the previous hash, a hash
/// that does not match the event's canonical bytes, or a head that disagrees with the last event.
public struct ChainVerifier: Sendable {
    private let store: EventStore
    private let client: PostgresClient
    private let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.store = EventStore(client: client, logger: logger)
        self.logger = logger
    }

    /// SHA-256(prev ‖ canonical bytes), the chain link of one event.
    public static func linkHash(prevHash: [UInt8], event: RecordedEvent) -> [UInt8] {
        Array(SHA256.hash(data: CanonicalEventLayout.hashInput(prevHash: prevHash, event: event)))
    }

    /// Recomputes the chain over [from, to] (to defaults to the head) in Swift.
    ///
    /// Rows are read a page at a time in their binary wire form and fed, field by field, straight
    /// into SHA-256 through ``CanonicalEventLayout/write(position:streamID:streamVersion:eventID:type:schemaVersion:data:metadata:effectiveAtMicros:recordedAtMicros:to:)``
    /// (no events, strings or arrays are built), while the next page is already being fetched.
    /// The wire forms are the layout's own: int8/int4 big-endian, text as UTF-8, uuid as 16 bytes;
    /// jsonb is a version byte (1) and then exactly the text `data::text` gives; timestamptz is
    /// microseconds since 2000-01-01, shifted here to the Unix epoch. The SQL verifier and the
    /// tests (which tamper with each of these fields) check that the two agree.
    ///
    /// `parallelism` > 1 splits the range into that many contiguous parts verified at once on as many
    /// connections (each part starts from the stored hash before it, and the part before checks
    /// that stored hash against its own recomputation, so the links between parts are checked too);
    /// the first bad position is the smallest any part reports. The database converts jsonb to
    /// text for every row, so one connection is bound by one server core.
    /// Parts are at least `minimumPartSize` events.
    public func verify(from: Int64 = 1, to: Int64? = nil, pageSize: Int = 10_000, parallelism: Int = 1,
                       minimumPartSize: Int64 = 50_000) async throws -> ChainReport {
        let from = max(from, 1)
        let head = try await store.head()
        let to = min(to ?? head.position, head.position)
        guard from <= to else { return ChainReport(ok: true, checked: 0) }
        let count = to - from + 1
        let parts = max(1, min(Int64(parallelism), count / max(1, minimumPartSize)))
        var ranges: [(Int64, Int64)] = []
        for i in 0..<parts {
            ranges.append((from + count * i / parts, from + count * (i + 1) / parts - 1))
        }
        let outcomes = try await withThrowingTaskGroup(of: (Int, ChainReport, [UInt8]?).self) { group in
            for (i, range) in ranges.enumerated() {
                group.addTask { (i, try await self.verifyRange(from: range.0, to: range.1, pageSize: pageSize).0, nil) }
            }
            var outcomes: [(Int, ChainReport, [UInt8]?)] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes.sorted { $0.0 < $1.0 }
        }
        if let bad = outcomes.map(\.1).filter({ !$0.ok }).min(by: { ($0.firstBadPosition ?? 0) < ($1.firstBadPosition ?? 0) }) {
            let position = bad.firstBadPosition ?? from
            return .bad(position, checked: max(0, position - from), bad.reason ?? "")
        }
        if to == head.position, try await store.hash(at: to) != head.hash {
            return .bad(head.position, checked: count, "ledger head does not match the last event")
        }
        return ChainReport(ok: true, checked: count)
    }

    /// Verifies [from, to] (both ≤ the head) starting from the stored hash before `from`; returns
    /// the report and the last recomputed hash.
    func verifyRange(from: Int64, to: Int64, pageSize: Int) async throws -> (ChainReport, [UInt8]) {
        var prev: [UInt8]
        if from == 1 {
            prev = CanonicalEventLayout.genesisHash
        } else if let hash = try await store.hash(at: from - 1) {
            prev = hash
        } else {
            return (.bad(from - 1, checked: 0, "event is missing"), [])
        }

        var expected = from
        var checked: Int64 = 0
        let client = self.client, logger = self.logger
        var next: Task<[WireRow], any Error>? = Task { try await Self.page(client, from: from, through: to, limit: pageSize, logger: logger) }
        defer { next?.cancel() }
        while let fetching = next {
            let page = try await fetching.value
            next = nil
            if page.count == pageSize, let last = page.last, last.position < to {
                next = Task { try await Self.page(client, from: last.position + 1, through: to, limit: pageSize, logger: logger) }
            }
            for row in page {
                if row.position != expected { return (.bad(expected, checked: checked, "event is missing"), prev) }
                guard row.prevHash.readableBytesView.elementsEqual(prev) else {
                    return (.bad(row.position, checked: checked, "prev_hash is not the hash of the previous event"), prev)
                }
                guard let link = row.linkHash(prev: prev), row.hash.readableBytesView.elementsEqual(link) else {
                    return (.bad(row.position, checked: checked, "hash does not match the event's contents"), prev)
                }
                prev = link
                expected += 1
                checked += 1
            }
        }
        if expected <= to { return (.bad(expected, checked: checked, "event is missing"), prev) }
        return (ChainReport(ok: true, checked: checked), prev)
    }

    /// One row as the wire carries it (binary format), for ``verifyRange(from:to:pageSize:)``.
    struct WireRow: Sendable {
        let position: Int64
        let streamID, streamVersion, eventID, type, schemaVersion, data, metadata, effectiveAt, recordedAt, prevHash, hash: ByteBuffer

        /// Microseconds between 2000-01-01 (PostgreSQL's timestamp epoch) and 1970-01-01.
        static let postgresEpochMicros: Int64 = 946_684_800_000_000

        /// SHA-256(prev ‖ canonical bytes), or nil when a field does not have its wire shape.
        func linkHash(prev: [UInt8]) -> [UInt8]? {
            guard let version = streamVersion.getInteger(at: streamVersion.readerIndex, as: Int64.self),
                  let schema = schemaVersion.getInteger(at: schemaVersion.readerIndex, as: Int32.self),
                  let effective = effectiveAt.getInteger(at: effectiveAt.readerIndex, as: Int64.self),
                  let recorded = recordedAt.getInteger(at: recordedAt.readerIndex, as: Int64.self),
                  eventID.readableBytes == 16, data.readableBytes >= 1, metadata.readableBytes >= 1,
                  data.getInteger(at: data.readerIndex, as: UInt8.self) == 1,
                  metadata.getInteger(at: metadata.readerIndex, as: UInt8.self) == 1 else { return nil }
            var hasher = SHA256()
            prev.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            streamID.withUnsafeReadableBytes { stream in
                eventID.withUnsafeReadableBytes { id in
                    type.withUnsafeReadableBytes { type in
                        data.withUnsafeReadableBytes { data in
                            metadata.withUnsafeReadableBytes { metadata in
                                CanonicalEventLayout.write(
                                    position: position, streamID: stream, streamVersion: version, eventID: id, type: type,
                                    schemaVersion: schema, data: UnsafeRawBufferPointer(rebasing: data.dropFirst()),
                                    metadata: UnsafeRawBufferPointer(rebasing: metadata.dropFirst()),
                                    effectiveAtMicros: effective &+ Self.postgresEpochMicros,
                                    recordedAtMicros: recorded &+ Self.postgresEpochMicros) { hasher.update(bufferPointer: $0) }
                            }
                        }
                    }
                }
            }
            return Array(hasher.finalize())
        }
    }

    static func page(_ client: PostgresClient, from: Int64, through: Int64, limit: Int, logger: Logger) async throws -> [WireRow] {
        let rows = try await client.query(
            """
            SELECT position, stream_id, stream_version, event_id, type, schema_version, data, metadata, effective_at,
                   recorded_at, prev_hash, hash
            FROM ledger.events WHERE position >= \(from) AND position <= \(through) ORDER BY position LIMIT \(Int64(limit))
            """, logger: logger)
        var page: [WireRow] = []
        page.reserveCapacity(limit)
        for try await (position, stream, version, id, type, schema, data, metadata, effective, recorded, prev, hash) in rows.decode(
            (Int64, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer, ByteBuffer,
             ByteBuffer, ByteBuffer).self) {
            page.append(WireRow(position: position, streamID: stream, streamVersion: version, eventID: id, type: type,
                                schemaVersion: schema, data: data, metadata: metadata, effectiveAt: effective, recordedAt: recorded,
                                prevHash: prev, hash: hash))
        }
        return page
    }

    /// Checks the log against a signed checkpoint: the chain verifies over [1, position] and the
    /// event at `position` still has `hash`. Catches a truncated tail whose head was moved back
    /// (the rest of the chain is intact) and a history rewritten with recomputed hashes. The same
    /// rules and reasons as `ledger.verify_prefix` (sql/0005).
    public func verifyPrefix(position: Int64, hash: [UInt8]) async throws -> ChainReport {
        let chain = try await verify(from: 1, to: position)
        guard chain.ok else { return chain }
        if chain.checked < position {
            let head = try await store.head().position
            return .bad(chain.checked + 1, checked: chain.checked,
                        "the log ends at position \(head) but the checkpoint covers \(position): events were removed")
        }
        guard try await store.hash(at: position) == hash else {
            return .bad(position, checked: chain.checked,
                        "the event at the checkpoint's position does not have the signed hash: history up to it was rewritten")
        }
        return chain
    }

    /// The same check by the database's own function, `ledger.verify_prefix(position, hash)`.
    public func verifyPrefixInDatabase(position: Int64, hash: [UInt8]) async throws -> ChainReport {
        let rows = try await client.query(
            "SELECT ok, checked, first_bad_position, reason FROM ledger.verify_prefix(\(position), \(ByteBuffer(bytes: hash)))",
            logger: logger)
        for try await (ok, checked, bad, reason) in rows.decode((Bool, Int64, Int64?, String?).self) {
            return ChainReport(ok: ok, checked: checked, firstBadPosition: bad, reason: reason)
        }
        throw AppendError.storageFailure("ledger.verify_prefix returned no row")
    }

    /// Runs the database's own verifier, `ledger.verify_chain(from, to)`.
    public func verifyInDatabase(from: Int64 = 1, to: Int64? = nil) async throws -> ChainReport {
        let rows = try await client.query(
            "SELECT ok, checked, first_bad_position, reason FROM ledger.verify_chain(\(from), \(to))", logger: logger)
        for try await (ok, checked, bad, reason) in rows.decode((Bool, Int64, Int64?, String?).self) {
            return ChainReport(ok: ok, checked: checked, firstBadPosition: bad, reason: reason)
        }
        throw AppendError.storageFailure("ledger.verify_chain returned no row")
    }
}
