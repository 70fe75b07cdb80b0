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
    /// Rows are read a page at a time, each as one buffer of its stored fields (``WireRow``), and fed
    /// field by field straight into SHA-256 through the one definition of the layout,
    /// ``CanonicalEventLayout/write(position:streamID:streamVersion:eventID:type:schemaVersion:data:metadata:effectiveAtMicros:recordedAtMicros:to:)``
    /// (no events or strings are built), while the next page is already being fetched. The SQL
    /// verifier and the tests (which tamper with every kind of field) check that the two agree.
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
                switch row.check(prev: &prev) {
                case .linked: break
                case .prevHashMismatch:
                    return (.bad(row.position, checked: checked, "prev_hash is not the hash of the previous event"), prev)
                case .hashMismatch:
                    return (.bad(row.position, checked: checked, "hash does not match the event's contents"), prev)
                }
                expected += 1
                checked += 1
            }
        }
        if expected <= to { return (.bad(expected, checked: checked, "event is missing"), prev) }
        return (ChainReport(ok: true, checked: checked), prev)
    }

    /// One row as the verifier reads it: a single bytea in which the database has only put the
    /// stored fields side by side in their binary send forms (no layout, no hashing), so that a
    /// page costs one buffer per row to decode; the canonical layout is assembled here, in Swift:
    ///
    ///     int8 position ‖ int8 stream_version ‖ uuid event_id ‖ int4 schema_version
    ///     ‖ timestamptz effective_at ‖ timestamptz recorded_at ‖ prev_hash (32) ‖ hash (32)
    ///     ‖ int4 n ‖ stream_id (n) ‖ int4 n ‖ type (n) ‖ int4 n ‖ jsonb data (n) ‖ int4 n ‖ jsonb metadata (n)
    ///
    /// The send forms are the layout's own: int8/int4 big-endian, text as UTF-8, uuid as 16 bytes;
    /// jsonb is a version byte (1) and then exactly the text `data::text` gives; timestamptz is
    /// microseconds since 2000-01-01, shifted here to the Unix epoch.
    struct WireRow: Sendable {
        let position: Int64
        let bytes: ByteBuffer

        /// Microseconds between 2000-01-01 (PostgreSQL's timestamp epoch) and 1970-01-01.
        static let postgresEpochMicros: Int64 = 946_684_800_000_000
        static let fixedLength = 8 + 8 + 16 + 4 + 8 + 8 + 32 + 32

        enum Check { case linked, prevHashMismatch, hashMismatch }

        /// Checks the row's links against `prev` and, when they hold, moves `prev` to its hash.
        func check(prev: inout [UInt8]) -> Check {
            bytes.withUnsafeReadableBytes { raw -> Check in
                func int<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
                    T(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
                }
                guard raw.count >= Self.fixedLength + 16 else { return .hashMismatch }
                let prevHash = UnsafeRawBufferPointer(rebasing: raw[52..<84]), hash = UnsafeRawBufferPointer(rebasing: raw[84..<116])
                guard prevHash.elementsEqual(prev) else { return .prevHashMismatch }
                // The four length-prefixed fields.
                var fields: [UnsafeRawBufferPointer] = []
                fields.reserveCapacity(4)
                var offset = Self.fixedLength
                for _ in 0..<4 {
                    guard offset + 4 <= raw.count else { return .hashMismatch }
                    let length = Int(int(offset, Int32.self))
                    guard length >= 0, offset + 4 + length <= raw.count else { return .hashMismatch }
                    fields.append(UnsafeRawBufferPointer(rebasing: raw[(offset + 4)..<(offset + 4 + length)]))
                    offset += 4 + length
                }
                guard offset == raw.count, fields[2].first == 1, fields[3].first == 1 else { return .hashMismatch }
                var hasher = SHA256()
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: raw[52..<84]))
                CanonicalEventLayout.write(
                    position: int(0, Int64.self), streamID: fields[0], streamVersion: int(8, Int64.self),
                    eventID: UnsafeRawBufferPointer(rebasing: raw[16..<32]), type: fields[1], schemaVersion: int(32, Int32.self),
                    data: UnsafeRawBufferPointer(rebasing: fields[2].dropFirst()),
                    metadata: UnsafeRawBufferPointer(rebasing: fields[3].dropFirst()),
                    effectiveAtMicros: int(36, Int64.self) &+ Self.postgresEpochMicros,
                    recordedAtMicros: int(44, Int64.self) &+ Self.postgresEpochMicros) { hasher.update(bufferPointer: $0) }
                let link = hasher.finalize()
                guard link.elementsEqual(hash) else { return .hashMismatch }
                prev = Array(link)
                return .linked
            }
        }
    }

    static func page(_ client: PostgresClient, from: Int64, through: Int64, limit: Int, logger: Logger) async throws -> [WireRow] {
        let rows = try await client.query(
            """
            SELECT e.position, int8send(e.position) || int8send(e.stream_version) || uuid_send(e.event_id)
                   || int4send(e.schema_version) || timestamptz_send(e.effective_at) || timestamptz_send(e.recorded_at)
                   || e.prev_hash || e.hash
                   || int4send(octet_length(e.stream_id)) || textsend(e.stream_id)
                   || int4send(octet_length(e.type)) || textsend(e.type)
                   || int4send(octet_length(j.data)) || j.data || int4send(octet_length(j.metadata)) || j.metadata
            FROM ledger.events e CROSS JOIN LATERAL (SELECT jsonb_send(e.data) AS data, jsonb_send(e.metadata) AS metadata) j
            WHERE e.position >= \(from) AND e.position <= \(through) ORDER BY e.position LIMIT \(Int64(limit))
            """, logger: logger)
        var page: [WireRow] = []
        page.reserveCapacity(limit)
        for try await (position, bytes) in rows.decode((Int64, ByteBuffer).self) {
            page.append(WireRow(position: position, bytes: bytes))
        }
        return page
    }

    /// Checks the log against a signed checkpoint: the chain verifies over [1, position] and the
    /// event at `position` still has `hash`. Catches a truncated tail whose head was moved back
    /// (the rest of the chain is intact) and a history rewritten with recomputed hashes. The same
    /// rules and reasons as `ledger.verify_prefix` (sql/0005).
    public func verifyPrefix(position: Int64, hash: [UInt8], parallelism: Int = 1) async throws -> ChainReport {
        let chain = try await verify(from: 1, to: position, parallelism: parallelism)
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
