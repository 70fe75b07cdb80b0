import Crypto
import LedgerCore
import LedgerEngine
import Logging
import PostgresNIO

/// Verifies the hash chain, in Swift (independently of the database's own function) or by asking
/// the database to run `ledger.verify_chain`. Both check every stored event (not only those up to
/// `ledger.head`, which the app role may update), follow the same rules and report the same first
/// bad position: a missing position, a `prev_hash` that is not the previous hash, a hash that does
/// not match the event's canonical bytes, then a head that disagrees with the stored event at its
/// position, then an event stored beyond the head (sql/0011).
public struct ChainVerifier: Sendable {
    private let store: EventStore
    private let client: DatabaseClient
    private let logger: Logger

    public init(client: DatabaseClient, logger: Logger) {
        self.client = client
        self.store = EventStore(client: client, logger: logger)
        self.logger = logger
    }

    /// SHA-256(prev ‖ canonical bytes), the chain link of one event.
    public static func linkHash(prevHash: [UInt8], event: RecordedEvent) -> [UInt8] {
        Array(SHA256.hash(data: CanonicalEventLayout.hashInput(prevHash: prevHash, event: event)))
    }

    /// Recomputes the chain over [from, to] in Swift. `to` defaults to the last stored event (or the
    /// head, when the head claims more than is stored) and is capped there: events beyond the head
    /// are checked too and reported as tampering, since the append moves the head in the statement
    /// that inserts.
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
    /// the first bad position is the smallest any part reports. The database frames each row (and,
    /// without the jsonb constraint, parses its texts), so one connection is bound by one server core.
    /// Parts are at least `minimumPartSize` events.
    public func verify(
        from: Int64 = 1,
        to: Int64? = nil,
        pageSize: Int = 10_000,
        parallelism: Int = 1,
        minimumPartSize: Int64 = 50_000
    ) async throws -> ChainReport {
        let from = max(from, 1)
        let (head, lastStored) = try await Self.bounds(client, logger: logger)
        let end = max(head.position, lastStored)
        let to = min(to ?? end, end)
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
        if (from...to).contains(head.position), try await store.hash(at: head.position) != head.hash {
            return .bad(head.position, checked: count, "ledger head does not match the last event")
        }
        if to > head.position {
            return .bad(head.position + 1, checked: count, "event stored beyond the ledger head: the head was moved back")
        }
        return ChainReport(ok: true, checked: count)
    }

