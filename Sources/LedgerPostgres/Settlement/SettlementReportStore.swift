import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The stored settlement reports: each report's CSV in parts (`ledger.settlement_report_parts`), its
/// digest and line count (`ledger.settlement_reports`), and its line index
/// (`ledger.settlement_report_lines`, sql/0009) that reconciliation finds duplicates and absent items through.
///
/// A report is keyed by its batch (the acquirer's report) or by `upload-<SHA-256>` (one an operator
/// uploaded). Its parts, index and summary are written in one transaction (``storeReport(_:)``,
/// ``storeUpload(key:csv:lines:digest:)``), so a report is stored whole or not at all; parts are read
/// back one at a time, in order (memory holds a part, not a report).
package struct SettlementReportStore: PostgresStore {
    package let connection: StoreConnection

    package init(connection: StoreConnection) { self.connection = connection }

    /// The stored report's digest and line count, if it is stored.
    package func storedReport(_ reportKey: String) async throws -> (digest: [UInt8], lineCount: Int)? {
        let rows = try await client.query(
            "SELECT sha256, line_count FROM ledger.settlement_reports WHERE batch_id = \(reportKey)",
            logger: logger
        )
        for try await (hash, count) in rows.decode((ByteBuffer, Int32).self) { return (Array(hash.readableBytesView), Int(count)) }
        return nil
    }

    /// Calls `body` with each stored part of the report (its number and CSV text), in order; part 0 starts with the header.
    package func forEachPart(_ reportKey: String, _ body: (_ part: Int32, _ csv: String) async throws -> Void) async throws {
        let rows = try await client.query(
            "SELECT part, csv FROM ledger.settlement_report_parts WHERE batch_id = \(reportKey) ORDER BY part",
            logger: logger
        )
        for try await (part, text) in rows.decode((Int32, String).self) { try await body(part, text) }
    }

    /// Calls `write` with the CSV text of each stored part of the report, in order: the report as stored.
    package func forEachPartCSV(_ reportKey: String, _ write: (String) async throws -> Void) async throws {
        let rows = try await client.query(
            "SELECT csv FROM ledger.settlement_report_parts WHERE batch_id = \(reportKey) ORDER BY part",
            logger: logger
        )
        for try await part in rows.decode(String.self) { try await write(part) }
    }

    /// Whether the report is stored, has lines, and has no line index (stored before sql/0009).
    package func lineIndexMissing(_ reportKey: String) async throws -> Bool {
        let rows = try await client.query(
            """
            SELECT r.line_count, (SELECT count(*) FROM ledger.settlement_report_lines l WHERE l.batch_id = r.batch_id)
            FROM ledger.settlement_reports r WHERE r.batch_id = \(reportKey)
            """,
            logger: logger
        )
        var missing = false
        for try await (lines, indexed) in rows.decode((Int32, Int64).self) { missing = lines > 0 && indexed == 0 }
        return missing
    }

    /// Adds report lines to the report's line index, numbered from `firstLine` (outside a transaction).
    package func indexLines(_ lines: [SettlementReportLine], reportKey: String, firstLine: Int) async throws {
        let logger = self.logger
        try await client.withConnection { connection in
            try await Self.indexLines(lines, reportKey: reportKey, firstLine: firstLine, on: connection, logger: logger)
        }
    }

    /// Runs `body` in one transaction with a ``ReportTransaction`` to store a report's parts, index and
    /// summary through: all of them are stored, or none (a throw rolls back).
    /// Throws ``StoredConcurrently`` when another writer (another daemon settling the same batch)
    /// committed the same report's rows first.
    package func storeReport<Result: Sendable>(_ body: (ReportTransaction) async throws -> Result) async throws -> Result {
        let logger = self.logger
        do {
            let result = try await client.withTransaction(logger: logger) { connection in
                try await body(ReportTransaction(connection: connection, logger: logger))
            }
            try await analyzeLines()
            return result
        } catch
            where PostgresErrorMapping.sqlState(of: error) == "23505"
            && Self.reportTables.contains(PostgresErrorMapping.serverError(in: error)?.serverInfo?[.tableName] ?? "")
        {
            throw StoredConcurrently()
        }
    }

    /// Refreshes the line index's statistics once a report's lines are committed (sql/0019): planned on
    /// statistics from before them, reconciliation's lookups scan the whole index once per item.
    func analyzeLines() async throws {
        try await client.query("SELECT ledger.analyze_settlement_report_lines()", logger: logger)
    }

    /// Another writer stored the report first (its rows' keys are taken): read the stored report instead.
    package struct StoredConcurrently: Error {}

    static let reportTables: Set<String> = ["settlement_report_parts", "settlement_report_lines", "settlement_reports"]

    /// Stores an uploaded report (key `upload-<SHA-256 of its bytes>`) as it came: one part, its line
    /// index and its summary, in one transaction. A part already stored under the key is kept.
    package func storeUpload(key: String, csv: String, lines: [SettlementReportLine], digest: [UInt8]) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                "INSERT INTO ledger.settlement_report_parts (batch_id, part, csv) VALUES (\(key), 0, \(csv)) ON CONFLICT DO NOTHING",
                logger: logger
            )
            try await Self.indexLines(lines, reportKey: key, firstLine: 1, on: connection, logger: logger)
            try await connection.query(
                """
                INSERT INTO ledger.settlement_reports (batch_id, sha256, line_count, parts, stored_at)
                VALUES (\(key), \(ByteBuffer(bytes: digest)), \(lines.count), 1, now())
                """,
                logger: logger
            )
        }
        try await analyzeLines()
    }

    /// Adds report lines to the report's line index (`ledger.settlement_report_lines`), numbered from `firstLine`.
    static func indexLines(
        _ lines: [SettlementReportLine],
        reportKey: String,
        firstLine: Int,
        on connection: PostgresConnection,
        logger: Logger
    ) async throws {
        _ = try await connection.query(
            """
            INSERT INTO ledger.settlement_report_lines (batch_id, line_no, type, our_reference, acquirer_reference)
            SELECT \(reportKey), \(firstLine) + n - 1, t, o, a
            FROM unnest(\(lines.map(\.type.rawValue))::text[], \(lines.map(\.modificationMerchantReference))::text[],
                        \(lines.map(\.modificationReference))::text[]) WITH ORDINALITY AS u(t, o, a, n)
            """,
            logger: logger
        )
    }

    /// The statements of one report being stored, all in the transaction ``storeReport(_:)`` opened.
    package struct ReportTransaction {
        let connection: PostgresConnection
        let logger: Logger

        /// Stores part `part` (0-based; part 0 starts with the header) of the report's CSV.
        package func insertPart(reportKey: String, part: Int, csv: String) async throws {
            try await connection.query(
                "INSERT INTO ledger.settlement_report_parts (batch_id, part, csv) VALUES (\(reportKey), \(part), \(csv))",
                logger: logger
            )
        }

        /// Adds the part's lines to the report's line index, numbered from `firstLine`.
        package func indexLines(_ lines: [SettlementReportLine], reportKey: String, firstLine: Int) async throws {
            try await SettlementReportStore.indexLines(lines, reportKey: reportKey, firstLine: firstLine, on: connection, logger: logger)
        }

        /// Records the whole report: its digest, line count and number of parts.
        package func insertSummary(reportKey: String, sha256 digest: [UInt8], lineCount: Int, parts: Int) async throws {
            try await connection.query(
                """
                INSERT INTO ledger.settlement_reports (batch_id, sha256, line_count, parts, stored_at)
                VALUES (\(reportKey), \(ByteBuffer(bytes: digest)), \(lineCount), \(parts), now())
                """,
                logger: logger
            )
        }
    }
}
