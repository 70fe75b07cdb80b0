import LedgerMacros

// Importers of the acquirers' own settlement report formats: the Adyen Settlement
// Details Report, the Adyen Payment Accounting Report and Stripe's itemized payout reconciliation
// report, read line by line (``CSVRecordStream``) into the ledger's normalized report line
// (``SettlementReportLine``), whose `type` is the Adyen record type (Stripe's reporting categories
// are mapped to theirs). Columns are found by their header names, so optional and reserved columns
// may be present in any order. The columns read and their sources are in docs/report-formats.md.
// A record type no mapping knows is kept with its own name, and reconciliation reports it as an
// `unmapped_record` break: never dropped.

/// A settlement report's layout.
public enum SettlementReportFormat: String, Hashable, Sendable, CaseIterable {
    /// The ledger's acquirer model's 23-column layout (exactly its header, in order).
    case ledger
    /// Adyen's Settlement Details Report (`settlement_detail_report_batch_N.csv`).
    case adyenSettlementDetails = "adyen_sdr"
    /// Adyen's Payment Accounting Report (`payments_accounting_report_YYYY_MM_DD.csv`).
    case adyenPaymentAccounting = "adyen_par"
    /// Stripe's itemized payout reconciliation report (`payout_reconciliation.itemized.5`).
    case stripeItemizedPayout = "stripe_itemized"
    /// Checkout.com's Financial Actions by Payout ID report (`financial-actions_{EntityID}_{Payout Date}_{PayoutID}_1.csv`).
    case checkoutFinancialActions = "checkout_financial_actions"

    /// The columns a report of this format must have (by name; others may come too).
    public var requiredColumns: [String] {
        switch self {
        case .ledger, .adyenSettlementDetails:
            [
                "Merchant Account", "Psp Reference", "Merchant Reference", "Payment Method", "Type", "Modification Reference",
                "Gross Currency", "Gross Debit (GC)", "Gross Credit (GC)", "Net Currency", "Net Debit (NC)", "Net Credit (NC)",
                "Batch Number",
            ]
        case .adyenPaymentAccounting:
            ["Merchant Account", "Psp Reference", "Merchant Reference", "Record Type", "Settlement Currency", "Payable (SC)"]
        case .stripeItemizedPayout:
            ["balance_transaction_id", "currency", "gross", "fee", "net", "reporting_category", "source_id", "automatic_payout_id"]
        case .checkoutFinancialActions:
            [
                "Action Type", "Action ID", "Payment ID", "Processing Currency", "Holding Currency", "Payout ID", "Breakdown Type",
                "Processing Currency Amount", "Holding Currency Amount",
            ]
        }
    }

    /// The format a header comes closest to when none fits (most of its required columns present, at least half), with
    /// the required columns it lacks: a report with a column renamed or dropped is refused naming the column.
    public static func closest(header: [String]) -> (SettlementReportFormat, missing: [String])? {
        let names = Set(header.map(SettlementReportImporter.trim))
        let scored = Self.acquirers.map { format in
            (format, format.requiredColumns.filter { !names.contains($0) })
        }
        guard let best = scored.min(by: { $0.1.count < $1.1.count }), best.1.count * 2 <= best.0.requiredColumns.count else { return nil }
        return best
    }

    /// The acquirers' formats, in the order a header is tried against them.
    static let acquirers: [SettlementReportFormat] = [
        .adyenSettlementDetails, .adyenPaymentAccounting, .stripeItemizedPayout, .checkoutFinancialActions,
    ]

    /// Whether the format has a payout line of its own (Adyen SDR's MerchantPayout); the others'
    /// payout is the batch's (the ledger adds it when reconciling).
    public var hasPayoutLine: Bool { self == .ledger || self == .adyenSettlementDetails }

    /// The format a header row names: `ledger` for exactly the model's header, else the first format
    /// whose required columns are all present; nil when none fits.
    public static func detect(header: [String], ledgerColumns: [String]) -> SettlementReportFormat? {
        let trimmed = header.map(SettlementReportImporter.trim)
        if trimmed == ledgerColumns { return .ledger }
        let names = Set(trimmed)
        return acquirers.first { format in
            format.requiredColumns.allSatisfy(names.contains)
        }
    }
}

