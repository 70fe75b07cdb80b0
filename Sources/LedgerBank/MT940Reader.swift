import LedgerCore

/// Reads SWIFT MT940 customer statements (fields `:20:`, `:25:`, `:28C:`, `:60F:`/`:60M:`, `:61:` with its optional
/// `:86:`, `:62F:`/`:62M:`; `:21:`, `:64:`, `:65:` and a statement-level `:86:` are passed over), with or without the
/// SWIFT envelope (`{1:…}{2:…}{4:` … `-}`), several statements per file. Bytes are fed in chunks of any size; memory
/// holds one field. docs/bank-statements.md, "MT940", gives the field formats and where they were taken from.
public struct MT940Reader: Sendable {
    private var lines = BankLineStream()
    /// The field being read: its tag, its first line's content, its further lines, and the line it started on.
    private var field: (tag: String, lines: [String], line: Int)?
    private var statement = Statement()

    /// A statement being read.
    private struct Statement: Sendable {
        var reference: String?
        var account: String?
        var number: String?
        var sequence = ""
        var header: BankStatementHeader?
        var check: BalanceCheck?
        /// The `:61:` read last, waiting for the `:86:` that may follow it.
        var pending: BankEntry?
        var pendingLine = 0
        var entries = 0
    }

    public init() {}

    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes, _ onItem: (BankStatementItem) throws -> Void) throws
    where Bytes.Element == UInt8 {
        var stream = lines
        defer { lines = stream }
        try stream.feed(bytes) { line, number in try self.line(line, number: number, onItem) }
    }

    /// Ends the input: the last field is read, and a statement without its closing balance is refused.
    public mutating func finish(_ onItem: (BankStatementItem) throws -> Void) throws {
        var stream = lines
        defer { lines = stream }
        try stream.finish { line, number in try self.line(line, number: number, onItem) }
        try endField(onItem)
        try flushEntry(onItem)
        if statement.header != nil || statement.reference != nil {
            throw BankStatementError(
                place: "end of file",
                reason: "statement \(statement.number ?? statement.reference ?? "") has no closing balance (:62F:)"
            )
        }
    }

    private mutating func line(_ text: String, number: Int, _ onItem: (BankStatementItem) throws -> Void) throws {
        var text = Substring(text)
        // The SWIFT envelope: basic, application and user header blocks, then the text block `{4:`.
        if text.utf8.first == UInt8(ascii: "{") {
            try endField(onItem)
            guard let start = text.range(of: "{4:") else { return }
            text = text[start.upperBound...]
            if text.isEmpty { return }
        }
        if text.utf8.first == UInt8(ascii: "-") {  // the end of a message (`-}` in the envelope, `-` alone between messages)
            try endField(onItem)
            return
        }
        if let tag = Self.tag(text) {
            try endField(onItem)
            field = (tag, [String(text.dropFirst(tag.count + 2))], number)
        } else if field != nil {
            field!.lines.append(String(text))
        } else if !text.allSatisfy({ $0 == " " }) {
            throw BankStatementError(place: "line \(number)", reason: "text outside any field: \(String(text.prefix(40)).debugDescription)")
        }
    }

    /// A field's tag when a line starts one: `:` two digits, an optional letter, `:` (read as bytes: every line is
    /// asked, and the tag is ASCII).
    private static func tag(_ line: Substring) -> String? {
        var head: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
        var count = 0
        for byte in line.utf8.prefix(5) {
            switch count {
            case 0: head.0 = byte
            case 1: head.1 = byte
            case 2: head.2 = byte
            case 3: head.3 = byte
            default: head.4 = byte
            }
            count += 1
        }
        let colon = UInt8(ascii: ":")
        guard count >= 4, head.0 == colon, BankText.isDigit(head.1), BankText.isDigit(head.2) else { return nil }
        if head.3 == colon { return String(decoding: [head.1, head.2], as: UTF8.self) }
        if count == 5, BankText.isLetter(head.3), head.4 == colon { return String(decoding: [head.1, head.2, head.3], as: UTF8.self) }
        return nil
    }

    private mutating func endField(_ onItem: (BankStatementItem) throws -> Void) throws {
        guard let (tag, content, line) = field else { return }
        field = nil
        let place = "line \(line) (:\(tag):)"
        // The entries' fields (most of a file) read their lines themselves.
        let first = tag == "61" || tag == "86" ? "" : content[0].trimmingSpaces
        if tag != "86" { try flushEntry(onItem) }
        switch tag {
        case "20":
            if statement.header != nil || statement.reference != nil {
                throw BankStatementError(
                    place: place,
                    reason: "a new statement starts before statement \(statement.number ?? statement.reference ?? "") closed (:62F:)"
                )
            }
            statement.reference = first
        case "25":
            guard !first.isEmpty else { throw BankStatementError(place: place, reason: "the account is empty") }
            statement.account = first
        case "28C", "28":
            let parts = first.split(separator: "/", maxSplits: 1)
            guard let number = parts.first, number.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw BankStatementError(place: place, reason: "\(first.debugDescription) is not a statement number (5n[/5n])")
            }
            statement.number = String(number)
            statement.sequence = parts.count > 1 ? String(parts[1]) : ""
        case "60F", "60M":
            guard statement.header == nil else { throw BankStatementError(place: place, reason: "a second opening balance") }
            guard let account = statement.account else { throw BankStatementError(place: place, reason: "the statement has no account (:25:)") }
            let opening = try Self.balance(first, place: place)
            let header = BankStatementHeader(
                format: .mt940,
                account: account,
                statementID: statement.number ?? statement.reference ?? "",
                sequence: statement.sequence,
                currency: opening.amount.currency,
                opening: opening,
                closing: nil
            )
            statement.header = header
            statement.check = BalanceCheck(currency: opening.amount.currency)
            try onItem(.statement(header))
        case "61":
            guard let header = statement.header else {
                throw BankStatementError(place: place, reason: "a statement line before the opening balance (:60F:)")
            }
            statement.entries += 1
            statement.pending = try Self.entry(
                content,
                sequence: statement.entries,
                currency: header.currency,
                place: place
            )
            statement.pendingLine = line
        case "86":
            if statement.pending != nil {
                let text = content.joined()
                statement.pending!.remittanceInformation = text
                statement.pending!.endToEndIDs = Self.endToEndID(text).map { [$0] } ?? []
            }
        // Else the statement's own information to the account owner, after :62F:: not an entry's.
        case "62F", "62M":
            guard let header = statement.header, let check = statement.check else {
                throw BankStatementError(place: place, reason: "a closing balance without an opening balance (:60F:)")
            }
            let closing = try Self.balance(first, place: place)
            try onItem(
                .end(try check.finish(statement: header.statementID, opening: header.opening, closing: closing, place: place))
            )
            statement = Statement()
        default:
            break  // :21:, :13D:, :64:, :65: and others: nothing the ledger reads
        }
    }

    private mutating func flushEntry(_ onItem: (BankStatementItem) throws -> Void) throws {
        guard let entry = statement.pending else { return }
        statement.pending = nil
        try statement.check!.add(entry, place: "line \(statement.pendingLine) (:61:)")
        try onItem(.entry(entry))
    }

    /// `:60F:`/`:62F:`: `1!a6!n3!a15d`, D/C mark, date, currency, amount.
    static func balance(_ text: String, place: String) throws(BankStatementError) -> BankBalance {
        let chars = Array(text)
        guard chars.count >= 11, chars[0] == "C" || chars[0] == "D" else {
            throw BankStatementError(place: place, reason: "\(text.debugDescription) is not a balance (C or D, YYMMDD, currency, amount)")
        }
        guard let date = BankText.yymmdd(String(chars[1..<7])) else {
            throw BankStatementError(place: place, reason: "\(String(chars[1..<7]).debugDescription) is not a date (YYMMDD)")
        }
        let code = String(chars[7..<10])
        guard let currency = Currency(code: code) else {
            throw BankStatementError(place: place, reason: "\(code.debugDescription) is not a currency the ledger knows")
        }
        let amountText = String(chars[10...])
        guard let amount = BankText.amount(Substring(amountText), separator: ",", currency: currency) else {
            throw BankStatementError(place: place, reason: "\(amountText.debugDescription) is not an amount in \(code) (digits, a decimal comma)")
        }
        return BankBalance(amount: chars[0] == "D" ? amount.negated : amount, date: date)
    }

    /// `:61:`: `6!n[4!n]2a[1!a]15d1!a3!c16x[//16x]` and an optional second line `[34x]` of supplementary details. Read
    /// as bytes (the layout is ASCII up to the references, which are taken as they are).
    static func entry(_ lines: [String], sequence: Int, currency: Currency, place: String) throws(BankStatementError) -> BankEntry {
        let bytes = Array(lines[0].utf8)
        func refuse(_ reason: String) -> BankStatementError { BankStatementError(place: place, reason: reason) }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range.clamped(to: 0..<bytes.count)], as: UTF8.self) }
        func at(_ index: Int) -> UInt8? { index < bytes.count ? bytes[index] : nil }
        guard bytes.count >= 6, let valueDate = BankText.yymmdd(bytes: bytes[0..<6]) else {
            throw refuse("\(text(0..<6).debugDescription) is not a value date (YYMMDD)")
        }
        var i = 6
        var bookingDate: BusinessDate?
        if bytes.count >= 10, bytes[6..<10].allSatisfy(BankText.isDigit) {
            let month = Int(bytes[6] - 0x30) * 10 + Int(bytes[7] - 0x30)
            let day = Int(bytes[8] - 0x30) * 10 + Int(bytes[9] - 0x30)
            // The entry date has no year: the one nearest the value date (an entry booked on 31 December with value
            // 2 January belongs to the year before).
            bookingDate = [valueDate.year - 1, valueDate.year, valueDate.year + 1]
                .compactMap { BusinessDate(year: $0, month: month, day: day) }
                .min { abs($0.daysSinceEpoch - valueDate.daysSinceEpoch) < abs($1.daysSinceEpoch - valueDate.daysSinceEpoch) }
            guard bookingDate != nil else { throw refuse("\(text(6..<10).debugDescription) is not an entry date (MMDD)") }
            i = 10
        }
        let (c, d, r, e) = (UInt8(ascii: "C"), UInt8(ascii: "D"), UInt8(ascii: "R"), UInt8(ascii: "E"))
        let (first, second) = (at(i), at(i + 1))
        let markLength: Int
        let credit: Bool
        let reversal: Bool
        if first == r, second == c || second == d {
            (markLength, credit, reversal) = (2, second == d, true)  // RD, the reversal of a debit, is a credit
        } else if first == c || first == d {
            (markLength, credit, reversal) = (1, first == c, false)
        } else if first == e, second == c || second == d {
            throw refuse("\(text(i..<i + 2)) is an expected entry (MT942), not a booked one")
        } else {
            throw refuse("\(text(i..<i + 2).debugDescription) is not a debit/credit mark (C, D, RC, RD)")
        }
        i += markLength
        // The funds code: the third character of the currency code, when the bank writes it.
        if let byte = at(i), BankText.isLetter(byte) { i += 1 }
        let amountStart = i
        let comma = UInt8(ascii: ",")
        while let byte = at(i), BankText.isDigit(byte) || byte == comma { i += 1 }
        guard bytes[amountStart..<i].contains(comma),
            let magnitude = BankText.amount(bytes: bytes[amountStart..<i], separator: comma, currency: currency)
        else {
            throw refuse("\(text(amountStart..<i).debugDescription) is not an amount in \(currency.code) (digits, a decimal comma)")
        }
        guard bytes.count >= i + 4, [UInt8(ascii: "S"), UInt8(ascii: "N"), UInt8(ascii: "F")].contains(bytes[i]) else {
            throw refuse("\(text(i..<i + 4).debugDescription) is not a transaction type (S, N or F and 3 characters)")
        }
        let code = text(i..<i + 4)
        i += 4
        // The references: the account owner's, then `//` and the bank's.
        let slash = UInt8(ascii: "/")
        var split: Int?
        var k = i
        while k + 1 < bytes.count {
            if bytes[k] == slash && bytes[k + 1] == slash {
                split = k
                break
            }
            k += 1
        }
        let owner = text(i..<(split ?? bytes.count))
        let bank = split.map { text($0 + 2..<bytes.count) }
        guard !owner.isEmpty else { throw refuse("the reference for the account owner is empty (NONREF when none)") }
        return BankEntry(
            sequence: sequence,
            amount: credit ? magnitude : magnitude.negated,
            bookingDate: bookingDate,
            valueDate: valueDate,
            bankReference: bank?.trimmingSpaces.nonEmpty,
            ownerReference: owner == "NONREF" ? nil : owner.trimmingSpaces,
            endToEndIDs: [],
            remittanceInformation: lines.dropFirst().joined(separator: " "),
            transactionCode: code,
            reversal: reversal
        )
    }

    /// The `/EREF/` (end-to-end reference) of a structured `:86:` (the SEPA layout Dutch and German banks write),
    /// up to the next `/TAG/` (four capital letters between slashes). Read as bytes: every `:86:` is asked.
    static func endToEndID(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        let slash = UInt8(ascii: "/")
        let marker = Array("/EREF/".utf8)
        var start: Int?
        var index = 0
        while index + marker.count <= bytes.count {
            if bytes[index] == slash, bytes[index..<index + marker.count].elementsEqual(marker) {
                start = index + marker.count
                break
            }
            index += 1
        }
        guard let start else { return nil }
        var end = bytes.count
        index = start
        while index < bytes.count {
            if bytes[index] == slash, index + 5 < bytes.count, bytes[index + 5] == slash,
                bytes[index + 1..<index + 5].allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
            {
                end = index
                break
            }
            index += 1
        }
        return String(decoding: bytes[start..<end], as: UTF8.self).trimmingSpaces.nonEmpty
    }
}

extension String {
    var trimmingSpaces: String {
        var text = Substring(self)
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }

    var nonEmpty: String? { isEmpty ? nil : self }
}
