import LedgerCore

// The ledger's normalized bank statement: what camt.053/054, MT940 and BAI2 all say, in the ledger's terms (integer
// minor units, calendar days, signed amounts). Each reader hands over a statement's header, then its entries one at a
// time, then its end (``BankStatementItem``), so a file of any length is read with memory for one entry; the
// statement's balance rule (opening + entries = closing) is checked by ``BalanceCheck`` when the statement ends.
// The formats, their sources and the rules are in docs/bank-statements.md.

/// A bank statement's file format.
public enum BankStatementFormat: String, Hashable, Sendable, CaseIterable, Codable {
    /// ISO 20022 BankToCustomerStatement (camt.053, any version 001.02 … 001.13): end-of-day statement.
    case camt053 = "camt.053"
    /// ISO 20022 BankToCustomerDebitCreditNotification (camt.054): credit and debit notifications.
    case camt054 = "camt.054"
    /// SWIFT MT940 customer statement message.
    case mt940
    /// BAI2 (Bank Administration Institute, version 2) cash management balance report.
    case bai2

    /// The format a file's first bytes name, or nil: an XML document is camt (its namespace or root element says
    /// which), a first record `01,` is BAI2, a `:20:` tag (possibly after a SWIFT block header) is MT940.
    public static func detect(prefix: [UInt8]) -> BankStatementFormat? {
        var bytes = prefix[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        let trimmed = text.drop { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
        if trimmed.hasPrefix("<") {
            if text.contains("camt.054") || text.contains("BkToCstmrDbtCdtNtfctn") { return .camt054 }
            if text.contains("camt.053") || text.contains("BkToCstmrStmt") { return .camt053 }
            return nil
        }
        if trimmed.hasPrefix("01,") { return .bai2 }
        if trimmed.hasPrefix(":20:") || trimmed.hasPrefix("{1:") || text.contains("\n:20:") || text.contains("\r\n:20:") {
            return .mt940
        }
        return nil
    }
}

/// A statement's opening or closing balance: signed (a debit balance is negative), on a day.
public struct BankBalance: Hashable, Sendable, Codable {
    public var amount: Money
    public var date: BusinessDate?

    public init(amount: Money, date: BusinessDate?) {
        self.amount = amount
        self.date = date
    }
}

/// What a statement says about itself before its entries.
public struct BankStatementHeader: Hashable, Sendable, Codable {
    public var format: BankStatementFormat
    /// The account statemented: an IBAN, a bank's own account number (MT940 `:25:`, BAI2 `03`).
    public var account: String
    /// The statement's identity at its bank: camt `Stmt/Id` (`Ntfctn/Id`), MT940 `:28C:` statement number, BAI2 the
    /// file id and as-of date. With ``account`` and ``sequence`` it names the statement (the same statement in
    /// another file is the same).
    public var statementID: String
    /// The statement's sequence: camt `ElctrncSeqNb` (or `LglSeqNb`), MT940 `:28C:`'s sequence number; "" when none.
    public var sequence: String
    public var currency: Currency
    public var opening: BankBalance?
    /// The closing balance when it comes before the entries (camt, BAI2); MT940's comes after (``BankStatementEnd``).
    public var closing: BankBalance?

    public init(
        format: BankStatementFormat,
        account: String,
        statementID: String,
        sequence: String,
        currency: Currency,
        opening: BankBalance?,
        closing: BankBalance?
    ) {
        self.format = format
        self.account = account
        self.statementID = statementID
        self.sequence = sequence
        self.currency = currency
        self.opening = opening
        self.closing = closing
    }
}

/// One booked (or, camt, pending) movement on the account.
public struct BankEntry: Hashable, Sendable, Codable {
    /// 1-based position in its statement.
    public var sequence: Int
    /// Signed: a credit (money in) is positive, a debit negative; a reversal carries the direction it moves now.
    public var amount: Money
    public var bookingDate: BusinessDate?
    public var valueDate: BusinessDate?
    /// The bank's own reference (camt `AcctSvcrRef`, MT940 `//` reference, BAI2 bank reference).
    public var bankReference: String?
    /// The account owner's reference (MT940 `:61:` subfield 7, BAI2 customer reference, camt `NtryRef`).
    public var ownerReference: String?
    /// The payers' end-to-end ids (camt `TxDtls/Refs/EndToEndId`, MT940 `/EREF/` in `:86:`), one per transaction
    /// of a batch-booked entry.
    public var endToEndIDs: [String]
    /// Remittance information (camt `RmtInf/Ustrd` and `Strd/CdtrRefInf/Ref`, MT940 `:86:`, BAI2 text with its `88`
    /// continuations), lines joined.
    public var remittanceInformation: String
    /// The bank's transaction code (camt `BkTxCd`, MT940 `N…`/`S…`/`F…`, BAI2 type code).
    public var transactionCode: String
    /// Whether the bank marks the entry as a reversal (camt `RvslInd`, MT940 `RC`/`RD`).
    public var reversal: Bool
    /// Booked entries count towards the balance; camt's pending (`PDNG`) and information-only entries do not.
    public var booked: Bool

    public init(
        sequence: Int,
        amount: Money,
        bookingDate: BusinessDate?,
        valueDate: BusinessDate?,
        bankReference: String?,
        ownerReference: String?,
        endToEndIDs: [String],
        remittanceInformation: String,
        transactionCode: String,
        reversal: Bool,
        booked: Bool = true
    ) {
        self.sequence = sequence
        self.amount = amount
        self.bookingDate = bookingDate
        self.valueDate = valueDate
        self.bankReference = bankReference
        self.ownerReference = ownerReference
        self.endToEndIDs = endToEndIDs
        self.remittanceInformation = remittanceInformation
        self.transactionCode = transactionCode
        self.reversal = reversal
        self.booked = booked
    }
}

/// A statement's end: its closing balance (when it has one) and what its entries came to.
public struct BankStatementEnd: Hashable, Sendable, Codable {
    public var closing: BankBalance?
    public var entries: Int
    /// The booked entries' sum (signed).
    public var net: Money

    public init(closing: BankBalance?, entries: Int, net: Money) {
        self.closing = closing
        self.entries = entries
        self.net = net
    }
}

/// What a reader hands over, in order: a statement's header, its entries, its end; a file may hold several statements.
public enum BankStatementItem: Hashable, Sendable {
    case statement(BankStatementHeader)
    case entry(BankEntry)
    case end(BankStatementEnd)
}

/// Why a statement file was refused: its place (line, or element path for camt) and what is wrong there.
public struct BankStatementError: Error, Hashable, Sendable, CustomStringConvertible {
    /// "line 12", "Stmt 1 Ntry 3 Amt": where a clerk finds it.
    public let place: String
    public let reason: String
    /// Set when the refusal is the balance rule's: the statement's opening + entries minus its closing.
    public let difference: Money?

    public init(place: String, reason: String, difference: Money? = nil) {
        self.place = place
        self.reason = reason
        self.difference = difference
    }

    public var description: String { place.isEmpty ? reason : "\(place): \(reason)" }
}

/// The statement's balance rule, kept as entries pass: opening + booked entries = closing, refused naming the
/// difference. A statement with no opening or no closing balance (a camt.054 notification, an intraday BAI2 account
/// without ledger balances) has nothing to check.
public struct BalanceCheck: Sendable {
    public let currency: Currency
    public private(set) var net: Int64 = 0
    public private(set) var entries = 0

    public init(currency: Currency) { self.currency = currency }

    /// Adds an entry; refused when its currency is not the statement's or the sum leaves Int64.
    public mutating func add(_ entry: BankEntry, place: String) throws(BankStatementError) {
        guard entry.amount.currency == currency else {
            throw BankStatementError(
                place: place,
                reason: "the entry is in \(entry.amount.currency.code), the statement in \(currency.code)"
            )
        }
        entries += 1
        guard entry.booked else { return }
        let (sum, overflow) = net.addingReportingOverflow(entry.amount.minorUnits)
        guard !overflow else { throw BankStatementError(place: place, reason: "the entries' sum is out of range") }
        net = sum
    }

    /// Checks opening + net = closing when both are known, and returns the statement's end.
    public func finish(
        statement: String,
        opening: BankBalance?,
        closing: BankBalance?,
        place: String
    ) throws(BankStatementError) -> BankStatementEnd {
        if let opening, let closing {
            for balance in [opening, closing] where balance.amount.currency != currency {
                throw BankStatementError(
                    place: place,
                    reason: "statement \(statement) has a balance in \(balance.amount.currency.code), its entries in \(currency.code)"
                )
            }
            let (expected, overflow) = opening.amount.minorUnits.addingReportingOverflow(net)
            guard !overflow else { throw BankStatementError(place: place, reason: "the balances are out of range") }
            if expected != closing.amount.minorUnits {
                let difference = Money(minorUnits: expected &- closing.amount.minorUnits, currency: currency)
                throw BankStatementError(
                    place: place,
                    reason: "statement \(statement) does not add up: opening \(opening.amount.decimalString) + \(entries) entries "
                        + "\(Money(minorUnits: net, currency: currency).decimalString) = \(Money(minorUnits: expected, currency: currency).decimalString), "
                        + "but its closing balance is \(closing.amount.decimalString) (a difference of \(difference))",
                    difference: difference
                )
            }
        }
        return BankStatementEnd(closing: closing, entries: entries, net: Money(minorUnits: net, currency: currency))
    }
}

/// Splits bytes fed in chunks of any size into lines (LF, CR LF or CR), each at most ``maximumLength`` bytes, so a
/// file without line breaks cannot grow memory. Each line must be UTF-8.
public struct BankLineStream: Sendable {
    /// The longest line of a statement file (MT940 lines are at most 65 characters, BAI2 records at most a few hundred).
    public static let maximumLength = 64 * 1024
    private let maximumLength: Int
    private var line: [UInt8] = []
    private var pendingCR = false
    /// Lines handed over so far; each is handed over with its 1-based number.
    public private(set) var lines = 0

    public init(maximumLength: Int = BankLineStream.maximumLength) { self.maximumLength = maximumLength }

    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes, _ onLine: (String, Int) throws -> Void) throws
    where Bytes.Element == UInt8 {
        // A chunk in one piece (a file's `Data`): scanned as a buffer, each line copied once.
        if try bytes.withContiguousStorageIfAvailable({ buffer in try feed(buffer: buffer, onLine) }) != nil { return }
        for byte in bytes {
            if pendingCR {
                pendingCR = false
                if byte == 0x0A { continue }
            }
            if byte == 0x0A || byte == 0x0D {
                pendingCR = byte == 0x0D
                try emit(onLine)
                continue
            }
            guard line.count < maximumLength else {
                throw BankStatementError(place: "line \(lines + 1)", reason: "is longer than \(maximumLength) bytes")
            }
            line.append(byte)
        }
    }

    /// ``feed(_:_:)`` on a buffer: the same lines, breaks and limit, found by index rather than byte by byte.
    private mutating func feed(buffer: UnsafeBufferPointer<UInt8>, _ onLine: (String, Int) throws -> Void) throws {
        var index = 0
        if pendingCR, let first = buffer.first {
            pendingCR = false
            if first == 0x0A { index = 1 }
        }
        var start = index
        while index < buffer.count {
            let byte = buffer[index]
            index += 1
            guard byte == 0x0A || byte == 0x0D else { continue }
            try take(UnsafeBufferPointer(rebasing: buffer[start..<index - 1]))
            try emit(onLine)
            if byte == 0x0D {
                if index == buffer.count {
                    pendingCR = true
                } else if buffer[index] == 0x0A {
                    index += 1
                }
            }
            start = index
        }
        try take(UnsafeBufferPointer(rebasing: buffer[start..<buffer.count]))
    }

    /// Adds a piece of the current line, refused once the line is longer than the limit.
    private mutating func take(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        guard line.count + bytes.count <= maximumLength else {
            throw BankStatementError(place: "line \(lines + 1)", reason: "is longer than \(maximumLength) bytes")
        }
        line.append(contentsOf: bytes)
    }

    /// Ends the input: a last line without its break is handed over.
    public mutating func finish(_ onLine: (String, Int) throws -> Void) throws {
        if !line.isEmpty { try emit(onLine) }
    }

    private mutating func emit(_ onLine: (String, Int) throws -> Void) throws {
        var bytes = line[...]
        if lines == 0, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw BankStatementError(place: "line \(lines + 1)", reason: "is not UTF-8")
        }
        line.removeAll(keepingCapacity: true)
        lines += 1
        try onLine(text, lines)
    }
}

