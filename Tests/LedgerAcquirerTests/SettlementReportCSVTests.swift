import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import Testing

struct SettlementReportCSVTests {
    @Test("write → parse gives back the same typed lines")
    func roundTrip() throws {
        var scenario = try SettlementScenario()
        let report = try scenario.settle()
        let csv = SettlementReportCSV()
        let text = try csv.write(report.lines)
        #expect(try csv.parse(text) == report.lines)
        // Blended pricing and another time zone round-trip too.
        let zone = ReportTimeZone(name: "CET", secondsFromGMT: 3600)
        let blended = PricingSchedule(currency: .usd, model: .blended(commission: FeeComponent(rate: try Rate(decimal: "0.025"))))
        var other = try SettlementScenario(configuration: AcquirerModelConfiguration(pricing: [blended], cutOff: CutOff(timeZone: zone)))
        let otherReport = try other.settle()
        let zoned = SettlementReportCSV(for: other.state.configuration)
        #expect(try zoned.parse(zoned.write(otherReport.lines)) == otherReport.lines)
    }

    @Test("fixed header and column order, CRLF line ends, decimal strings from Money")
    func layout() throws {
        var scenario = try SettlementScenario()
        let report = try scenario.settle()
        let text = try SettlementReportCSV().write(report.lines)
        let rows = text.components(separatedBy: "\r\n")
        #expect(
            rows[0]
                == "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number"
        )
        #expect(rows.count == report.lines.count + 2 && rows.last == "")
        let first = rows[1].components(separatedBy: ",")
        #expect(first.count == 23)
        #expect(first[3] == "order-1" && first[4] == "visa" && first[5] == "2025-01-06 10:01:30" && first[6] == "UTC")
        #expect(first[7] == "Settled" && first[9] == "USD" && first[10] == "" && first[11] == "5.00" && first[12] == "1")
        #expect(first[14] == "" && first[15] == "4.88" && first[16] == "" && first[17] == "0.04" && first[18] == "0.01" && first[19] == "0.07")
        #expect(first[20] == "visacredit" && first[21] == "cap-order-1" && first[22] == String(report.batchNumber))
        let payout = rows[report.lines.count].components(separatedBy: ",")
        #expect(payout[7] == "MerchantPayout" && payout[14] == report.payout.amount.decimalString)
    }

    @Test("RFC 4180 quoting: commas, quotes and line breaks survive")
    func quoting() throws {
        var scenario = try SettlementScenario()
        var lines = try scenario.settle().lines
        lines[0].merchantReference = "order, \"special\"\r\nsecond line"
        lines[1].merchantAccount = "Store \"East\""
        lines[2].modificationMerchantReference = "a\nb,c"
        let csv = SettlementReportCSV()
        let text = try csv.write(lines)
        #expect(text.contains("\"order, \"\"special\"\"\r\nsecond line\""))
        #expect(try csv.parse(text) == lines)
        // LF-only files (as some tools save them) parse the same.
        let unix = text.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(try csv.parse(unix).count == lines.count)
    }

    @Test("malformed input is refused with the row it was found in")
    func errors() throws {
        let csv = SettlementReportCSV()
        #expect(throws: SettlementReportCSVError.missingHeader) { try csv.parse("") }
        #expect(throws: SettlementReportCSVError.self) { try csv.parse("a,b,c\r\n") }
        var scenario = try SettlementScenario()
        let text = try csv.write(scenario.settle().lines)
        let badAmount = text.replacingOccurrences(of: ",5.00,", with: ",5.001,")
        #expect(throws: SettlementReportCSVError.invalidField(row: 2, column: "Gross Credit (GC)", "5.001")) { try csv.parse(badAmount) }
        #expect(throws: SettlementReportCSVError.self) { try csv.parse(text + "\"unterminated") }
        #expect(throws: SettlementReportCSVError.unknownTimeZone(row: 2, "UTC")) { try SettlementReportCSV(timeZones: []).parse(text) }
    }
}
