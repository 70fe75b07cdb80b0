import LedgerCore
import LedgerMacros

import struct Foundation.Date

/// Writes and reads settlement reports as CSV in the widely used 23-column layout (domain §2).
///
/// Writing is deterministic: fixed column order, RFC 4180 quoting (a field is quoted only when it
/// holds a comma, a quote, CR or LF; quotes are doubled), CRLF line ends, amounts as exact decimal
/// strings from ``Money``, times as `yyyy-MM-dd HH:mm:ss` in the line's time zone. Reading accepts
/// what writing produces plus LF line ends, and returns typed lines for reconciliation.
@MemberwiseInit
public struct SettlementReportCSV: Sendable {
    /// The header row, in column order.
    public static let columns: [String] = [
        "Company Account", "Merchant Account", "Psp Reference", "Merchant Reference", "Payment Method",
        "Creation Date", "TimeZone", "Type", "Modification Reference", "Gross Currency", "Gross Debit (GC)",
        "Gross Credit (GC)", "Exchange Rate", "Net Currency", "Net Debit (NC)", "Net Credit (NC)",
        "Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)", "Payment Method Variant",
        "Modification Merchant Reference", "Batch Number",
    ]

    /// Time zones the reader knows by the name in the "TimeZone" column.
    public var timeZones: [ReportTimeZone] = [.utc]

    // MARK: Writing

    /// The report as CSV text, header first. Fails only for a time zone this writer does not know
    /// or an exchange rate that has no exact decimal form.
    public func write(_ lines: [SettlementReportLine]) throws(SettlementReportCSVError) -> String {
        Self.header + (try rows(lines, firstRow: 2))
    }

    /// The header row, with its line end.
    public static let header = columns.map(quote).joined(separator: ",") + "\r\n"

    /// `lines` as CSV rows (no header), the first being row `firstRow` of the report (for errors):
    /// a report written in parts is the header followed by each part's rows, byte for byte what
    /// ``write(_:)`` writes for all the lines at once.
    public func rows(_ lines: [SettlementReportLine], firstRow: Int) throws(SettlementReportCSVError) -> String {
        var out = ""
        for (index, line) in lines.enumerated() {
            out += try fields(of: line, row: firstRow + index).map(Self.quote).joined(separator: ",") + "\r\n"
        }
        return out
    }

    private func fields(of line: SettlementReportLine, row: Int) throws(SettlementReportCSVError) -> [String] {
        var date = ""
        if let creationDate = line.creationDate {
            guard let zone = timeZones.first(where: { $0.name == line.timeZone }) else {
                throw .unknownTimeZone(row: row, line.timeZone)
            }
            date = zone.format(creationDate)
        }
        var rate = ""
        if let exchangeRate = line.exchangeRate {
            guard let text = Self.decimalString(exchangeRate) else { throw .inexactRate(row: row, exchangeRate.description) }
            rate = text
        }
        func amount(_ money: Money?) -> String { money?.decimalString ?? "" }
        return [
            line.companyAccount, line.merchantAccount, line.pspReference, line.merchantReference, line.paymentMethod,
            date, line.timeZone, line.type.rawValue, line.modificationReference, line.grossCurrency?.code ?? "",
            amount(line.grossDebit), amount(line.grossCredit), rate, line.netCurrency?.code ?? "",
            amount(line.netDebit), amount(line.netCredit), amount(line.commission), amount(line.markup),
            amount(line.schemeFees), amount(line.interchange), line.paymentMethodVariant,
            line.modificationMerchantReference, String(line.batchNumber),
        ]
    }