/// Why a report could not be imported. Rows are 1-based, the header is row 1.
public enum ReportImportError: Error, Hashable, Sendable, CustomStringConvertible {
    case missingHeader
    case unknownFormat([String])
    case missingColumns(SettlementReportFormat, [String])
    case invalidField(row: Int, column: String, String)
    case malformed(row: Int, String)
    case severalPayouts(String, String)
    /// A reference holding a character no reference may hold (``ReportReference/refusal(_:)``).
    case invalidReference(row: Int, column: String, String, reason: String)
    /// A number the report rules (``ReportNumber``) refuse: its row, column, value and why.
    case invalidNumber(row: Int, column: String, String, ReportNumber.Refusal)
    /// A row with fewer fields than the header (a truncated file): the first column missing and the last value read.
    case truncatedRow(row: Int, column: String, last: String, fields: Int, width: Int)
    /// A record type no mapping knows, in strict mode.
    case unknownRecordType(row: Int, column: String, String)
    /// A line naming a merchant account the ledger does not settle under.
    case unknownMerchantAccount(row: Int, String, known: [String])

    public var description: String {
        switch self {
        case .missingHeader: "the report is empty"
        case .unknownFormat(let header):
            "the header names no known format (Adyen SDR, Adyen PAR, Stripe itemized payout reconciliation, Checkout.com financial actions): \(header.prefix(6).joined(separator: ","))…"
        case .missingColumns(let format, let columns):
            "row 1 (the header): a \(format.rawValue) report needs the columns \(columns.map(\.debugDescription).joined(separator: ", ")), missing from its header"
        case .invalidField(let row, let column, let value): "row \(row): \(column) \(value.debugDescription) is not valid"
        case .malformed(let row, let reason): "row \(row): \(reason)"
        case .severalPayouts(let a, let b): "the report covers payouts \(a) and \(b): upload one payout at a time"
        case .invalidReference(let row, let column, let value, let reason): "row \(row): \(column) \(value.debugDescription) \(reason)"
        case .invalidNumber(let row, let column, let value, let refusal): "row \(row): \(column) \(value.debugDescription) \(refusal)"
        case .truncatedRow(let row, let column, let last, let fields, let width):
            "row \(row): \(column) is missing: the row ends after \(fields) of \(width) fields, at \(last.debugDescription) (a truncated row)"
        case .unknownRecordType(let row, let column, let value):
            "row \(row): \(column) \(value.debugDescription) is a record type no mapping knows (strict reading, LEDGERD_SETTLEMENT_REPORT_STRICT)"
        case .unknownMerchantAccount(let row, let account, let known):
            "row \(row): Merchant Account \(account.debugDescription) is not a merchant account of this ledger "
                + "(LEDGERD_SETTLEMENT_MERCHANT_ACCOUNTS: \(known.joined(separator: ", ")))"
        }
    }
}

/// Turns one report's rows into normalized lines, one row at a time.
public struct SettlementReportImporter: Sendable {
    public let format: SettlementReportFormat
    private let index: [String: Int]
    private let columns: [String]
    private let width: Int
    /// Strict reading: a record type no mapping knows is refused rather than kept as an `unmapped_record` break.
    public var strict = false
    /// The merchant accounts a line may name (nil: any); an empty Merchant Account is the batch's.
    public var merchantAccounts: Set<String>?
    /// Stripe and Checkout.com: the payout every row belongs to (the first row's), to find the batch.
    public internal(set) var payoutID: String?
    /// Adyen PAR: a batch number when the report carries the optional column.
    public private(set) var batchNumber: Int?
    /// Checkout.com: the financial action whose rows are being read (its line is handed over when the action ends).
    var pendingAction: CheckoutAction?

    /// Reads the header; `format` nil: detected from it.
    public init(header: [String], format: SettlementReportFormat? = nil, ledgerColumns: [String]) throws(ReportImportError) {
        let names = header.map(Self.trim)
        guard let chosen = format ?? SettlementReportFormat.detect(header: names, ledgerColumns: ledgerColumns) else {
            if let (closest, missing) = SettlementReportFormat.closest(header: names) { throw .missingColumns(closest, missing) }
            throw .unknownFormat(names)
        }
        let missing = chosen.requiredColumns.filter { !names.contains($0) }
        guard missing.isEmpty else { throw .missingColumns(chosen, missing) }
        var index: [String: Int] = [:]
        for (i, name) in names.enumerated() where index[name] == nil { index[name] = i }
        self.format = chosen
        self.index = index
        self.columns = names
        self.width = names.count
    }

