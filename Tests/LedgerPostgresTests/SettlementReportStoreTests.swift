import Foundation
import LedgerCore
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// `SettlementReportStore` against a real database, as the application role (the daemon's grants):
/// a report's parts, summary and line index stored in one transaction and read back in order.
@Suite(.machine(.shared)) struct SettlementReportStoreTests {
    static func line(_ n: Int, type: SettlementLineType = .settled) -> SettlementReportLine {
        SettlementReportLine(
            companyAccount: "OrderLedger",
            merchantAccount: "OrderLedgerStore",
            pspReference: "psp-\(n)",
            merchantReference: "order-\(n)",
            paymentMethod: "visa",
            creationDate: nil,
            timeZone: "UTC",
            type: type,
            modificationReference: "mod-psp-\(n)",
            grossCurrency: nil,
            grossDebit: nil,
            grossCredit: nil,
            exchangeRate: nil,
            netCurrency: nil,
            netDebit: nil,
            netCredit: nil,
            commission: nil,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: "visa",
            modificationMerchantReference: "capture-\(n)",
            batchNumber: 7
        )
    }

    static let digest = [UInt8](repeating: 0xAB, count: 32)

    /// A failure in the middle of storing a report.
    struct Interrupted: Error {}

    /// The report's line index as (line, type, our reference, the acquirer's reference), by line.
    static func index(_ client: DatabaseClient, _ key: String) async throws -> [String] {
        try await column(
            client,
            """
            SELECT line_no || ' ' || type || ' ' || our_reference || ' ' || acquirer_reference
            FROM ledger.settlement_report_lines WHERE batch_id = \(key) ORDER BY line_no
            """,
            as: String.self
        )
    }

    @Test func partsStoredInOneTransactionReadBackInOrderWithTheirLineIndex() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = SettlementReportStore(client: client, logger: TestCluster.logger)
            #expect(try await store.storedReport("batch-1") == nil)
            let parts = [
                (0, "header\nrow 1\nrow 2\n", [Self.line(1), Self.line(2)]), (1, "row 3\n", [Self.line(3)]),
                (2, "row 4\n", [Self.line(4, type: .merchantPayout)]),
            ]
            let stored = try await store.storeReport { transaction -> Int in
                var first = 1
                // Stored out of order: the reads order by part, not by insertion.
                for (part, csv, _) in parts.reversed() {
                    try await transaction.insertPart(reportKey: "batch-1", part: part, csv: csv)
                }
                for (_, _, lines) in parts {
                    try await transaction.indexLines(lines, reportKey: "batch-1", firstLine: first)
                    first += lines.count
                }
                try await transaction.insertSummary(reportKey: "batch-1", sha256: Self.digest, lineCount: 4, parts: parts.count)
                return parts.count
            }
            #expect(stored == 3)
            let summary = try #require(try await store.storedReport("batch-1"))
            #expect(summary.digest == Self.digest && summary.lineCount == 4)
            var read: [String] = []
            try await store.forEachPart("batch-1") { part, csv in read.append("\(part):\(csv)") }
            #expect(read == ["0:header\nrow 1\nrow 2\n", "1:row 3\n", "2:row 4\n"])
            var csv = ""
            try await store.forEachPartCSV("batch-1") { csv += $0 }
            #expect(csv == "header\nrow 1\nrow 2\nrow 3\nrow 4\n")
            #expect(
                try await Self.index(client, "batch-1") == [
                    "1 Settled capture-1 mod-psp-1", "2 Settled capture-2 mod-psp-2", "3 Settled capture-3 mod-psp-3",
                    "4 MerchantPayout capture-4 mod-psp-4",
                ]
            )
            #expect(try await store.lineIndexMissing("batch-1") == false)
            var nothing: [String] = []
            try await store.forEachPart("batch-2") { part, _ in nothing.append("\(part)") }
            #expect(nothing.isEmpty)
        }
    }

    @Test func aFailedTransactionStoresNothing() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client async throws in
            let store = SettlementReportStore(client: client, logger: TestCluster.logger)
            let failure = await #expect(throws: PostgresTransactionError.self) {
                try await store.storeReport { transaction -> Void in
                    try await transaction.insertPart(reportKey: "batch-1", part: 0, csv: "header\nrow 1\n")
                    try await transaction.indexLines([Self.line(1)], reportKey: "batch-1", firstLine: 1)
                    throw Interrupted()
                }
            }
            #expect(failure?.closureError is Interrupted)
            #expect(try await store.storedReport("batch-1") == nil)
            #expect(try await column(client, "SELECT count(*) FROM ledger.settlement_report_parts", as: Int64.self) == [0])
            #expect(try await Self.index(client, "batch-1").isEmpty)
        }
    }

    @Test func aMissingLineIndexIsFoundAndBuiltFromTheParts() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = SettlementReportStore(client: client, logger: TestCluster.logger)
            try await store.storeReport { transaction -> Void in
                try await transaction.insertPart(reportKey: "batch-1", part: 0, csv: "header\nrow 1\nrow 2\n")
                try await transaction.insertSummary(reportKey: "batch-1", sha256: Self.digest, lineCount: 2, parts: 1)
            }
            #expect(try await store.lineIndexMissing("batch-1"))
            #expect(try await store.lineIndexMissing("never-stored") == false)
            try await store.indexLines([Self.line(1)], reportKey: "batch-1", firstLine: 1)
            try await store.indexLines([Self.line(2)], reportKey: "batch-1", firstLine: 2)
            #expect(try await store.lineIndexMissing("batch-1") == false)
            #expect(try await Self.index(client, "batch-1") == ["1 Settled capture-1 mod-psp-1", "2 Settled capture-2 mod-psp-2"])
        }
    }

    /// Issue 52: the payout lines of a report (MerchantPayout and AcquirerPayout, two of each when a batch settles in two
    /// currencies) are never repeated references of its items: only a line that settles an item twice is.
    @Test func repeatedReferencesLeaveOutEveryPayoutType() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = SettlementReportStore(client: client, logger: TestCluster.logger)
            func payout(_ type: SettlementLineType) -> SettlementReportLine {
                var line = Self.line(9, type: type)
                (line.modificationMerchantReference, line.modificationReference) = ("batch-1", "payout-1")
                return line
            }
            let acquirerPayout = SettlementLineType(rawValue: "AcquirerPayout")
            let lines = [
                Self.line(1), Self.line(1), Self.line(2), payout(.merchantPayout), payout(.merchantPayout), payout(acquirerPayout),
                payout(acquirerPayout),
            ]
            try await store.storeUpload(key: "upload-1", csv: "header\n", lines: lines, digest: Self.digest)
            let repeated = try await ReconciliationLookups(client: client, logger: TestCluster.logger).repeatedReferences(in: "upload-1")
            #expect(repeated.ours == ["capture-1": 1] && repeated.theirs == ["mod-psp-1": 1], "\(repeated)")
        }
    }

    @Test func anUploadIsStoredOnceAsOnePartWithItsIndex() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = SettlementReportStore(client: client, logger: TestCluster.logger)
            let lines = [Self.line(1), Self.line(2, type: .merchantPayout)]
            try await store.storeUpload(key: "upload-1", csv: "header\nrow 1\nrow 2\n", lines: lines, digest: Self.digest)
            let summary = try #require(try await store.storedReport("upload-1"))
            #expect(summary.digest == Self.digest && summary.lineCount == 2)
            var csv: [String] = []
            try await store.forEachPartCSV("upload-1") { csv.append($0) }
            #expect(csv == ["header\nrow 1\nrow 2\n"])
            #expect(try await Self.index(client, "upload-1") == ["1 Settled capture-1 mod-psp-1", "2 MerchantPayout capture-2 mod-psp-2"])
            // The line index's key is unique: a second store of the same upload is refused, whole (the service checks first).
            let refused = await #expect(throws: PostgresTransactionError.self) {
                try await store.storeUpload(key: "upload-1", csv: "header\nrow 1\nrow 2\n", lines: lines, digest: Self.digest)
            }
            #expect(refused?.closureError is PSQLError)
            #expect(try await Self.index(client, "upload-1").count == 2)
        }
    }

    /// Each stored report leaves the line index analysed (sql/0019, run as the app role): reconciliation's
    /// lookups are planned on statistics that count its lines. Never analysed, a table's `reltuples` is -1.
    @Test func aStoredReportLeavesTheLineIndexAnalysed() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withApp { client in
            let store = SettlementReportStore(client: client, logger: TestCluster.logger)
            func estimate() async throws -> [Int64] {
                try await column(
                    client,
                    "SELECT reltuples::bigint FROM pg_class WHERE oid = 'ledger.settlement_report_lines'::regclass",
                    as: Int64.self
                )
            }
            #expect(try await estimate() == [-1])
            try await store.storeUpload(key: "upload-1", csv: "header\nrow 1\n", lines: [Self.line(1)], digest: Self.digest)
            #expect(try await estimate() == [1])
            try await store.storeReport { transaction in
                try await transaction.insertPart(reportKey: "batch-1", part: 0, csv: "header\nrow 1\nrow 2\n")
                try await transaction.indexLines([Self.line(1), Self.line(2)], reportKey: "batch-1", firstLine: 1)
                try await transaction.insertSummary(reportKey: "batch-1", sha256: Self.digest, lineCount: 2, parts: 1)
            }
            #expect(try await estimate() == [3])
        }
    }
}