    /// The field as written: quoted (``CSVWriter/quoted(_:)``, on bytes) only when it holds a comma, a quote, CR
    /// or LF; never neutralised for spreadsheets (the importer reads the report back byte for byte).
    static func quote(_ field: String) -> String {
        // The special characters are ASCII: a byte scan finds them (and CR LF, one Character, by its bytes).
        guard field.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }) else {
            return field
        }
        return CSVWriter.quoted(field)
    }

    /// `numerator/denominator` as a decimal string when the denominator divides a power of ten ≤ 10^18.
    static func decimalString(_ rate: Rate) -> String? {
        var scale: Int64 = 1
        var digits = 0
        while scale % rate.denominator != 0 {
            guard digits < 18 else { return nil }
            scale *= 10
            digits += 1
        }
        let (scaled, overflow) = rate.numerator.multipliedReportingOverflow(by: scale / rate.denominator)
        guard !overflow else { return nil }
        let whole = scaled / scale
        guard digits > 0 else { return String(whole) }
        let fraction = String(scaled % scale)
        return "\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
    }

    // MARK: Reading

    /// Parses CSV text (with its header row) into typed lines.
    public func parse(_ text: String) throws(SettlementReportCSVError) -> [SettlementReportLine] {
        let rows = try Self.records(text)
        guard let header = rows.first else { throw .missingHeader }
        guard header == Self.columns else { throw .unexpectedHeader(header) }
        return try lines(rows.dropFirst(), firstRow: 2)
    }

    /// Parses CSV rows without a header (a part of a report written with ``rows(_:firstRow:)``).
    public func parseRows(_ text: String, firstRow: Int) throws(SettlementReportCSVError) -> [SettlementReportLine] {
        try lines(try Self.records(text)[...], firstRow: firstRow)
    }

    private func lines(_ rows: ArraySlice<[String]>, firstRow: Int) throws(SettlementReportCSVError) -> [SettlementReportLine] {
        var lines: [SettlementReportLine] = []
        lines.reserveCapacity(rows.count)
        for (offset, row) in rows.enumerated() {
            lines.append(try line(from: row, row: firstRow + offset))
        }
        return lines
    }

    private func line(from f: [String], row: Int) throws(SettlementReportCSVError) -> SettlementReportLine {
        guard f.count == Self.columns.count else { throw .wrongFieldCount(row: row, f.count) }
        func currency(_ index: Int) throws(SettlementReportCSVError) -> Currency? {
            if f[index].isEmpty { return nil }
            guard let currency = Currency(code: f[index]) else { throw .invalidField(row: row, column: Self.columns[index], f[index]) }
            return currency
        }
        // Fees (columns 16…19) may be negative: a credited commission (docs/report-formats.md, "Numbers").
        func money(_ index: Int, _ currency: Currency?) throws(SettlementReportCSVError) -> Money? {
            if f[index].isEmpty { return nil }
            guard let currency, let value = try? Money(decimal: f[index], currency: currency), !value.isNegative || (16...19).contains(index) else {
                throw .invalidField(row: row, column: Self.columns[index], f[index])
            }
            return value
        }
        var creationDate: Date? = nil
        if !f[5].isEmpty {
            guard let zone = timeZones.first(where: { $0.name == f[6] }) else { throw .unknownTimeZone(row: row, f[6]) }
            guard let date = zone.parse(f[5]) else { throw .invalidField(row: row, column: Self.columns[5], f[5]) }
            creationDate = date
        }
        var rate: Rate? = nil
        if !f[12].isEmpty {
            guard let parsed = try? ReportNumber.exchangeRate(f[12]) else { throw .invalidField(row: row, column: Self.columns[12], f[12]) }
            rate = parsed
        }
        guard let batchNumber = Int(f[22]) else { throw .invalidField(row: row, column: Self.columns[22], f[22]) }
        let grossCurrency = try currency(9)
        let netCurrency = try currency(13)
        return SettlementReportLine(
            companyAccount: f[0],
            merchantAccount: f[1],
            pspReference: f[2],
            merchantReference: f[3],
            paymentMethod: f[4],
            creationDate: creationDate,
            timeZone: f[6],
            type: SettlementLineType(rawValue: f[7]),
            modificationReference: f[8],
            grossCurrency: grossCurrency,
            grossDebit: try money(10, grossCurrency),
            grossCredit: try money(11, grossCurrency),
            exchangeRate: rate,
            netCurrency: netCurrency,
            netDebit: try money(14, netCurrency),
            netCredit: try money(15, netCurrency),
            commission: try money(16, netCurrency),
            markup: try money(17, netCurrency),
            schemeFees: try money(18, netCurrency),
            interchange: try money(19, netCurrency),
            paymentMethodVariant: f[20],
            modificationMerchantReference: f[21],
            batchNumber: batchNumber
        )
    }

    static func records(_ text: String) throws(SettlementReportCSVError) -> [[String]] {
        do {
            return try CSVReader.records(text)
        } catch {
            throw .malformed(row: error.row, error.reason)
        }
    }
}

/// Why a settlement report CSV could not be written or read. Rows are 1-based, the header is row 1.
public enum SettlementReportCSVError: Error, Hashable, Sendable {
    case missingHeader
    case unexpectedHeader([String])
    case wrongFieldCount(row: Int, Int)
    case invalidField(row: Int, column: String, String)
    case unknownTimeZone(row: Int, String)
    case inexactRate(row: Int, String)
    case malformed(row: Int, String)
}
