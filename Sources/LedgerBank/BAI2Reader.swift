import LedgerCore

/// Reads BAI2 cash management files: `01` file header, `02` group header (as-of date, currency), `03` account
/// identifier (opening ledger `010`, closing ledger `015`), `16` transaction details with their fund types, `88`
/// continuations, and the `49`/`98`/`99` trailers whose control totals and record counts are checked. Each account of
/// each group is one statement. Amounts are integer minor units as written (no decimal point; the currency's minor
/// unit decides). Bytes are fed in chunks of any size; memory holds one logical record.
/// docs/bank-statements.md, "BAI2", gives the records and where they were taken from.
public struct BAI2Reader: Sendable {
    private var lines = BankLineStream()
    /// The logical record being read (a physical record and its `88` continuations): its text so far, the line it
    /// started on, and how many physical records it spans.
    private var record: (text: String, line: Int, physical: Int)?
    private var fileID: String?
    private var fileTotal: Int64 = 0
    private var fileRecords = 0
    private var fileGroups = 0
    private var group: Group?
    private var account: Account?
    private var ended = false

    private struct Group: Sendable {
        var asOf: BusinessDate
        var currency: Currency
        var total: Int64 = 0
        var records = 0
        var accounts = 0
    }

    private struct Account: Sendable {
        var header: BankStatementHeader
        var check: BalanceCheck
        var total: Int64 = 0
        var records = 0
    }