    /// Whether a record is blank: a blank line (one empty field), empty fields only, or a byte order mark alone
    /// (a file that starts with a BOM and then blank lines). Exports carry blank lines before the header and
    /// between records; they are skipped (and still counted as rows, so a row number is the file's line).
    ///
    /// Read on the fields' UTF-8 bytes (spaces, and a byte order mark EF BB BF before them): every record of a report is
    /// asked, and trimming each field as text was 7% of an import's time (docs/report-formats.md, "Measure").
    public static func isBlank(_ record: [String]) -> Bool {
        record.allSatisfy { field in
            var bytes = field.utf8[...]
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
            return bytes.allSatisfy { $0 == UInt8(ascii: " ") }
        }
    }

    /// A header cell without a byte order mark or surrounding spaces.
    static func trim(_ name: String) -> String {
        var text = Substring(name)
        if text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
        return String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }

    /// The row as normalized lines: none for an empty row (a blank line), one for a record, two for
    /// a Stripe row whose fee was given back (the fee's return is a line of its own). `row` is
    /// 1-based (the header is 1).
    public mutating func lines(_ fields: [String], row: Int) throws(ReportImportError) -> [SettlementReportLine] {
        if Self.isBlank(fields) { return [] }
        if fields.count < width {
            throw .truncatedRow(row: row, column: columns[fields.count], last: fields.last ?? "", fields: fields.count, width: width)
        }
        guard fields.count == width else {
            throw .malformed(row: row, "\(fields.count) fields, the header has \(width): \(fields[width].debugDescription) is past its last column")
        }
        let lines: [SettlementReportLine]
        switch format {
        case .ledger, .adyenSettlementDetails: lines = [try settlementDetails(fields, row: row)]
        case .adyenPaymentAccounting: lines = [try paymentAccounting(fields, row: row)]
        case .stripeItemizedPayout: lines = try stripe(fields, row: row)
        case .checkoutFinancialActions: lines = try checkout(fields, row: row)
        }
        for line in lines {
            try Self.checkReferences(line, row: row)
            // Checkout.com's rows are checked as they are read (a line is handed over a row later).
            if strict, format != .checkoutFinancialActions, SettlementRecordKind(adyenType: line.type) == .unmapped {
                let column = format == .stripeItemizedPayout ? "reporting_category" : (format == .adyenPaymentAccounting ? "Record Type" : "Type")
                throw .unknownRecordType(row: row, column: column, text(fields, column))
            }
            if let known = merchantAccounts, !line.merchantAccount.isEmpty, !known.contains(line.merchantAccount) {
                throw .unknownMerchantAccount(row: row, line.merchantAccount, known: known.sorted())
            }
        }
        return lines
    }

    /// The lines still held after the last row (Checkout.com's last action); none for the other formats.
    public mutating func finish() -> [SettlementReportLine] {
        defer { pendingAction = nil }
        return pendingAction.map { [$0.finished] } ?? []
    }

    /// Refuses a line whose references (the ones a break is named by, and so its id, which the console puts in URLs)
    /// hold a character ``ReportReference/refusal(_:)`` refuses; the error names the row and the column (as the
    /// ledger's layout names it).
    static func checkReferences(_ line: SettlementReportLine, row: Int) throws(ReportImportError) {
        let references = [
            ("Psp Reference", line.pspReference), ("Merchant Reference", line.merchantReference),
            ("Modification Reference", line.modificationReference),
            ("Modification Merchant Reference", line.modificationMerchantReference),
        ]
        for (column, value) in references {
            if let reason = ReportReference.refusal(value) { throw .invalidReference(row: row, column: column, value, reason: reason) }
        }
    }

    // MARK: Field access

    func text(_ f: [String], _ column: String) -> String { index[column].map { f[$0] } ?? "" }

    func currency(_ f: [String], _ column: String, row: Int) throws(ReportImportError) -> Currency? {
        let code = text(f, column).uppercased()
        if code.isEmpty { return nil }
        guard let currency = Currency(code: code) else { throw .invalidField(row: row, column: column, code) }
        return currency
    }

    /// An amount column as the report writes it (``ReportNumber/money(_:currency:)``: `.11`, a sign on any
    /// amount): empty is nil; a value without a currency column to read it in is invalid.
    func money(_ f: [String], _ column: String, _ currency: Currency?, row: Int) throws(ReportImportError) -> Money? {
        let value = text(f, column)
        if value.utf8.allSatisfy({ $0 == UInt8(ascii: " ") }) { return nil }
        guard let currency else { throw .invalidField(row: row, column: column, value) }
        do { return try ReportNumber.money(value, currency: currency) } catch { throw .invalidNumber(row: row, column: column, value, error) }
    }

