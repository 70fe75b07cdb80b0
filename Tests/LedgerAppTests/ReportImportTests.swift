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

/// Issue 17: the acquirers' own report formats uploaded through the real router — the day's report
/// rewritten as an Adyen SDR (reserved columns, the payout line naming its batch only by number, a
/// chargeback the ledger recorded), a Stripe itemized payout reconciliation and an Adyen PAR — each
/// reconciles with exactly the expected outcome beside the acquirer's own reconciliation.
extension SettlementRunTests {
    static let reserved = ["Reserved4", "Reserved5", "Reserved6", "Reserved7", "Reserved8", "Reserved9", "Reserved10"]

    static func csvRow(_ fields: [String]) -> String {
        fields.map { $0.contains(where: { ",\"\r\n".contains($0) }) ? "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : $0 }
            .joined(separator: ",") + "\r\n"
    }

    /// The model's lines as SDR rows (its 23 columns plus the reserved ones).
    static func sdr(_ lines: [SettlementReportLine]) throws -> String {
        let rows = try SettlementReportCSV().rows(lines, firstRow: 2)
        let header = csvRow(SettlementReportCSV.columns + reserved)
        let padding = String(repeating: ",", count: reserved.count) + "\r\n"
        return header + rows.split(separator: "\r\n").map { (row: Substring) -> String in String(row) + padding }.joined()
    }

    static func chargebackLine(_ template: SettlementReportLine, units: Int64, reference: String, type: String = "Chargeback") -> SettlementReportLine
    {
        var line = template
        line.type = SettlementLineType(rawValue: type)
        line.modificationReference = reference
        line.modificationMerchantReference = ""
        let amount = Money(minorUnits: units, currency: .usd)
        (line.grossDebit, line.grossCredit, line.netDebit, line.netCredit) = (amount, nil, amount, nil)
        (line.commission, line.markup, line.schemeFees, line.interchange) = (nil, nil, nil, nil)
        return line
    }

    func postReport(_ client: any TestClientProtocol, _ csv: String, query: String) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(
            uri: "/reconciliation/reports" + query,
            method: .post,
            headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "text/csv"],
            body: ByteBuffer(string: csv)
        ) { ($0.status, String(buffer: $0.body)) }
    }

    @Test func theAcquirersFormatsReconcileThroughTheRouter() async throws {
        let clock = SimulatedClock(Self.instant("2026-06-17T10:00:00Z"))
        try await TestApp.withApp(seed: true, clock: { clock.now }) { client, services in
            let first = try await storefront.placeOrder(client)
            let second = try await storefront.placeOrder(client)
            try await capture(client, first)
            try await capture(client, second)
            clock.set(Self.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await get(client, "/settlements/\(batchID)/report.csv")
            let own = try SettlementReportCSV().parse(csv)
            let settled = own.filter { $0.type == .settled }
            #expect(settled.count == 2)
            let payoutIndex = try #require(own.firstIndex { $0.type == .merchantPayout })

            // The second order was charged back; the ledger recorded it from the acquirer's notification.
            let hold = try #require(try await services.holds.aggregates.hold(OrderID(second)!, fresh: true))
            try await services.disputes.receive(
                DisputeNotification(
                    disputeID: "cb-1",
                    stage: .chargeback,
                    orderID: second,
                    pspReference: hold.pspReference,
                    reason: .visaFraudCardAbsent,
                    amount: Money(minorUnits: 5900, currency: .usd)
                )
            )
            // The SDR: every model line, the chargeback, and the payout line naming its batch only by number.
            var lines = own
            let template = try #require(settled.first { $0.pspReference == hold.pspReference })
            lines.insert(Self.chargebackLine(template, units: 5900, reference: "CB-0001"), at: payoutIndex)
            var payout = lines[lines.count - 1]
            payout.modificationMerchantReference = ""
            let net = (payout.netDebit?.minorUnits ?? 0) - (payout.netCredit?.minorUnits ?? 0) - 5900
            (payout.netDebit, payout.netCredit) =
                net >= 0 ? (Money(minorUnits: net, currency: .usd), nil) : (nil, Money(minorUnits: -net, currency: .usd))
            lines[lines.count - 1] = payout
            let sdr = try Self.sdr(lines)
            let before = try await services.store.head().position
            var (status, text) = try await postReport(client, sdr)
            #expect(status == .ok, "\(text)")
            var reply = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(reply.batchId == batchID && reply.reportLines == own.count + 1 && reply.matched == settled.count + 1, "\(text)")
            #expect(reply.breaks.isEmpty, "\(reply.breaks)")
            #expect(reply.reconciliations.first?.report == "acquirer" && reply.reconciliations.first?.breaks.isEmpty == true)
            #expect(try await services.store.head().position == before + 1)  // its reconciliation, no break

            // The same SDR with a record type no mapping knows: exactly one unmapped_record break, never dropped.
            var unknown = lines
            var odd = Self.chargebackLine(template, units: 100, reference: "NEW-0001", type: "SuperNewRecordType")
            (odd.grossDebit, odd.grossCredit, odd.netDebit, odd.netCredit) = (nil, odd.grossDebit, nil, odd.netDebit)
            unknown.insert(odd, at: unknown.count - 1)
            var shifted = unknown[unknown.count - 1]
            let shiftedNet = (shifted.netDebit?.minorUnits ?? 0) - (shifted.netCredit?.minorUnits ?? 0) + 100
            (shifted.netDebit, shifted.netCredit) =
                shiftedNet >= 0 ? (Money(minorUnits: shiftedNet, currency: .usd), nil) : (nil, Money(minorUnits: -shiftedNet, currency: .usd))
            unknown[unknown.count - 1] = shifted
            (status, text) = try await postReport(client, try Self.sdr(unknown))
            reply = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(reply.breaks.map(\._class.rawValue) == ["unmapped_record"] && reply.breaks.first?.reference == "NEW-0001", "\(text)")
            #expect(reply.breaks.first?.actual == "1.00")

            // Stripe: the two charges of the payout (the batch's payout reference); its payout is the batch's.
            let stripeHeader = [
                "automatic_payout_id", "balance_transaction_id", "created_utc", "currency", "gross", "fee", "net", "reporting_category",
                "source_id", "description", "charge_id", "card_brand", "card_funding", "payment_metadata[order_id]",
                "payment_metadata[modification_reference]",
            ]
            let payoutID = own[payoutIndex].modificationReference
            var stripe = Self.csvRow(stripeHeader)
            for (n, line) in settled.enumerated() {
                let fee = Money(minorUnits: line.totalFeesMinorUnits, currency: .usd)
                stripe += Self.csvRow([
                    payoutID, "txn_\(n)", "2026-06-17 12:00:00", "usd", line.grossCredit!.decimalString, fee.decimalString,
                    line.netCredit!.decimalString, "charge", line.modificationReference, "Order", line.pspReference, "visa", "credit",
                    line.merchantReference, line.modificationMerchantReference,
                ])
            }
            (status, text) = try await postReport(client, stripe)
            reply = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(status == .ok && reply.breaks.isEmpty && reply.matched == 2 && reply.reportLines == 3, "\(text)")

            // The PAR names no batch by default: named with batch=; its status records are counted, not matched to items.
            let parHeader = [
                "Company Account", "Merchant Account", "Psp Reference", "Merchant Reference", "Payment Method", "Booking Date", "TimeZone",
                "Record Type", "Settlement Currency", "Payable (SC)", "Commission (SC)", "Markup (SC)", "Scheme Fees (SC)",
                "Interchange (SC)", "Payment Method Variant", "Modification Merchant Reference",
            ]
            var par = Self.csvRow(parHeader)
            for line in settled {
                func fee(_ m: Money?) -> String { m?.decimalString ?? "" }
                for type in ["Authorised", "SentForSettle"] {
                    par += Self.csvRow([
                        "C", line.merchantAccount, line.pspReference, line.merchantReference, "visa", "", "UTC", type, "", "", "", "", "", "", "", "",
                    ])
                }
                par += Self.csvRow([
                    "C", line.merchantAccount, line.pspReference, line.merchantReference, "visa", "", "UTC", "Settled", "USD",
                    line.netCredit!.decimalString,
                    fee(line.commission), fee(line.markup), fee(line.schemeFees), fee(line.interchange), line.paymentMethodVariant,
                    line.modificationMerchantReference,
                ])
            }
            (status, text) = try await postReport(client, par, query: "?format=adyen_par")
            #expect(status == .unprocessableContent, "\(text)")  // no batch named, none in the report
            (status, text) = try await postReport(client, par, query: "?format=adyen_par&batch=\(batchID)")
            reply = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(status == .ok && reply.breaks.isEmpty && reply.matched == 6 && reply.reportLines == 7, "\(text)")
            (status, text) = try await postReport(client, par, query: "?format=excel")
            #expect(status == .badRequest, "\(text)")

            // Every upload is its own reconciliation; the acquirer's stays first and clean.
            (status, text) = try await get(client, "/settlements/\(batchID)/reconciliation")
            let view = try WireJSON.decode(ReconciliationReply.self, from: text)
            #expect(view.reconciliations.count == 5 && view.reconciliations.first?.report == "acquirer")
            #expect(view.reconciliations.first?.breaks.isEmpty == true)
        }
    }
}
