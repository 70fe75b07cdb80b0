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

    /// Replays the journal into `state`, in order; returns the last sequence number (0 when empty).
    /// A settlement's items are read on their own query, so the row stream stops at each settlement.
    func replay(into state: inout AcquirerModelState) async throws -> Int64 {
        try await replay(into: &state, after: 0)
    }

    /// Replays the journal rows after `start` into `state` (a snapshot taken after row `start`).
    func replay(into state: inout AcquirerModelState, after start: Int64) async throws -> Int64 {
        var last = start
        while true {
            var pendingSettlement: (Date, JournalCommand)?
            let rows = try await client.query(
                "SELECT seq, at_us, command FROM acquirer.journal WHERE seq > \(last) ORDER BY seq",
                logger: logger
            )
            for try await (seq, at, text) in rows.decode((Int64, Int64, String).self) {
                guard seq == last + 1 else { throw JournalError("acquirer.journal has a gap before \(seq)") }
                let command = try LedgerJSON.decode(JournalCommand.self, from: text)
                last = seq
                if case .settle = command {
                    pendingSettlement = (Date(epochMicroseconds: at), command)
                    break
                }
                _ = state.apply(command, items: [], now: Date(epochMicroseconds: at))
            }
            guard let (now, command) = pendingSettlement, case .settle(let header, let pages) = command else { return last }
            _ = state.apply(command, items: try await items(of: header.batchReference, pages: pages), now: now)
        }
    }

    /// Bytes per stored snapshot part.
    static let snapshotPartBytes = 8 << 20

    /// Stores `snapshot` (the state after journal row `seq`) and its parts in one transaction, then
    /// deletes the older snapshots.
    func storeSnapshot(_ snapshot: Data, seq: Int64) async throws {
        let parts = max(1, (snapshot.count + Self.snapshotPartBytes - 1) / Self.snapshotPartBytes)
        let digest = ByteBuffer(bytes: SHA256.hash(data: snapshot))
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                "INSERT INTO acquirer.snapshots (seq, parts, sha256) VALUES (\(seq), \(parts), \(digest)) ON CONFLICT (seq) DO NOTHING",
                logger: logger
            )
            for part in 0..<parts {
                let start = part * Self.snapshotPartBytes
                let bytes = ByteBuffer(
                    bytes: snapshot[(snapshot.startIndex + start)..<(snapshot.startIndex + min(snapshot.count, start + Self.snapshotPartBytes))]
                )
                try await connection.query(
                    "INSERT INTO acquirer.snapshot_parts (seq, part, data) VALUES (\(seq), \(part), \(bytes)) ON CONFLICT DO NOTHING",
                    logger: logger
                )
            }
            try await connection.query("DELETE FROM acquirer.snapshots WHERE seq < \(seq)", logger: logger)
        }
    }

    /// The newest snapshot whose parts are whole and hash to its digest, with its journal position;
    /// nil when there is none (a damaged one is logged and skipped: the journal is replayed instead).
    func latestSnapshot() async throws -> (seq: Int64, data: Data)? {
        let headers = try await client.query("SELECT seq, parts, sha256 FROM acquirer.snapshots ORDER BY seq DESC", logger: logger)
        var candidates: [(Int64, Int, [UInt8])] = []
        for try await (seq, parts, digest) in headers.decode((Int64, Int, ByteBuffer).self) {
            candidates.append((seq, parts, Array(digest.readableBytesView)))
        }
        for (seq, parts, digest) in candidates {
            var data = Data()
            var next = 0
            let rows = try await client.query("SELECT part, data FROM acquirer.snapshot_parts WHERE seq = \(seq) ORDER BY part", logger: logger)
            for try await (part, bytes) in rows.decode((Int, ByteBuffer).self) {
                guard part == next else { break }
                data.append(contentsOf: bytes.readableBytesView)
                next += 1
            }
            if next == parts, Array(SHA256.hash(data: data)) == digest { return (seq, data) }
            logger.error("an acquirer snapshot is damaged; replaying from an older one or the journal", metadata: ["seq": "\(seq)"])
        }
        return nil
    }

    /// Appends `rows` in one statement (one transaction): all or none.
    func append(_ rows: [Row]) async throws {
        guard !rows.isEmpty else { return }
        try await client.query(
            """
            INSERT INTO acquirer.journal (seq, at_us, idempotency_key, command, status, response)
            SELECT s, a, NULLIF(k, ''), c, st::smallint, r
            FROM unnest(\(rows.map(\.seq))::bigint[], \(rows.map(\.atMicros))::bigint[], \(rows.map { $0.key ?? "" })::text[],
                        \(rows.map(\.command))::text[], \(rows.map { Int64($0.status) })::bigint[], \(rows.map(\.response))::text[])
                 AS t(s, a, k, c, st, r)
            """,
            logger: logger
        )
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

    /// Stores one uploaded page; the same page again is accepted, a different one under its number refused.
    func storePage(batchReference: String, page: Int, items: [SettlementItem]) async throws -> Bool {
        let text = try LedgerJSON.string(items)
        let rows = try await client.query(
            """
            INSERT INTO acquirer.batch_pages (batch_reference, page, items) VALUES (\(batchReference), \(page), \(text))
            ON CONFLICT (batch_reference, page) DO NOTHING RETURNING 1
            """,
            logger: logger
        )
        for try await _ in rows { return true }
        let existing = try await client.query(
            "SELECT items FROM acquirer.batch_pages WHERE batch_reference = \(batchReference) AND page = \(page)",
            logger: logger
        )
        for try await stored in existing.decode(String.self) { return stored == text }
        return false
    }

    /// The items of pages `0 ..< pages` of a batch, in order; throws when one is missing.
    func items(of batchReference: String, pages: Int) async throws -> [SettlementItem] {
        var items: [SettlementItem] = []
        var next = 0
        let rows = try await client.query(
            "SELECT page, items FROM acquirer.batch_pages WHERE batch_reference = \(batchReference) AND page < \(pages) ORDER BY page",
            logger: logger
        )
        for try await (page, text) in rows.decode((Int, String).self) {
            guard page == next else { break }
            items += try LedgerJSON.decode([SettlementItem].self, from: text)
            next += 1
        }
        guard next == pages else {
            throw AcquirerError(.invalidRequest, reference: batchReference, "page \(next) of the batch was not uploaded")
        }
        return items
    }
}

struct JournalError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