    /// A debit and a credit column as one pair of non-negative amounts: a signed debit of −5 is a credit of 5
    /// (what counts is credit − debit).
    private func pair(_ f: [String], debit: String, credit: String, _ currency: Currency?, row: Int) throws(ReportImportError) -> (Money?, Money?) {
        let d = try money(f, debit, currency, row: row)
        let c = try money(f, credit, currency, row: row)
        guard d?.isNegative == true || c?.isNegative == true, let currency else { return (d, c) }
        return Self.split(Money(minorUnits: (c?.minorUnits ?? 0) - (d?.minorUnits ?? 0), currency: currency))
    }

    /// A signed amount as (debit, credit) columns: a negative amount is a debit.
    static func split(_ signed: Money?) -> (debit: Money?, credit: Money?) {
        guard let signed else { return (nil, nil) }
        let magnitude = Money(minorUnits: signed.minorUnits.magnitude > UInt64(Int64.max) ? .max : abs(signed.minorUnits), currency: signed.currency)
        return signed.isNegative ? (magnitude, nil) : (nil, magnitude)
    }

    /// A record type in its documented spelling (`settled` is `Settled`); a type no mapping knows as written.
    static func recordType(_ text: String) -> SettlementLineType {
        SettlementLineType(rawValue: SettlementRecordKind.canonicalAdyenType(text) ?? text)
    }

    // MARK: Adyen Settlement Details Report

    private func settlementDetails(_ f: [String], row: Int) throws(ReportImportError) -> SettlementReportLine {
        let gross = try currency(f, "Gross Currency", row: row)
        let net = try currency(f, "Net Currency", row: row)
        var rate: Rate?
        let rateText = text(f, "Exchange Rate")
        if !rateText.isEmpty {
            do { rate = try ReportNumber.exchangeRate(rateText) } catch { throw .invalidNumber(row: row, column: "Exchange Rate", rateText, error) }
        }
        let (grossDebit, grossCredit) = try pair(f, debit: "Gross Debit (GC)", credit: "Gross Credit (GC)", gross, row: row)
        let (netDebit, netCredit) = try pair(f, debit: "Net Debit (NC)", credit: "Net Credit (NC)", net, row: row)
        let batchText = text(f, "Batch Number")
        guard let batch = Int(batchText) else { throw .invalidField(row: row, column: "Batch Number", batchText) }
        return SettlementReportLine(
            companyAccount: text(f, "Company Account"),
            merchantAccount: text(f, "Merchant Account"),
            pspReference: text(f, "Psp Reference"),
            merchantReference: text(f, "Merchant Reference"),
            paymentMethod: text(f, "Payment Method"),
            creationDate: nil,
            timeZone: text(f, "TimeZone"),
            type: Self.recordType(text(f, "Type")),
            modificationReference: text(f, "Modification Reference"),
            grossCurrency: gross,
            grossDebit: grossDebit,
            grossCredit: grossCredit,
            exchangeRate: rate,
            netCurrency: net,
            netDebit: netDebit,
            netCredit: netCredit,
            commission: try money(f, "Commission (NC)", net, row: row),
            markup: try money(f, "Markup (NC)", net, row: row),
            schemeFees: try money(f, "Scheme Fees (NC)", net, row: row),
            interchange: try money(f, "Interchange (NC)", net, row: row),
            paymentMethodVariant: text(f, "Payment Method Variant"),
            modificationMerchantReference: text(f, "Modification Merchant Reference"),
            batchNumber: batch
        )
    }

    // MARK: Adyen Payment Accounting Report

    /// The direction of a record's money for the merchant: +1 credited, −1 debited, 0 none.
    static func direction(_ kind: SettlementRecordKind) -> Int64 {
        switch kind {
        case .capture, .refundReversed, .chargebackReversed: 1
        case .refund, .chargeback, .secondChargeback: -1
        case .adjustment, .payout, .unmapped, .lifecycle: 0
        }
    }