    public init() {}

    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes, _ onItem: (BankStatementItem) throws -> Void) throws
    where Bytes.Element == UInt8 {
        var stream = lines
        defer { lines = stream }
        try stream.feed(bytes) { line, number in try self.line(line, number: number, onItem) }
    }

    /// Ends the input: the file must have ended with its `99` trailer.
    public mutating func finish(_ onItem: (BankStatementItem) throws -> Void) throws {
        var stream = lines
        defer { lines = stream }
        try stream.finish { line, number in try self.line(line, number: number, onItem) }
        try endRecord(onItem)
        guard ended else {
            throw BankStatementError(place: "end of file", reason: "the file ends without its trailer (99): a truncated file")
        }
    }

    private mutating func line(_ text: String, number: Int, _ onItem: (BankStatementItem) throws -> Void) throws {
        if text.allSatisfy({ $0 == " " }) { return }
        if text.hasPrefix("88,") {
            guard var current = record else {
                throw BankStatementError(place: "line \(number)", reason: "a continuation (88) with no record before it")
            }
            // After a `/` the continuation starts the next field; without one it continues the text field.
            let body = text.dropFirst(3)
            if current.text.hasSuffix("/") {
                current.text = current.text.dropLast() + "," + body
            } else {
                current.text += " " + body
            }
            current.physical += 1
            record = current
            return
        }
        try endRecord(onItem)
        record = (text, number, 1)
    }

    private mutating func endRecord(_ onItem: (BankStatementItem) throws -> Void) throws {
        guard let (text, line, physical) = record else { return }
        record = nil
        var body = Substring(text)
        if body.last == "/" { body = body.dropLast() }
        let fields = body.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces }
        let code = fields[0]
        let place = "line \(line) (\(code))"
        func refuse(_ reason: String) -> BankStatementError { BankStatementError(place: place, reason: reason) }
        guard !ended else { throw refuse("a record after the file trailer (99)") }
        if fileID == nil, code != "01" { throw refuse("the file does not start with its header (01)") }
        fileRecords += physical
        group?.records += physical
        account?.records += physical
        switch code {
        case "01":
            guard fileID == nil else { throw refuse("a second file header") }
            guard fields.count >= 9, fields[8] == "2" else { throw refuse("not a BAI version 2 file (its ninth field is the version)") }
            fileID = fields[5]
        case "02":
            guard group == nil else { throw refuse("a group header (02) inside a group: its trailer (98) is missing") }
            guard fields.count >= 5, let asOf = BankText.yymmdd(fields[4]) else { throw refuse("the as-of date is not a date (YYMMDD)") }
            let code = fields.count > 6 && !fields[6].isEmpty ? fields[6] : "USD"  // BAI2: the default currency is USD
            guard let currency = Currency(code: code) else { throw refuse("\(code.debugDescription) is not a currency the ledger knows") }
            group = Group(asOf: asOf, currency: currency, records: physical)
        case "03":
            guard let group else { throw refuse("an account (03) outside a group (02)") }
            guard account == nil else { throw refuse("an account (03) inside an account: its trailer (49) is missing") }
            guard fields.count >= 3, !fields[1].isEmpty else { throw refuse("the account number is empty") }
            let currency: Currency
            if fields[2].isEmpty {
                currency = group.currency
            } else if let named = Currency(code: fields[2]) {
                currency = named
            } else {
                throw refuse("\(fields[2].debugDescription) is not a currency the ledger knows")
            }
            var opening: BankBalance?
            var closing: BankBalance?
            var total: Int64 = 0
            var rest = fields.dropFirst(3)
            // Summary and status items: type code, amount, item count, funds type (and its availability fields).
            while let type = rest.first, !(rest.count == 1 && type.isEmpty) {
                let amountText = rest.dropFirst().first ?? ""
                let funds = rest.dropFirst(3).first ?? ""
                rest = rest.dropFirst(4)
                rest = try Self.skipAvailability(funds, rest, refuse)
                guard !amountText.isEmpty else { continue }
                guard let amount = Self.signed(amountText) else { throw refuse("\(amountText.debugDescription) is not an amount (minor units)") }
                total = try Self.add(total, amount, refuse)
                let balance = BankBalance(amount: Money(minorUnits: amount, currency: currency), date: group.asOf)
                if type == "010" { opening = balance }
                if type == "015" { closing = balance }
            }
            let header = BankStatementHeader(
                format: .bai2,
                account: fields[1],
                statementID: "\(fileID ?? "")/\(group.asOf)",
                sequence: "",
                currency: currency,
                opening: opening,
                closing: closing
            )
            account = Account(header: header, check: BalanceCheck(currency: currency), total: total, records: physical)
            try onItem(.statement(header))
        case "16":
            guard var current = account else { throw refuse("a transaction (16) outside an account (03)") }
            guard fields.count >= 4 else { throw refuse("a transaction needs a type code, an amount and a funds type") }
            guard let type = Int(fields[1]), fields[1].count == 3 else { throw refuse("\(fields[1].debugDescription) is not a type code") }
            let credit: Bool
            switch type {
            case 100...399: credit = true
            case 400...699: credit = false
            default: throw refuse("type code \(fields[1]) is not a transaction detail code (credits 100–399, debits 400–699)")
            }
            guard let amount = BankText.integer(fields[2]) else {
                throw refuse("\(fields[2].debugDescription) is not an amount (minor units, no sign)")
            }
            var rest = fields.dropFirst(4)
            var valueDate = group!.asOf
            switch fields[3] {
            case "V":  // value dated: YYMMDD, then a time
                guard let date = rest.first.flatMap(BankText.yymmdd) else { throw refuse("a value-dated (V) transaction without its value date") }
                valueDate = date
                rest = rest.dropFirst(2)
            default:
                rest = try Self.skipAvailability(fields[3], rest, refuse)
            }
            current.total = try Self.add(current.total, amount, refuse)
            let bank = rest.first.flatMap(\.nonEmpty)
            let customer = rest.dropFirst().first.flatMap(\.nonEmpty)
            let text = rest.dropFirst(2).joined(separator: ",").trimmingSpaces
            let entry = BankEntry(
                sequence: current.check.entries + 1,
                amount: Money(minorUnits: credit ? amount : -amount, currency: current.header.currency),
                bookingDate: group!.asOf,
                valueDate: valueDate,
                bankReference: bank,
                ownerReference: customer,
                endToEndIDs: [],
                remittanceInformation: text,
                transactionCode: fields[1],
                reversal: false
            )
            try current.check.add(entry, place: place)
            account = current
            try onItem(.entry(entry))
        case "49":
            guard let current = account else { throw refuse("an account trailer (49) outside an account") }
            guard fields.count >= 3, let total = Self.signed(fields[1]), let count = Int(fields[2]) else {
                throw refuse("an account trailer needs its control total and record count")
            }
            guard total == current.total else {
                throw refuse("the account control total is \(total), the account's amounts add up to \(current.total)")
            }
            guard count == current.records else { throw refuse("the account has \(current.records) records, its trailer says \(count)") }
            let header = current.header
            try onItem(
                .end(
                    try current.check.finish(
                        statement: "\(header.account) \(header.statementID)",
                        opening: header.opening,
                        closing: header.closing,
                        place: place
                    )
                )
            )
            group!.total = try Self.add(group!.total, total, refuse)
            group!.accounts += 1
            account = nil
        case "98":
            guard let current = group, account == nil else { throw refuse("a group trailer (98) outside a group, or inside an account") }
            guard fields.count >= 4, let total = Self.signed(fields[1]), let accounts = Int(fields[2]), let count = Int(fields[3]) else {
                throw refuse("a group trailer needs its control total, account count and record count")
            }
            guard total == current.total else { throw refuse("the group control total is \(total), its accounts' totals add up to \(current.total)") }
            guard accounts == current.accounts else { throw refuse("the group has \(current.accounts) accounts, its trailer says \(accounts)") }
            guard count == current.records else { throw refuse("the group has \(current.records) records, its trailer says \(count)") }
            fileTotal = try Self.add(fileTotal, total, refuse)
            fileGroups += 1
            group = nil
        case "99":
            guard group == nil else { throw refuse("the file trailer (99) inside a group: its trailer (98) is missing") }
            guard fields.count >= 4, let total = Self.signed(fields[1]), let groups = Int(fields[2]), let count = Int(fields[3]) else {
                throw refuse("the file trailer needs its control total, group count and record count")
            }
            guard total == fileTotal else { throw refuse("the file control total is \(total), its groups' totals add up to \(fileTotal)") }
            guard groups == fileGroups else { throw refuse("the file has \(fileGroups) groups, its trailer says \(groups)") }
            guard count == fileRecords else { throw refuse("the file has \(fileRecords) records, its trailer says \(count)") }
            ended = true
        default:
            throw refuse("\(code.debugDescription) is not a BAI2 record code")
        }
    }

    /// Passes over the availability fields a funds type carries: `S` three amounts, `D` a count and that many day/amount
    /// pairs, `V` a date and a time; `0`, `1`, `2`, `Z` and an empty type none.
    private static func skipAvailability(
        _ funds: String,
        _ rest: ArraySlice<String>,
        _ refuse: (String) -> BankStatementError
    ) throws(BankStatementError) -> ArraySlice<String> {
        switch funds {
        case "", "0", "1", "2", "Z": return rest
        case "S": return rest.dropFirst(3)
        case "V": return rest.dropFirst(2)
        case "D":
            guard let count = rest.first.flatMap({ Int($0) }), count >= 0, count <= 100 else {
                throw refuse("a distributed availability (D) without its number of distributions")
            }
            return rest.dropFirst(1 + 2 * count)
        default: throw refuse("\(funds.debugDescription) is not a funds type (0, 1, 2, S, V, D, Z)")
        }
    }

    /// A summary or trailer amount: minor units with an optional sign.
    private static func signed(_ text: String) -> Int64? {
        if text.hasPrefix("-") { return BankText.integer(text.dropFirst()).map { -$0 } }
        if text.hasPrefix("+") { return BankText.integer(text.dropFirst()) }
        return BankText.integer(text)
    }

    private static func add(_ a: Int64, _ b: Int64, _ refuse: (String) -> BankStatementError) throws(BankStatementError) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw refuse("the control total is out of range") }
        return sum
    }
}
