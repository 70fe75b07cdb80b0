import Configuration
import Foundation
import LedgerAcquirerAPI
import LedgerCore
import LedgerServices

/// Reading the settlement settings from the daemon's configuration (flags over environment over defaults).
extension SettlementSettings {
    static func read(from reader: ConfigReader) throws -> SettlementSettings {
        let zone = reader.string(forKey: "ledgerd.settlement.time.zone", default: "UTC").trimmingCharacters(in: .whitespaces)
        let time = reader.string(forKey: "ledgerd.settlement.cut.off", default: "22:00").trimmingCharacters(in: .whitespaces)
        guard let seconds = SettlementCutOff.parseTime(time) else {
            throw ConfigurationError("LEDGERD_SETTLEMENT_CUT_OFF must be a local time HH:MM such as 22:00, got \(time)")
        }
        guard let cutOff = SettlementCutOff(timeZoneIdentifier: zone, secondsAfterMidnight: seconds) else {
            throw ConfigurationError("LEDGERD_SETTLEMENT_TIME_ZONE: unknown time zone \(zone)")
        }
        var holidays: [BusinessDate] = []
        for text in reader.stringArray(forKey: "ledgerd.settlement.holidays", default: []) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let date = BusinessDate(trimmed) else {
                throw ConfigurationError("LEDGERD_SETTLEMENT_HOLIDAYS: \(trimmed) is not a date YYYY-MM-DD")
            }
            holidays.append(date)
        }
        let lag = try reader.integer(forKey: "ledgerd.settlement.funding.lag.days", default: 1)
        guard (0...10).contains(lag) else { throw ConfigurationError("LEDGERD_SETTLEMENT_FUNDING_LAG_DAYS must be 0…10") }
        let auto = try reader.boolean(forKey: "ledgerd.settlement.auto", default: false)
        // Both bounded by what the acquirer's wire takes (a page of at most 10,000 items; a report read at most 10,000 lines
        // at a time): a larger page is refused by the service, and a larger part would be answered short and leave the
        // report incomplete.
        let pageSize = try reader.integer(forKey: "ledgerd.settlement.page.size", default: AcquirerWire.maximumPageItems)
        guard (1...AcquirerWire.maximumPageItems).contains(pageSize) else {
            throw ConfigurationError("LEDGERD_SETTLEMENT_PAGE_SIZE must be 1…\(AcquirerWire.maximumPageItems)")
        }
        let partLines = try reader.integer(forKey: "ledgerd.settlement.report.part.lines", default: AcquirerWire.maximumReportLines)
        guard (1...AcquirerWire.maximumReportLines).contains(partLines) else {
            throw ConfigurationError("LEDGERD_SETTLEMENT_REPORT_PART_LINES must be 1…\(AcquirerWire.maximumReportLines)")
        }
        let account = reader.string(forKey: "ledgerd.settlement.merchant.account", default: SettlementSettings.defaultMerchantAccount)
            .trimmingCharacters(in: .whitespaces)
        guard !account.isEmpty, account.count <= 80, account.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "," }) else {
            throw ConfigurationError("LEDGERD_SETTLEMENT_MERCHANT_ACCOUNT must be 1…80 printable ASCII characters without spaces or commas")
        }
        var accounts: [String] = []
        var byCurrency: [Currency: String] = [:]
        for text in reader.stringArray(forKey: "ledgerd.settlement.merchant.accounts", default: []) {
            let entry = text.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty { continue }
            // `NAME` or `NAME:CUR+CUR`: the currencies whose captures settle under NAME.
            let parts = entry.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let other = parts[0]
            guard !other.isEmpty, other.count <= 80, other.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "," }) else {
                throw ConfigurationError(
                    "LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS: \(entry) must be NAME or NAME:CUR[+CUR…], NAME 1…80 printable ASCII characters without spaces"
                )
            }
            for code in parts.count == 2 ? parts[1].split(separator: "+", omittingEmptySubsequences: false).map(String.init) : [] {
                guard let currency = Currency(code: code) else {
                    throw ConfigurationError("LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS: \(entry): \"\(code)\" is not a currency code the ledger knows")
                }
                if let taken = byCurrency[currency], taken != other {
                    throw ConfigurationError(
                        "LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS: \(code) settles under \(taken) and \(other); name one account per currency"
                    )
                }
                byCurrency[currency] = other
            }
            if !accounts.contains(other) { accounts.append(other) }
        }
        let strict = try reader.boolean(forKey: "ledgerd.settlement.report.strict", default: false)
        var pricing: [PricingSchedule] = [.demo(currency: .usd)]
        if let path = reader.string(forKey: "ledgerd.settlement.pricing.file").flatMap({ $0.isEmpty ? nil : $0 }) {
            do {
                pricing = try LedgerJSON.decode([PricingSchedule].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw ConfigurationError("LEDGERD_SETTLEMENT_PRICING_FILE: \(path) is not a JSON list of fee schedules (\(error))")
            }
            guard !pricing.isEmpty, Set(pricing.map(\.currency)).count == pricing.count else {
                throw ConfigurationError("LEDGERD_SETTLEMENT_PRICING_FILE: \(path) needs one fee schedule per currency, at least one")
            }
        }
        return SettlementSettings(
            cutOff: cutOff,
            calendar: BusinessCalendar(holidays: holidays),
            fundingLagBusinessDays: lag,
            runAtCutOff: auto,
            submissionPageSize: pageSize,
            reportPartLines: partLines,
            merchantAccount: account,
            pricing: pricing,
            merchantAccounts: accounts,
            strictRecordTypes: strict,
            accountByCurrency: byCurrency
        )
    }
}