    private mutating func paymentAccounting(_ f: [String], row: Int) throws(ReportImportError) -> SettlementReportLine {
        let type = Self.recordType(text(f, "Record Type"))
        let kind = SettlementRecordKind(adyenType: type)
        let settlement = try currency(f, "Settlement Currency", row: row)
        // PAR amounts are given as the booking shows them; the record type says which way the money went.
        let payable = try money(f, "Payable (SC)", settlement, row: row)
        // Fees keep their sign, as in the SDR: a charged fee is positive, a credited one (a commission given back) negative.
        var fees: [Money?] = []
        for column in ["Commission (SC)", "Markup (SC)", "Scheme Fees (SC)", "Interchange (SC)"] {
            fees.append(try money(f, column, settlement, row: row))
        }
        let feeTotal = fees.reduce(Int64(0)) { $0 + ($1?.minorUnits ?? 0) }
        var net = payable
        var gross: Money?
        let direction = Self.direction(kind)
        if let payable, direction != 0 {
            net = Money(minorUnits: direction * abs(payable.minorUnits), currency: payable.currency)
            gross = Money(minorUnits: net!.minorUnits + feeTotal, currency: payable.currency)
        } else if let payable {
            gross = Money(minorUnits: payable.minorUnits + feeTotal, currency: payable.currency)
        }
        let batchText = text(f, "Batch Number")
        if let batch = Int(batchText), batchNumber == nil { batchNumber = batch }
        let (grossDebit, grossCredit) = Self.split(gross)
        let (netDebit, netCredit) = Self.split(net)
        let modification = text(f, "Modification Reference")
        return SettlementReportLine(
            companyAccount: text(f, "Company Account"),
            merchantAccount: text(f, "Merchant Account"),
            pspReference: text(f, "Psp Reference"),
            merchantReference: text(f, "Merchant Reference"),
            paymentMethod: text(f, "Payment Method"),
            creationDate: nil,
            timeZone: text(f, "TimeZone"),
            type: type,
            // The PAR names the payment (Psp Reference), not the modification: lines are matched by ours
            // (Modification Merchant Reference), or by a Modification Reference column when the report has one.
            // A status record names neither, so it never counts as a second line of a capture or refund.
            modificationReference: kind == .lifecycle ? "" : modification,
            grossCurrency: gross == nil ? nil : settlement,
            grossDebit: grossDebit,
            grossCredit: grossCredit,
            exchangeRate: nil,
            netCurrency: net == nil ? nil : settlement,
            netDebit: netDebit,
            netCredit: netCredit,
            commission: fees[0],
            markup: fees[1],
            schemeFees: fees[2],
            interchange: fees[3],
            paymentMethodVariant: text(f, "Payment Method Variant"),
            modificationMerchantReference: kind == .lifecycle ? "" : text(f, "Modification Merchant Reference"),
            batchNumber: Int(batchText) ?? 0
        )
    }

    // MARK: Stripe itemized payout reconciliation

    /// Stripe's `reporting_category` → the Adyen record type the tally reads (documented mapping:
    /// ``SettlementRecordKind/stripe``). A category no mapping knows keeps its own name.
    public static func adyenType(stripeCategory category: String) -> SettlementLineType {
        if let type = SettlementRecordKind.stripeTypes[category.lowercased()] { return SettlementLineType(rawValue: type) }
        return SettlementLineType(rawValue: category.isEmpty ? "(empty reporting_category)" : category)
    }