/// Number and date rules the readers share.
enum BankText {
    /// An unsigned decimal amount with `separator` (`.` camt, `,` MT940) into minor units: at most the currency's
    /// fraction digits, never rounded; MT940 allows a trailing separator (`100,`).
    static func amount(_ text: Substring, separator: Character, currency: Currency) -> Money? {
        let parts = text.split(separator: separator, maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        guard !whole.isEmpty, whole.count <= 18, whole.allSatisfy({ $0.isASCII && $0.isNumber }),
            fraction.allSatisfy({ $0.isASCII && $0.isNumber }), fraction.count <= currency.minorUnitDigits
        else { return nil }
        return integer(whole + fraction + String(repeating: "0", count: currency.minorUnitDigits - fraction.count))
            .map { Money(minorUnits: $0, currency: currency) }
    }

    /// ``amount(_:separator:currency:)`` on bytes (MT940's reader reads its lines as bytes).
    static func amount(bytes: ArraySlice<UInt8>, separator: UInt8, currency: Currency) -> Money? {
        let split = bytes.firstIndex(of: separator)
        let whole = bytes[..<(split ?? bytes.endIndex)]
        let fraction = split.map { bytes[($0 + 1)...] } ?? []
        // At most 18 digits in all, as the text form's rule: never past Int64.
        guard !whole.isEmpty, whole.count + currency.minorUnitDigits <= 18, whole.allSatisfy(isDigit), fraction.allSatisfy(isDigit),
            fraction.count <= currency.minorUnitDigits
        else { return nil }
        var units: Int64 = 0
        for byte in whole { units = units * 10 + Int64(byte - 0x30) }
        for index in 0..<currency.minorUnitDigits {
            units = units * 10 + (index < fraction.count ? Int64(fraction[fraction.startIndex + index] - 0x30) : 0)
        }
        return Money(minorUnits: units, currency: currency)
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }

    /// ``yymmdd(_:)`` on bytes.
    static func yymmdd(bytes: ArraySlice<UInt8>) -> BusinessDate? {
        guard bytes.count == 6, bytes.allSatisfy(isDigit) else { return nil }
        let digits = bytes.map { Int($0 - 0x30) }
        let yy = digits[0] * 10 + digits[1]
        return BusinessDate(year: yy < 80 ? 2000 + yy : 1900 + yy, month: digits[2] * 10 + digits[3], day: digits[4] * 10 + digits[5])
    }

    /// Digits into an Int64, nil when not all digits or out of range.
    static func integer<S: StringProtocol>(_ digits: S) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits)
    }

    /// `YYMMDD` (SWIFT and BAI2): years 00–79 are 20xx, 80–99 19xx.
    static func yymmdd<S: StringProtocol>(_ text: S) -> BusinessDate? {
        guard text.count == 6, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        let digits = Array(text).map { $0.wholeNumberValue! }
        let yy = digits[0] * 10 + digits[1]
        return BusinessDate(
            year: yy < 80 ? 2000 + yy : 1900 + yy,
            month: digits[2] * 10 + digits[3],
            day: digits[4] * 10 + digits[5]
        )
    }
}

extension Money {
    /// The amount with its sign turned (a debit): the readers' amounts have at most 18 digits, so never Int64.min.
    var negated: Money { Money(minorUnits: -minorUnits, currency: currency) }
}
