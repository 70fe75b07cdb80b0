import Crypto
import LedgerAcquirer
import LedgerCore
import LedgerPostgres
import Logging
import PostgresNIO

import struct Foundation.Data
import struct Foundation.Date

/// All SQL of the acquirer service (schema `acquirer`, sql/acquirer/): its journal, its model row and
/// its uploaded batch pages. The acquirer is another system than the ledger, so its storage lives with
/// it rather than in LedgerPostgres.
struct AcquirerJournal: Sendable {
    let client: DatabaseClient
    let logger: Logger

    /// One journal row as written.
    struct Row: Sendable {
        var seq: Int64
        var atMicros: Int64
        var key: String?
        var command: String
        var status: Int
        var response: String
    }

    /// The seed and configuration the journal was started with; records them when there is none yet.
    func model(seed: UInt64, configuration: AcquirerModelConfiguration) async throws -> (seed: UInt64, configuration: AcquirerModelConfiguration) {
        let text = try LedgerJSON.string(configuration)
        try await client.query(
            "INSERT INTO acquirer.model (seed, configuration) VALUES (\(String(seed)), \(text)) ON CONFLICT (singleton) DO NOTHING",
            logger: logger
        )
        let rows = try await client.query("SELECT seed, configuration FROM acquirer.model", logger: logger)
        for try await (storedSeed, storedConfiguration) in rows.decode((String, String).self) {
            guard let parsed = UInt64(storedSeed) else { throw JournalError("acquirer.model has an unreadable seed") }
            return (parsed, try LedgerJSON.decode(AcquirerModelConfiguration.self, from: storedConfiguration))
        }
        throw JournalError("acquirer.model is empty")
    }

    /// Up to `limit` journal rows after `start`, in order: sequence number, time, command.
    func commands(after start: Int64, limit: Int) async throws -> [(seq: Int64, at: Date, command: JournalCommand)] {
        let rows = try await client.query(
            "SELECT seq, at_us, command FROM acquirer.journal WHERE seq > \(start) ORDER BY seq LIMIT \(limit)",
            logger: logger
        )
        var commands: [(seq: Int64, at: Date, command: JournalCommand)] = []
        for try await (seq, at, text) in rows.decode((Int64, Int64, String).self) {
            commands.append((seq, Date(epochMicroseconds: at), try LedgerJSON.decode(JournalCommand.self, from: text)))
        }
        return commands
    }

    /// Bytes per stored snapshot part.
    static let snapshotPartBytes = 8 << 20