    private mutating func stripe(_ f: [String], row: Int) throws(ReportImportError) -> [SettlementReportLine] {
        let payout = text(f, "automatic_payout_id")
        if let payoutID, !payout.isEmpty, payout != payoutID { throw .severalPayouts(payoutID, payout) }
        if payoutID == nil, !payout.isEmpty { payoutID = payout }
        let currency = try currency(f, "currency", row: row)
        guard let gross = try money(f, "gross", currency, row: row),
            let net = try money(f, "net", currency, row: row)
        else { throw .invalidField(row: row, column: "gross", text(f, "gross")) }
        var fee = try money(f, "fee", currency, row: row)
        var netUsed = net
        var feeReturned: Money?
        if let charged = fee, charged.isNegative {
            // A fee given back: the record's line carries no fee, and the fee's return is a line of its own.
            feeReturned = Money(minorUnits: -charged.minorUnits, currency: charged.currency)
            netUsed = gross
            fee = nil
        }
        let category = text(f, "reporting_category")
        var grossUsed = gross
        if SettlementRecordKind(stripeCategory: category) == .payout {
            // The payout row leaves the balance: a debit whatever sign the export writes (Stripe writes it negative).
            grossUsed = Money(minorUnits: -abs(gross.minorUnits), currency: gross.currency)
            netUsed = Money(minorUnits: -abs(netUsed.minorUnits), currency: netUsed.currency)
        }
        let (grossDebit, grossCredit) = Self.split(grossUsed)
        let (netDebit, netCredit) = Self.split(netUsed)
        // Ours, when the charge carried it in its metadata (the ledger sends its modification reference).
        let ours = text(f, "payment_metadata[modification_reference]")
        let line = SettlementReportLine(
            companyAccount: "",
            merchantAccount: text(f, "connected_account_id"),
            pspReference: text(f, "charge_id").isEmpty ? text(f, "source_id") : text(f, "charge_id"),
            merchantReference: text(f, "payment_metadata[order_id]"),
            // Stripe prices in one fee, not the contract's interchange++ split: a payment method the
            // contract does not name, so the line's fee is checked for conservation only.
            paymentMethod: text(f, "card_brand").isEmpty ? "stripe" : "stripe:" + text(f, "card_brand"),
            creationDate: nil,
            timeZone: "",
            type: Self.adyenType(stripeCategory: category),
            modificationReference: text(f, "source_id"),
            grossCurrency: currency,
            grossDebit: grossDebit,
            grossCredit: grossCredit,
            exchangeRate: nil,
            netCurrency: currency,
            netDebit: netDebit,
            netCredit: netCredit,
            commission: fee,
            markup: nil,
            schemeFees: nil,
            interchange: nil,
            paymentMethodVariant: text(f, "card_funding"),
            modificationMerchantReference: ours,
            batchNumber: 0
        )
        guard let feeReturned else { return [line] }
        var returned = line
        returned.type = SettlementLineType(rawValue: "MiscCosts")
        returned.modificationReference = line.modificationReference + ".fee"
        returned.modificationMerchantReference = ""
        (returned.grossDebit, returned.grossCredit) = (nil, feeReturned)
        (returned.netDebit, returned.netCredit) = (nil, feeReturned)
        returned.commission = nil
        return [line, returned]
    }
}

/// Reads a whole report text line by line through ``CSVRecordStream`` and ``SettlementReportImporter``,
/// handing each normalized line to `body` with its row number.
public enum SettlementReportImport {
    /// Imports `bytes` (fed in chunks of `chunk` bytes); returns the importer (format, Stripe payout,
    /// PAR batch) after the last line.
    @discardableResult
    public static func read<Bytes: Collection>(
        _ bytes: Bytes,
        format: SettlementReportFormat? = nil,
        ledgerColumns: [String],
        chunk: Int = 64 * 1024,
        _ body: (SettlementReportLine, Int) throws -> Void
    ) throws -> SettlementReportImporter where Bytes.Element == UInt8 {
        var stream = CSVRecordStream()
        var importer: SettlementReportImporter?
        var row = 0
        func take(_ record: [String]) throws {
            row += 1
            guard var current = importer else {
                if SettlementReportImporter.isBlank(record) { return }  // blank lines before the header
                importer = try SettlementReportImporter(header: record, format: format, ledgerColumns: ledgerColumns)
                return
            }
            for line in try current.lines(record, row: row) { try body(line, row) }
            importer = current
        }
        var start = bytes.startIndex
        do {
            while start != bytes.endIndex {
                let end = bytes.index(start, offsetBy: chunk, limitedBy: bytes.endIndex) ?? bytes.endIndex
                try stream.feed(bytes[start..<end], take)
                start = end
            }
            try stream.finish(take)
            if var last = importer {
                for line in last.finish() { try body(line, row) }
                importer = last
            }
        } catch let error as CSVReaderError {
            throw ReportImportError.malformed(row: error.row, error.reason)
        }
        guard let importer else { throw ReportImportError.missingHeader }
        return importer
    }
}

/// What a settlement report's reference may hold. A reference names a reconciliation break, whose id the console puts
/// in form actions and links: a `/`, `?` or `#` there re-aimed a form at another route before ids were percent-encoded
/// (security review 4, M3), and a control character has no business in a reference. Refused at import, so an uploaded
/// report cannot carry one into the ledger.
public enum ReportReference {
    /// Nil when `reference` is acceptable, else why not (a phrase after the value: "holds …").
    public static func refusal(_ reference: String) -> String? {
        for scalar in reference.unicodeScalars {
            switch scalar.value {
            case 0x2F, 0x3F, 0x23: return "holds \"\(scalar)\": a reference cannot hold /, ? or #"
            case 0x00...0x1F, 0x7F...0x9F:
                return "holds the control character U+\(String(scalar.value, radix: 16, uppercase: true)): a reference cannot hold one"
            default: continue
            }
        }
        return nil
    }
}
