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

/// Issue 52, step 4, through the real router: the day's settled batch written as a Checkout.com Financial Actions by
/// Payout ID report (a row per breakdown: each capture's gross and fee rows, the payout row) is detected by its header,
/// finds its batch by its Payout ID and reconciles with 0 breaks; a bad one is a 422 naming row, column and value with
/// nothing appended and nothing stored.
extension SettlementRunTests {
    static let checkoutHeader = [
        "Client Entity ID", "Client Entity Name", "Processing Channel ID", "Currency Account ID", "Action Type", "Action ID", "Payment ID",
        "Requested On", "Processed On", "Processing Currency", "FX Rate Applied", "Holding Currency", "Payout ID", "Breakdown Type",
        "Processing Currency Amount", "Holding Currency Amount", "Payment Method", "Card Type", "Reference",
    ]

    /// The model's report lines as Checkout.com rows: a capture's or refund's gross row and a row per fee, then the payout.
    static func checkout(_ lines: [SettlementReportLine]) -> String {
        var text = csvRow(checkoutHeader)
        func row(_ action: String, _ line: SettlementReportLine, _ breakdown: String, _ amount: Money, payout: String) -> String {
            csvRow([
                "ent_ol", "OrderLedger", "pc_ol", "ca_usd", action, line.modificationReference, line.pspReference,
                "2026-06-17T12:00:00.000", "2026-06-17T12:00:01.000", amount.currency.code, "", amount.currency.code, payout, breakdown,
                amount.decimalString, amount.decimalString, line.paymentMethod.uppercased(), "Credit", line.merchantReference,
            ])
        }
        let payout = lines.first { $0.type == .merchantPayout }!
        for line in lines where line.type == .settled || line.type == .refunded {
            let action = line.type == .settled ? "Capture" : "Refund"
            text += row(action, line, action, Money(minorUnits: line.signedGrossMinorUnits, currency: .usd), payout: payout.modificationReference)
            let fees: [(String, Money?)] = [
                ("Interchange Variable Fee", line.interchange), ("Scheme Variable Fee", line.schemeFees),
                ("Premium Variable Fee", line.markup), ("Gateway Fixed Fee", line.commission),
            ]
            for (breakdown, fee) in fees where (fee?.minorUnits ?? 0) != 0 {
                text += row(action, line, breakdown, Money(minorUnits: -fee!.minorUnits, currency: .usd), payout: payout.modificationReference)
            }
        }
        var paid = payout
        paid.modificationReference = "po_" + payout.modificationReference
        text += row("Payout", paid, "Payout", Money(minorUnits: payout.signedNetMinorUnits, currency: .usd), payout: payout.modificationReference)
        return text
    }

    @Test func aCheckoutReportReconcilesThroughTheRouterAndABadOneIsRefused() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }, environment: ["LEDGERD_SETTLEMENT_REPORT_STRICT": "true"]) {
            client,
            services in
            let first = try await storefront.placeOrder(client)
            let second = try await storefront.placeOrder(client)
            try await capture(client, first)
            try await capture(client, second)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await get(client, "/settlements/\(batchID)/report.csv")
            let own = try SettlementReportCSV().parse(csv)
            let settled = own.filter { $0.type == .settled }
            #expect(settled.count == 2 && settled.allSatisfy { $0.totalFeesMinorUnits > 0 })
            let report = Self.checkout(own)

            let before = try await services.store.head().position
            var (status, text) = try await postReport(client, report)
            #expect(status == .ok, "\(text)")
            let reply = try WireJSON.decode(ReconciliationReply.self, from: text)
            // Found by its Payout ID (the batch's payout reference); each capture's rows one line, the payout row its payout.
            #expect(reply.batchId == batchID && reply.reportLines == settled.count + 1 && reply.matched == settled.count, "\(text)")
            #expect(reply.breaks.isEmpty, "\(reply.breaks)")
            #expect(try await services.store.head().position == before + 1)  // its reconciliation, no break

            // Bad files: nothing appended, nothing stored.
            let head = try await services.store.head().position
            let stored = try await storedReports(services)
            let rows = report.components(separatedBy: "\r\n")
            let gross = try #require(settled.first?.grossCredit?.decimalString)
            let bad: [(String, String, String)] = [
                (
                    "unknown breakdown", report.replacingOccurrences(of: ",Capture,\(gross),", with: ",Martian Fee,\(gross),"),
                    "row 2: Breakdown Type \"Martian Fee\" is a record type no mapping knows"
                ),
                (
                    "sub-cent amount", report.replacingOccurrences(of: ",Capture,\(gross),\(gross),", with: ",Capture,\(gross),\(gross)01,"),
                    "row 2: Holding Currency Amount \"\(gross)01\" has more than 2 fraction digits"
                ),
                ("missing column", report.replacingOccurrences(of: ",Holding Currency Amount,", with: ",Held,"), "\"Holding Currency Amount\""),
                ("truncated", rows[0] + "\r\n" + String(rows[1].prefix(40)) + "\r\n", "row 2: "),
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
        }
    }
}
