import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

/// Issue 52, steps 4 and 6, through the real router: a report as exported (blank lines before the header, a BOM, a
/// credited fee) reconciles; bad files — a truncated row, a missing column, an unparseable number, an unknown record
/// type in strict mode, a merchant account the ledger does not settle under — are each a 422 naming the row, the column
/// and the value, with nothing appended, nothing stored and the spool file gone.
extension SettlementRunTests {
    /// The reports stored (ledger.settlement_reports rows).
    func storedReports(_ services: ServiceContainer) async throws -> Int64 {
        try await services.client.withConnection { connection in
            var count: Int64 = 0
            let rows = try await connection.query("SELECT count(*) FROM ledger.settlement_reports", logger: TestCluster.logger)
            for try await n in rows.decode(Int64.self) { count = n }
            return count
        }
    }

    /// Whether a spool file holding `body` is left in the temporary directory.
    func spoolLeft(_ body: String) throws -> Bool {
        let directory = FileManager.default.temporaryDirectory
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("ledgerd-report-") }.contains {
            (try? Data(contentsOf: directory.appendingPathComponent($0))) == Data(body.utf8)
        }
    }

    @Test func badReportFilesAreRefusedNamingRowColumnAndValueWithNothingStored() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        let environment = ["LEDGERD_SETTLEMENT_REPORT_STRICT": "true", "LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS": "LedgerCA,LedgerEU"]
        try await TestApp.withApp(seed: true, clock: { clock.now }, environment: environment) { client, services in
            let id = try await storefront.placeOrder(client)
            try await capture(client, id)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await get(client, "/settlements/\(batchID)/report.csv")
            let lines = try SettlementReportCSV().parse(csv)
            let sdr = try Self.sdr(lines)
            let rows = sdr.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            let account = lines[0].merchantAccount

            // As exported: a BOM, blank lines before the header and between records.
            let asExported = "\u{FEFF}\r\n\r\n" + sdr.replacingOccurrences(of: "\r\n", with: "\r\n\r\n")
            var (status, text) = try await postReport(client, asExported)
            #expect(status == .ok, "\(text)")
            #expect(try WireJSON.decode(ReconciliationReply.self, from: text).breaks.isEmpty, "\(text)")

            let head = try await services.store.head().position
            let stored = try await storedReports(services)
            let bad: [(String, String, String)] = [
                // A truncated row: the file ends in the middle of row 2.
                ("truncated", rows[0] + "\r\n" + String(rows[1].prefix(60)) + "\r\n", "row 2: "),
                // A missing column.
                (
                    "missing column", rows.map { $0.replacingOccurrences(of: ",Batch Number,", with: ",Batch Numbr,") }.joined(separator: "\r\n"),
                    "\"Batch Number\""
                ),
                // An unparseable number.
                ("number", rows.joined(separator: "\r\n").replacingOccurrences(of: ",USD,,", with: ",USD,,1e3"), "row 2: Gross Credit (GC) \"1e3"),
                // An unknown record type, strict.
                (
                    "unknown type", rows.joined(separator: "\r\n").replacingOccurrences(of: ",Settled,", with: ",SettledOnMars,"),
                    "row 2: Type \"SettledOnMars\" is a record type no mapping knows"
                ),
                // A merchant account the ledger does not settle under.
                (
                    "account", rows.joined(separator: "\r\n").replacingOccurrences(of: ",\(account),", with: ",LedgerJP,"),
                    "row 2: Merchant Account \"LedgerJP\" is not a merchant account of this ledger (LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS: "
                ),
            ]
            for (name, body, named) in bad {
                (status, text) = try await postReport(client, body)
                #expect(status == .unprocessableContent, "\(name): \(text)")
                let error = try JSONDecoder().decode([String: [String: String]].self, from: Data(text.utf8))["error"]
                #expect(error?["code"] == "invalid_report" && error?["message"]?.contains(named) == true, "\(name): \(text)")
                #expect(try await services.store.head().position == head, "\(name)")
                #expect(try await storedReports(services) == stored, "\(name)")
                #expect(try !spoolLeft(body), "\(name)")
            }
            // The truncated row names the first missing column and the last value read.
            (_, text) = try await postReport(client, bad[0].1)
            #expect(text.contains(" is missing: the row ends after "), "\(text)")

            // A report of another configured account is accepted, not refused: its lines are routed to that account's
            // batch (none here, so the named batch reads none of them; MerchantAccountTests routes them for real).
            (status, text) = try await postReport(
                client,
                rows.joined(separator: "\r\n").replacingOccurrences(of: ",\(account),", with: ",LedgerCA,"),
                query: "?batch=\(batchID)"
            )
            #expect(status == .ok, "\(text)")
        }
    }
}