    /// The head and the last stored position, read in one statement (one snapshot), so that an
    /// append committing meanwhile cannot make a stored event look as if it lay beyond the head.
    static func bounds(_ client: DatabaseClient, logger: Logger) async throws -> (head: (position: Int64, hash: [UInt8]), lastStored: Int64) {
        let rows = try await client.query(
            "SELECT h.position, h.hash, (SELECT coalesce(max(e.position), 0) FROM ledger.events e) FROM ledger.head h WHERE h.singleton",
            logger: logger
        )
        for try await (position, hash, last) in rows.decode((Int64, ByteBuffer, Int64).self) {
            return ((position, Array(hash.readableBytesView)), last)
        }
        throw AppendError.storageFailure("the ledger head row is missing")
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
        let client = self.client
        let logger = self.logger
        let guarded = try await Self.jsonbGuarded(client, logger: logger)
        var next: Task<WirePage, any Error>? = Task {
            try await Self.page(client, from: from, through: to, limit: pageSize, jsonbGuarded: guarded, logger: logger)
        }
        defer { next?.cancel() }
        while let fetching = next {
            let page = try await fetching.value
            next = nil
            if page.count == pageSize, page.last < to {
                next = Task {
                    try await Self.page(client, from: page.last + 1, through: to, limit: pageSize, jsonbGuarded: guarded, logger: logger)
                }
            }
            let bad: ChainReport? = page.bytes.withUnsafeReadableBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let (position, outcome, end) = WireRow.check(raw, at: offset, prev: &prev)
                    if position != expected { return .bad(expected, checked: checked, "event is missing") }
                    switch outcome {
                    case .linked: break
                    case .prevHashMismatch:
                        return .bad(position, checked: checked, "prev_hash is not the hash of the previous event")
                    case .hashMismatch:
                        return .bad(position, checked: checked, "hash does not match the event's contents")
                    case .jsonbMismatch:
                        return .bad(position, checked: checked, "the stored jsonb is not the hashed text")
                    }
                    offset = end
                    expected += 1
                    checked += 1
                }
                return nil
            }
            if let bad { return (bad, prev) }
        }
        if expected <= to { return (.bad(expected, checked: checked, "event is missing"), prev) }
        return (ChainReport(ok: true, checked: checked), prev)
    }

    /// A page of rows as the verifier reads it: one buffer holding every row's stored fields side by
    /// side in their binary send forms, framed by the database (no layout, no hashing there), so a
    /// page of thousands of rows costs one value to decode. Per row:
    ///
    ///     int8 position ‖ int8 stream_version ‖ uuid event_id ‖ int4 schema_version
    ///     ‖ timestamptz effective_at ‖ timestamptz recorded_at
    ///     ‖ int4 n ‖ prev_hash (n) ‖ int4 n ‖ hash (n) ‖ int4 n ‖ stream_id (n) ‖ int4 n ‖ type (n)
    ///     ‖ int4 n ‖ data_text (n) ‖ int4 n ‖ metadata_text (n) ‖ 1 byte: the jsonb is the text (1) or not (0;
    ///       compared only when the constraint that guarantees it is gone, see ``jsonbGuarded(_:logger:)``)
    ///
    /// (every variable field carries its length, so even a row whose hash a superuser shortened
    /// behind a dropped constraint is framed right and reported at its own position). The send forms are the layout's own: int8/int4 big-endian, text as UTF-8, uuid as 16 bytes;
    /// the JSON fields are the stored texts the hash covers (sql/0017), and the database says whether
    /// each row's jsonb is what its texts parse to (the one check done there); timestamptz is
    /// microseconds since 2000-01-01, shifted here to the Unix epoch. The canonical layout is
    /// assembled in Swift (``WireRow``), independently of the SQL verifier's.
    struct WirePage: Sendable {
        let count: Int
        let last: Int64
        let bytes: ByteBuffer
    }

    /// One row of a ``WirePage``, checked in place.
    enum WireRow {
        /// Microseconds between 2000-01-01 (PostgreSQL's timestamp epoch) and 1970-01-01.
        static let postgresEpochMicros: Int64 = 946_684_800_000_000
        static let fixedLength = 8 + 8 + 16 + 4 + 8 + 8

        enum Check { case linked, prevHashMismatch, hashMismatch, jsonbMismatch }

        /// Checks the row at `start` against `prev` and, when its links hold, moves `prev` to its
        /// hash. Returns its position (−1 when the frame is cut short), the outcome and where the
        /// next row starts.
        static func check(_ raw: UnsafeRawBufferPointer, at start: Int, prev: inout [UInt8]) -> (Int64, Check, Int) {
            func int<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
                T(bigEndian: raw.loadUnaligned(fromByteOffset: start + offset, as: T.self))
            }
            func slice(_ lower: Int, _ upper: Int) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: raw[(start + lower)..<(start + upper)])
            }
            guard raw.count - start >= fixedLength + 24 else { return (-1, .hashMismatch, raw.count) }
            let position = int(0, Int64.self)
            // The six length-prefixed fields: prev_hash, hash, stream_id, type, data, metadata.
            var fields:
                (
                    UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer,
                    UnsafeRawBufferPointer, UnsafeRawBufferPointer
                ) = (
                    .init(start: nil, count: 0), .init(start: nil, count: 0),
                    .init(start: nil, count: 0), .init(start: nil, count: 0),
                    .init(start: nil, count: 0), .init(start: nil, count: 0)
                )
            var offset = fixedLength
            for i in 0..<6 {
                guard start + offset + 4 <= raw.count else { return (position, .hashMismatch, raw.count) }
                let length = Int(int(offset, Int32.self))
                guard length >= 0, start + offset + 4 + length <= raw.count else { return (position, .hashMismatch, raw.count) }
                let field = slice(offset + 4, offset + 4 + length)
                switch i {
                case 0: fields.0 = field
                case 1: fields.1 = field
                case 2: fields.2 = field
                case 3: fields.3 = field
                case 4: fields.4 = field
                default: fields.5 = field
                }
                offset += 4 + length
            }
            guard start + offset + 1 <= raw.count else { return (position, .hashMismatch, raw.count) }
            let jsonbIsText = raw[start + offset] == 1
            let end = start + offset + 1
            let (prevHash, hash, stream, type, data, metadata) = fields
            guard prevHash.elementsEqual(prev) else { return (position, .prevHashMismatch, end) }
            var hasher = SHA256()
            hasher.update(bufferPointer: prevHash)
            CanonicalEventLayout.write(
                position: position,
                streamID: stream,
                streamVersion: int(8, Int64.self),
                eventID: slice(16, 32),
                type: type,
                schemaVersion: int(32, Int32.self),
                data: data,
                metadata: metadata,
                effectiveAtMicros: int(36, Int64.self) &+ postgresEpochMicros,
                recordedAtMicros: int(44, Int64.self) &+ postgresEpochMicros
            ) { hasher.update(bufferPointer: $0) }
            let link = hasher.finalize()
            guard link.elementsEqual(hash) else { return (position, .hashMismatch, end) }
            guard jsonbIsText else { return (position, .jsonbMismatch, end) }
            prev = Array(link)
            return (position, .linked, end)
        }
    }

    /// Whether PostgreSQL itself guarantees that every row's jsonb is the parse of its hashed text: the
    /// CHECK constraint of sql/0017 stands, validated and as written (`ledger.events_jsonb_guarded()`).
    /// Then the pages skip that comparison; otherwise (the constraint was dropped to edit a jsonb) the
    /// database compares every row and the verifier names the first that differs.
    static func jsonbGuarded(_ client: DatabaseClient, logger: Logger) async throws -> Bool {
        for try await guarded in try await client.query("SELECT ledger.events_jsonb_guarded()", logger: logger).decode(Bool.self) {
            return guarded
        }
        return false
    }

    static func page(
        _ client: DatabaseClient,
        from: Int64,
        through: Int64,
        limit: Int,
        jsonbGuarded: Bool,
        logger: Logger
    ) async throws -> WirePage {
        let rows = try await client.query(
            """
            SELECT count(*), coalesce(max(p.position), 0), coalesce(string_agg(p.framed, ''::bytea ORDER BY p.position), ''::bytea)
            FROM (
                SELECT e.position, int8send(e.position) || int8send(e.stream_version) || uuid_send(e.event_id)
                       || int4send(e.schema_version) || timestamptz_send(e.effective_at) || timestamptz_send(e.recorded_at)
                       || int4send(octet_length(e.prev_hash)) || e.prev_hash || int4send(octet_length(e.hash)) || e.hash
                       || int4send(octet_length(e.stream_id)) || textsend(e.stream_id)
                       || int4send(octet_length(e.type)) || textsend(e.type)
                       || int4send(octet_length(e.data_text)) || textsend(e.data_text)
                       || int4send(octet_length(e.metadata_text)) || textsend(e.metadata_text)
                       || CASE WHEN \(jsonbGuarded) OR (e.data_text::jsonb = e.data AND e.metadata_text::jsonb = e.metadata)
                               THEN '\\x01'::bytea ELSE '\\x00'::bytea END AS framed
                FROM ledger.events e
                WHERE e.position >= \(from) AND e.position <= \(through) ORDER BY e.position LIMIT \(Int64(limit))
            ) p
            """,
            logger: logger
        )
        for try await (count, last, bytes) in rows.decode((Int64, Int64, ByteBuffer).self) {
            return WirePage(count: Int(count), last: last, bytes: bytes)
        }
        return WirePage(count: 0, last: 0, bytes: ByteBuffer())
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
            return .bad(
                chain.checked + 1,
                checked: chain.checked,
                "the log ends at position \(head) but the checkpoint covers \(position): events were removed"
            )
        }
        guard try await store.hash(at: position) == hash else {
            return .bad(
                position,
                checked: chain.checked,
                "the event at the checkpoint's position does not have the signed hash: history up to it was rewritten"
            )
        }
        return chain
    }

    /// The same check by the database's own function, `ledger.verify_prefix(position, hash)`.
    public func verifyPrefixInDatabase(position: Int64, hash: [UInt8]) async throws -> ChainReport {
        let rows = try await client.query(
            "SELECT ok, checked, first_bad_position, reason FROM ledger.verify_prefix(\(position), \(ByteBuffer(bytes: hash)))",
            logger: logger
        )
        for try await (ok, checked, bad, reason) in rows.decode((Bool, Int64, Int64?, String?).self) {
            return ChainReport(ok: ok, checked: checked, firstBadPosition: bad, reason: reason)
        }
        throw AppendError.storageFailure("ledger.verify_prefix returned no row")
    }

    /// Runs the database's own verifier, `ledger.verify_chain(from, to)`.
    public func verifyInDatabase(from: Int64 = 1, to: Int64? = nil) async throws -> ChainReport {
        let rows = try await client.query(
            "SELECT ok, checked, first_bad_position, reason FROM ledger.verify_chain(\(from), \(to))",
            logger: logger
        )
        for try await (ok, checked, bad, reason) in rows.decode((Bool, Int64, Int64?, String?).self) {
            return ChainReport(ok: ok, checked: checked, firstBadPosition: bad, reason: reason)
        }
        throw AppendError.storageFailure("ledger.verify_chain returned no row")
    }
}