    /// Stores a snapshot of `state` (the state after journal row `seq`) in one transaction: encoded a
    /// part at a time, each part inserted as it is made, the header with the part count and digest last
    /// (acquirer 0003 defers the parts' reference to it to COMMIT); then deletes the older snapshots.
    /// Memory holds one part, never the whole encoding.
    func storeSnapshot(of state: AcquirerModelState, seq: Int64) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            var encoder = SnapshotEncoder(state)
            var hasher = SHA256()
            var parts = 0
            while let part = try encoder.next(maximumBytes: Self.snapshotPartBytes) {
                hasher.update(data: part)
                try await connection.query(
                    "INSERT INTO acquirer.snapshot_parts (seq, part, data) VALUES (\(seq), \(parts), \(ByteBuffer(bytes: part))) ON CONFLICT DO NOTHING",
                    logger: logger
                )
                parts += 1
            }
            let digest = ByteBuffer(bytes: hasher.finalize())
            try await connection.query(
                "INSERT INTO acquirer.snapshots (seq, parts, sha256) VALUES (\(seq), \(parts), \(digest)) ON CONFLICT (seq) DO NOTHING",
                logger: logger
            )
            try await connection.query("DELETE FROM acquirer.snapshots WHERE seq < \(seq)", logger: logger)
        }
    }

    /// The state of the newest snapshot whose parts are whole and hash to its digest, with its journal
    /// position; nil when there is none (a damaged one is logged and skipped: the journal is replayed
    /// instead). Parts are decoded as they arrive.
    func latestSnapshot() async throws -> (seq: Int64, state: AcquirerModelState)? {
        let headers = try await client.query("SELECT seq, parts, sha256 FROM acquirer.snapshots ORDER BY seq DESC", logger: logger)
        var candidates: [(Int64, Int, [UInt8])] = []
        for try await (seq, parts, digest) in headers.decode((Int64, Int, ByteBuffer).self) {
            candidates.append((seq, parts, Array(digest.readableBytesView)))
        }
        for (seq, parts, digest) in candidates {
            var decoder = SnapshotDecoder()
            var hasher = SHA256()
            var next = 0
            var state: AcquirerModelState?
            do {
                let rows = try await client.query(
                    "SELECT part, data FROM acquirer.snapshot_parts WHERE seq = \(seq) ORDER BY part",
                    logger: logger
                )
                for try await (part, bytes) in rows.decode((Int, ByteBuffer).self) {
                    guard part == next else { break }
                    let data = Data(bytes.readableBytesView)
                    hasher.update(data: data)
                    try decoder.feed(data)
                    next += 1
                }
                if next == parts, Array(hasher.finalize()) == digest { state = try decoder.finish() }
            } catch let error as AcquirerSnapshotError {
                logger.error("an acquirer snapshot is unreadable", metadata: ["seq": "\(seq)", "error": "\(error)"])
            } catch let error as DecodingError {
                logger.error("an acquirer snapshot is unreadable", metadata: ["seq": "\(seq)", "error": "\(error)"])
            }
            if let state { return (seq, state) }
            logger.error("an acquirer snapshot is damaged; replaying from an older one or the journal", metadata: ["seq": "\(seq)"])
        }
        return nil
    }

    /// The durability barrier (acquirer 0005): one transaction that writes the barrier row and commits. It returns once
    /// its commit is as durable as the cluster makes commits (with a synchronous standby: once the standby has it), and
    /// with it every commit before it that this session could have read: a journal row whose own wait for the standby
    /// was cut short is then either on the standby or the barrier has not returned.
    func barrier() async throws {
        let logger = self.logger
        try await client.committed(logger: logger) { connection in
            let rows = try await connection.query(
                "UPDATE acquirer.durability_barrier SET barriers = barriers + 1 WHERE singleton RETURNING barriers",
                logger: logger
            )
            for try await _ in rows { return }
            throw JournalError("acquirer.durability_barrier has no row")
        }
    }

    /// Appends `rows` in one transaction: all or none, answered once committed (``DatabaseClient/committed(logger:_:)``: a
    /// terminated COMMIT is not answered at all, where a statement on its own would be answered as a success).
    func append(_ rows: [Row]) async throws {
        guard !rows.isEmpty else { return }
        let (query, logger) = (Self.appendQuery(rows), logger)
        try await client.committed(logger: logger) { connection in _ = try await connection.query(query, logger: logger) }
    }

    /// Appends `rows` on `connection` (inside its transaction).
    func append(_ rows: [Row], on connection: PostgresConnection) async throws {
        guard !rows.isEmpty else { return }
        try await connection.query(Self.appendQuery(rows), logger: logger)
    }

    static func appendQuery(_ rows: [Row]) -> PostgresQuery {
        """
        INSERT INTO acquirer.journal (seq, at_us, idempotency_key, command, status, response)
        SELECT s, a, NULLIF(k, ''), c, st::smallint, r
        FROM unnest(\(rows.map(\.seq))::bigint[], \(rows.map(\.atMicros))::bigint[], \(rows.map { $0.key ?? "" })::text[],
                    \(rows.map(\.command))::text[], \(rows.map { Int64($0.status) })::bigint[], \(rows.map(\.response))::text[])
             AS t(s, a, k, c, st, r)
        """
    }

    /// The journalled commands and answers under `keys`.
    func answers(for keys: [String]) async throws -> [String: (command: JournalCommand, reply: AcquirerReply)] {
        guard !keys.isEmpty else { return [:] }
        var found: [String: (command: JournalCommand, reply: AcquirerReply)] = [:]
        let rows = try await client.query(
            "SELECT idempotency_key, command, status, response FROM acquirer.journal WHERE idempotency_key = ANY(\(keys)::text[])",
            logger: logger
        )
        for try await (key, command, status, response) in rows.decode((String, String, Int16, String).self) {
            found[key] = (try LedgerJSON.decode(JournalCommand.self, from: command), AcquirerReply(status: Int(status), body: Data(response.utf8)))
        }
        return found
    }

    /// Stores one uploaded page; the same page again is accepted, a different one under its number refused. Answered
    /// once committed (``DatabaseClient/committed(_:logger:)``): a page the uploader is told was taken outlives a failover.
    func storePage(batchReference: String, page: Int, items: [SettlementItem]) async throws -> Bool {
        let text = try LedgerJSON.string(items)
        let inserted = try await client.committed(
            """
            INSERT INTO acquirer.batch_pages (batch_reference, page, items) VALUES (\(batchReference), \(page), \(text))
            ON CONFLICT (batch_reference, page) DO NOTHING RETURNING 1
            """,
            logger: logger
        )
        if !inserted.isEmpty { return true }
        let existing = try await client.query(
            "SELECT items FROM acquirer.batch_pages WHERE batch_reference = \(batchReference) AND page = \(page)",
            logger: logger
        )
        for try await stored in existing.decode(String.self) { return stored == text }
        return false
    }

    /// True when pages `0 ..< pages` of the batch are all uploaded (pages are never removed).
    func hasPages(of batchReference: String, pages: Int) async throws -> Bool {
        let rows = try await client.query(
            "SELECT count(*) FROM acquirer.batch_pages WHERE batch_reference = \(batchReference) AND page < \(pages)",
            logger: logger
        )
        for try await count in rows.decode(Int64.self) { return count == Int64(pages) }
        return false
    }

    /// Page `page` of a batch's uploaded items; throws when it is missing.
    func page(_ page: Int, of batchReference: String) async throws -> [SettlementItem] {
        let rows = try await client.query(
            "SELECT items FROM acquirer.batch_pages WHERE batch_reference = \(batchReference) AND page = \(page)",
            logger: logger
        )
        for try await text in rows.decode(String.self) { return try LedgerJSON.decode([SettlementItem].self, from: text) }
        throw AcquirerError(.invalidRequest, reference: batchReference, "page \(page) of the batch was not uploaded")
    }

    // MARK: Report lines (acquirer 0003)

    /// Inserts a settlement's report lines `first ..< first + lines.count` on `connection` (the
    /// transaction that journals the settlement).
    func insertReportLines(_ lines: [SettlementReportLine], batchNumber: Int, first: Int, on connection: PostgresConnection) async throws {
        guard !lines.isEmpty else { return }
        let bodies = try lines.map { try LedgerJSON.string($0) }
        let numbers = (0..<lines.count).map { Int64(first + $0) }
        try await connection.query(
            """
            INSERT INTO acquirer.report_lines (batch_number, line, body)
            SELECT \(Int64(batchNumber)), n, b FROM unnest(\(numbers)::bigint[], \(bodies)::text[]) AS t(n, b)
            """,
            logger: logger
        )
    }

    /// Inserts report lines as replay recomputes them, when the batch has none stored (a journal
    /// written before acquirer 0003), on `connection` (the replayed settlement's transaction).
    func insertReportLinesIfAbsent(_ lines: [SettlementReportLine], batchNumber: Int, first: Int, on connection: PostgresConnection) async throws {
        guard !lines.isEmpty else { return }
        let bodies = try lines.map { try LedgerJSON.string($0) }
        let numbers = (0..<lines.count).map { Int64(first + $0) }
        try await connection.query(
            """
            INSERT INTO acquirer.report_lines (batch_number, line, body)
            SELECT \(Int64(batchNumber)), n, b FROM unnest(\(numbers)::bigint[], \(bodies)::text[]) AS t(n, b)
            ON CONFLICT DO NOTHING
            """,
            logger: logger
        )
    }

    /// How many report lines of batch `batchNumber` are stored.
    func reportLineCount(batchNumber: Int) async throws -> Int {
        let rows = try await client.query(
            "SELECT count(*) FROM acquirer.report_lines WHERE batch_number = \(Int64(batchNumber))",
            logger: logger
        )
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Report lines `from ..< from + count` of batch `batchNumber` (fewer at the report's end).
    func reportLines(batchNumber: Int, from: Int, count: Int) async throws -> [SettlementReportLine] {
        let rows = try await client.query(
            """
            SELECT body FROM acquirer.report_lines
            WHERE batch_number = \(Int64(batchNumber)) AND line >= \(from) ORDER BY line LIMIT \(count)
            """,
            logger: logger
        )
        var lines: [SettlementReportLine] = []
        for try await body in rows.decode(String.self) { lines.append(try LedgerJSON.decode(SettlementReportLine.self, from: body)) }
        return lines
    }

    /// ``reportLines(batchNumber:from:count:)`` as the canonical JSON array of the lines: the stored bodies (each
    /// `LedgerJSON.string` of its line) joined, never decoded.
    func reportLinesJSON(batchNumber: Int, from: Int, count: Int) async throws -> Data {
        let rows = try await client.query(
            """
            SELECT body FROM acquirer.report_lines
            WHERE batch_number = \(Int64(batchNumber)) AND line >= \(from) ORDER BY line LIMIT \(count)
            """,
            logger: logger
        )
        var json: [UInt8] = [UInt8(ascii: "[")]
        for try await body in rows.decode(String.self) {
            if json.count > 1 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: body.utf8)
        }
        json.append(UInt8(ascii: "]"))
        return Data(json)
    }

    // MARK: Finished payments (acquirer 0004)

    /// True when any finished payment is stored.
    func hasFinishedPayments() async throws -> Bool {
        let rows = try await client.query("SELECT EXISTS (SELECT 1 FROM acquirer.finished_payments)", logger: logger)
        for try await exists in rows.decode(Bool.self) { return exists }
        return false
    }

    /// True when the settlement journalled at `seq` stored finished payments.
    func hasFinishedPayments(at seq: Int64) async throws -> Bool {
        let rows = try await client.query("SELECT EXISTS (SELECT 1 FROM acquirer.finished_payments WHERE seq = \(seq))", logger: logger)
        for try await exists in rows.decode(Bool.self) { return exists }
        return false
    }

    /// Inserts the payments a settlement (journal row `seq`) finished, in pages, on `connection` (the
    /// transaction that journals it) or, when replaying (nil), on their own where absent.
    func insertFinished(_ payments: [FinishedPayment], seq: Int64, on connection: PostgresConnection?) async throws {
        let page = 5_000
        for start in stride(from: 0, to: payments.count, by: page) {
            let slice = payments[start..<min(payments.count, start + page)]
            let references = slice.map(\.reference)
            let bodies = try slice.map { try LedgerJSON.string($0) }
            let modifications = slice.flatMap { payment in payment.modificationReferences.map { ($0, payment.reference) } }
            let payments: PostgresQuery = """
                INSERT INTO acquirer.finished_payments (reference, seq, body)
                SELECT r, \(seq), b FROM unnest(\(references)::text[], \(bodies)::text[]) AS t(r, b) ON CONFLICT DO NOTHING
                """
            let owners: PostgresQuery = """
                INSERT INTO acquirer.finished_modifications (modification_reference, seq, reference)
                SELECT m, \(seq), r FROM unnest(\(modifications.map(\.0))::text[], \(modifications.map(\.1))::text[]) AS t(m, r)
                ON CONFLICT DO NOTHING
                """
            if let connection {
                try await connection.query(payments, logger: logger)
                try await connection.query(owners, logger: logger)
            } else {
                try await client.query(payments, logger: logger)
                try await client.query(owners, logger: logger)
            }
        }
    }

    /// The newest stored version before journal row `seq` of each finished payment named by one of
    /// `references` or owning one of `modifications` (on `connection` when inside a transaction).
    func finishedPayments(
        references: [String],
        modifications: [String],
        before seq: Int64,
        on connection: PostgresConnection?
    ) async throws -> [FinishedPayment] {
        // One index probe per wanted payment (its newest version before `seq`): an OR of the two lookups in one WHERE
        // let the planner scan the whole table, once per batch and per settlement page (issue 57).
        let query: PostgresQuery = """
            WITH wanted AS (
                SELECT r FROM unnest(\(references)::text[]) AS t(r)
                UNION
                SELECT m.reference FROM acquirer.finished_modifications m
                WHERE m.modification_reference = ANY(\(modifications)::text[]) AND m.seq < \(seq))
            SELECT v.body FROM wanted CROSS JOIN LATERAL (
                SELECT f.body FROM acquirer.finished_payments f
                WHERE f.reference = wanted.r AND f.seq < \(seq) ORDER BY f.seq DESC LIMIT 1) v
            """
        let rows: PostgresRowSequence
        if let connection { rows = try await connection.query(query, logger: logger) } else { rows = try await client.query(query, logger: logger) }
        var found: [FinishedPayment] = []
        for try await body in rows.decode(String.self) { found.append(try LedgerJSON.decode(FinishedPayment.self, from: body)) }
        return found
    }

    /// The newest stored version of every finished payment (tests: the whole state).
    func allFinishedPayments() async throws -> [FinishedPayment] {
        let rows = try await client.query(
            "SELECT DISTINCT ON (reference) body FROM acquirer.finished_payments ORDER BY reference, seq DESC",
            logger: logger
        )
        var found: [FinishedPayment] = []
        for try await body in rows.decode(String.self) { found.append(try LedgerJSON.decode(FinishedPayment.self, from: body)) }
        return found
    }
}

struct JournalError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
