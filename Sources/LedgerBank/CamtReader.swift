import Foundation
import LedgerCore

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads ISO 20022 bank-to-customer statements (camt.053 `BkToCstmrStmt/Stmt`) and debit/credit notifications
/// (camt.054 `BkToCstmrDbtCdtNtfctn/Ntfctn`) of any version (001.02 writes `<Sts>BOOK</Sts>`, 001.08 and later
/// `<Sts><Cd>BOOK</Cd></Sts>`; both are read) with Foundation's XMLParser, a streaming (SAX) parser: memory holds one
/// entry. A document type declaration is refused before parsing (``DoctypeScan``): camt documents have none, and
/// entities are how an XML bomb (a billion laughs) and an external entity (a file read) get in.
/// docs/bank-statements.md, "camt", gives the elements read and where they were taken from.
public enum CamtReader {
    /// The longest text one element may hold (a remittance line is at most 140 characters).
    public static let maximumText = 16 * 1024
    /// The deepest element nesting read (camt's deepest paths are under 15 levels).
    public static let maximumDepth = 40

    /// Reads a camt document in a file: scanned for a document type declaration first, then parsed streaming.
    public static func read(path: String, _ onItem: (BankStatementItem) throws -> Void) throws {
        guard let scanStream = InputStream(fileAtPath: path) else {
            throw BankStatementError(place: "", reason: "the file cannot be read")
        }
        try DoctypeScan.check(scanStream)
        guard let stream = InputStream(fileAtPath: path) else {
            throw BankStatementError(place: "", reason: "the file cannot be read")
        }
        try parse(XMLParser(stream: stream), onItem)
    }

    /// Reads a camt document held in memory (tests, small uploads).
    public static func read(bytes: [UInt8], _ onItem: (BankStatementItem) throws -> Void) throws {
        var scan = DoctypeScan()
        try scan.feed(bytes)
        try parse(XMLParser(data: Data(bytes)), onItem)
    }

    private static func parse(_ parser: XMLParser, _ onItem: (BankStatementItem) throws -> Void) throws {
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        try withoutActuallyEscaping(onItem) { onItem in
            let delegate = CamtDelegate(onItem: onItem)
            parser.delegate = delegate
            let finished = parser.parse()
            parser.delegate = nil
            if let error = delegate.failure { throw error }
            guard finished else {
                let error = parser.parserError.map { "\($0.localizedDescription)" } ?? "not well-formed"
                throw BankStatementError(
                    place: "line \(parser.lineNumber)",
                    reason: "the XML document is malformed (\(error))"
                )
            }
            guard delegate.message != nil else {
                throw BankStatementError(place: "", reason: "the document is not a camt.053 or camt.054 message")
            }
            // Foundation's parser on Linux reports a document cut short as parsed: its root element must have closed.
            guard delegate.rootClosed else {
                throw BankStatementError(
                    place: "line \(parser.lineNumber)",
                    reason: "the XML document is malformed: it ends before </Document> (a truncated file)"
                )
            }
        }
    }
}

/// Refuses a document type declaration (`<!DOCTYPE`) or an entity declaration (`<!ENTITY`) anywhere in a document,
/// fed in chunks of any size (a chunk may end inside the keyword).
public struct DoctypeScan: Sendable {
    private var tail: [UInt8] = []
    private var offset = 0
    private static let keywords: [[UInt8]] = [Array("<!DOCTYPE".utf8), Array("<!ENTITY".utf8)]

    public init() {}

    public mutating func feed(_ bytes: some Collection<UInt8>) throws(BankStatementError) {
        let window = tail + bytes
        for keyword in Self.keywords {
            if let index = Self.find(keyword, in: window) {
                throw BankStatementError(
                    place: "byte \(offset - tail.count + index)",
                    reason: "the document declares a document type or an entity (\(String(decoding: keyword, as: UTF8.self))): "
                        + "refused, camt documents have none (an entity is how an XML bomb or an external file read gets in)"
                )
            }
        }
        offset += bytes.count
        tail = Array(window.suffix(8))
    }

    static func check(_ stream: InputStream) throws {
        var scan = DoctypeScan()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count < 0 { throw BankStatementError(place: "", reason: "the file cannot be read") }
            if count == 0 { return }
            try scan.feed(buffer[0..<count])
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return start }
        }
        return nil
    }
}

/// The XMLParser delegate: follows the element path and turns each `Stmt`/`Ntfctn` and each `Ntry` into items.
private final class CamtDelegate: NSObject, XMLParserDelegate {
    let onItem: (BankStatementItem) throws -> Void
    var failure: (any Error)?
    /// The message element under `Document`: `BkToCstmrStmt` (camt.053) or `BkToCstmrDbtCdtNtfctn` (camt.054).
    var message: BankStatementFormat?
    /// Whether `</Document>` was read.
    var rootClosed = false
    private var path: [String] = []
    private var text = ""
    private var attributes: [String: String] = [:]
    private var statements = 0

    /// A statement being read.
    private struct Statement {
        var number: Int
        var id = ""
        var electronicSequence = ""
        var legalSequence = ""
        var account = ""
        var accountCurrency: Currency?
        var opening: BankBalance?
        var previousClosing: BankBalance?
        var closing: BankBalance?
        var header: BankStatementHeader?
        var check: BalanceCheck?
        var entries = 0
    }

    /// A balance (`Bal`) being read.
    private struct Balance {
        var code = ""
        var amount: Money?
        var debit = false
        var date: BusinessDate?
    }

    /// An entry (`Ntry`) being read.
    private struct Entry {
        var amount: Money?
        var debit: Bool?
        var reversal = false
        var status = ""
        var bookingDate: BusinessDate?
        var valueDate: BusinessDate?
        var bankReference: String?
        var entryReference: String?
        var endToEndIDs: [String] = []
        var remittance: [String] = []
        var domain = ["", "", ""]
        var proprietary = ""
    }

    private var statement: Statement?
    private var balance: Balance?
    private var entry: Entry?
    /// The index in ``path`` of the open `Stmt`, `Bal` and `Ntry` elements.
    private var statementDepth = 0
    private var balanceDepth = 0
    private var entryDepth = 0

    init(onItem: @escaping (BankStatementItem) throws -> Void) { self.onItem = onItem }

    private var place: String {
        var words: [String] = []
        if let statement { words.append("\(message == .camt054 ? "Ntfctn" : "Stmt") \(statement.number)") }
        if let statement, entry != nil { words.append("Ntry \(statement.entries + 1)") }
        if let last = path.last { words.append(last) }
        return words.joined(separator: " ")
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        guard failure == nil else { return }
        failure = BankStatementError(place: place, reason: reason)
        parser.abortParsing()
    }

    func parser(
        _ parser: XMLParser,
        didStartElement elementName: String,
        namespaceURI: String?,
        qualifiedName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        guard failure == nil else { return }
        let name = elementName.split(separator: ":").last.map(String.init) ?? elementName
        path.append(name)
        text = ""
        attributes = attributeDict
        guard path.count <= CamtReader.maximumDepth else { return fail(parser, "elements nest deeper than \(CamtReader.maximumDepth)") }
        switch path.count {
        case 1:
            guard name == "Document" else { return fail(parser, "the root element is <\(name)>, not a camt <Document>") }
        case 2:
            switch name {
            case "BkToCstmrStmt": message = .camt053
            case "BkToCstmrDbtCdtNtfctn": message = .camt054
            default: return fail(parser, "<\(name)> is not a camt.053 statement (BkToCstmrStmt) or camt.054 notification (BkToCstmrDbtCdtNtfctn)")
            }
        case 3 where name == "Stmt" || name == "Ntfctn":
            statements += 1
            statement = Statement(number: statements)
            statementDepth = path.count - 1
        default:
            guard statement != nil else { break }
            if name == "Bal", path.count == statementDepth + 2 {
                balance = Balance()
                balanceDepth = path.count - 1
            } else if name == "Ntry", path.count == statementDepth + 2 {
                entry = Entry()
                entryDepth = path.count - 1
            }
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard failure == nil else { return }
        text += string
        if text.utf8.count > CamtReader.maximumText { fail(parser, "an element holds more than \(CamtReader.maximumText) bytes of text") }
    }

    /// Whether the element just closed is at `suffix` under the element at `depth`.
    private func at(_ depth: Int, _ suffix: String...) -> Bool {
        path.count == depth + 1 + suffix.count && path[(depth + 1)...].elementsEqual(suffix)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard failure == nil else { return }
        defer {
            path.removeLast()
            text = ""
            if path.isEmpty { rootClosed = true }
        }
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            if entry != nil {
                try endInEntry(value)
            } else if balance != nil {
                try endInBalance(value)
            } else if statement != nil {
                try endInStatement(value)
            }
        } catch {
            failure = error
            parser.abortParsing()
        }
    }

    private func refuse(_ reason: String) -> BankStatementError { BankStatementError(place: place, reason: reason) }

    private func amount(_ value: String) throws(BankStatementError) -> Money {
        guard let code = attributes["Ccy"], let currency = Currency(code: code) else {
            throw refuse("the amount's currency (Ccy) \((attributes["Ccy"] ?? "").debugDescription) is not one the ledger knows")
        }
        guard let money = BankText.amount(Substring(value), separator: ".", currency: currency) else {
            throw refuse("\(value.debugDescription) is not an amount in \(code) (digits, at most \(currency.minorUnitDigits) fraction digits)")
        }
        return money
    }

    private func date(_ value: String) throws(BankStatementError) -> BusinessDate {
        guard let date = BusinessDate(String(value.prefix(10))) else { throw refuse("\(value.debugDescription) is not a date (YYYY-MM-DD)") }
        return date
    }

    private func debit(_ value: String) throws(BankStatementError) -> Bool {
        switch value {
        case "CRDT": return false
        case "DBIT": return true
        default: throw refuse("\(value.debugDescription) is not CRDT or DBIT")
        }
    }

    private func endInStatement(_ value: String) throws {
        let d = statementDepth
        if at(d, "Id") {
            statement!.id = value
        } else if at(d, "ElctrncSeqNb") {
            statement!.electronicSequence = value
        } else if at(d, "LglSeqNb") {
            statement!.legalSequence = value
        } else if at(d, "Acct", "Id", "IBAN") || at(d, "Acct", "Id", "Othr", "Id") {
            statement!.account = value
        } else if at(d, "Acct", "Ccy") {
            guard let currency = Currency(code: value) else { throw refuse("\(value.debugDescription) is not a currency the ledger knows") }
            statement!.accountCurrency = currency
        } else if path.count == d + 1 {
            try emitHeader(entryCurrency: nil)
            let current = statement!
            let name = current.id.isEmpty ? "\(current.number)" : current.id
            try onItem(.end(try current.check!.finish(statement: name, opening: current.header!.opening, closing: current.closing, place: place)))
            statement = nil
        }
    }

    private func endInBalance(_ value: String) throws {
        let d = balanceDepth
        if at(d, "Tp", "CdOrPrtry", "Cd") {
            balance!.code = value
        } else if at(d, "Amt") {
            balance!.amount = try amount(value)
        } else if at(d, "CdtDbtInd") {
            balance!.debit = try debit(value)
        } else if at(d, "Dt", "Dt") || at(d, "Dt", "DtTm") {
            balance!.date = try date(value)
        } else if path.count == d + 1 {
            let read = balance!
            balance = nil
            guard let amount = read.amount else { throw refuse("the balance has no amount") }
            let found = BankBalance(amount: read.debit ? amount.negated : amount, date: read.date)
            switch read.code {
            case "OPBD": statement!.opening = found
            case "PRCD": statement!.previousClosing = found
            case "CLBD": statement!.closing = found
            default: break  // available, interim and forward balances: not the booked ones the entries add up to
            }
        }
    }

    private func endInEntry(_ value: String) throws {
        let d = entryDepth
        if at(d, "Amt") {
            entry!.amount = try amount(value)
        } else if at(d, "CdtDbtInd") {
            entry!.debit = try debit(value)
        } else if at(d, "RvslInd") {
            entry!.reversal = value == "true" || value == "1"
        } else if at(d, "Sts") || at(d, "Sts", "Cd") {
            entry!.status = value
        } else if at(d, "BookgDt", "Dt") || at(d, "BookgDt", "DtTm") {
            entry!.bookingDate = try date(value)
        } else if at(d, "ValDt", "Dt") || at(d, "ValDt", "DtTm") {
            entry!.valueDate = try date(value)
        } else if at(d, "AcctSvcrRef") {
            entry!.bankReference = value
        } else if at(d, "NtryRef") {
            entry!.entryReference = value
        } else if at(d, "BkTxCd", "Domn", "Cd") {
            entry!.domain[0] = value
        } else if at(d, "BkTxCd", "Domn", "Fmly", "Cd") {
            entry!.domain[1] = value
        } else if at(d, "BkTxCd", "Domn", "Fmly", "SubFmlyCd") {
            entry!.domain[2] = value
        } else if at(d, "BkTxCd", "Prtry", "Cd") {
            entry!.proprietary = value
        } else if at(d, "NtryDtls", "TxDtls", "Refs", "EndToEndId") {
            if !value.isEmpty && value != "NOTPROVIDED" { entry!.endToEndIDs.append(value) }
        } else if at(d, "NtryDtls", "TxDtls", "RmtInf", "Ustrd") || at(d, "NtryDtls", "TxDtls", "RmtInf", "Strd", "CdtrRefInf", "Ref")
            || at(d, "AddtlNtryInf")
        {
            if !value.isEmpty { entry!.remittance.append(value) }
        } else if path.count == d + 1 {
            let read = entry!
            guard let amount = read.amount else { throw refuse("the entry has no amount (Amt)") }
            guard let debit = read.debit else { throw refuse("the entry has no credit/debit indicator (CdtDbtInd)") }
            try emitHeader(entryCurrency: amount.currency)
            statement!.entries += 1
            let code = read.domain[0].isEmpty ? read.proprietary : read.domain.joined(separator: "/")
            let found = BankEntry(
                sequence: statement!.entries,
                amount: debit ? amount.negated : amount,
                bookingDate: read.bookingDate,
                valueDate: read.valueDate,
                bankReference: read.bankReference,
                ownerReference: read.entryReference,
                endToEndIDs: read.endToEndIDs,
                remittanceInformation: read.remittance.joined(separator: " "),
                transactionCode: code,
                reversal: read.reversal,
                booked: read.status.isEmpty || read.status == "BOOK"
            )
            try statement!.check!.add(found, place: place)
            entry = nil
            try onItem(.entry(found))
        }
    }

    /// The statement's header, once: before its first entry (its balances come before the entries in every version),
    /// or at its end when it has none. The currency is the account's, else the balances', else the first entry's.
    private func emitHeader(entryCurrency: Currency?) throws {
        guard statement!.header == nil else { return }
        let current = statement!
        let opening = current.opening ?? current.previousClosing
        guard let currency = current.accountCurrency ?? opening?.amount.currency ?? current.closing?.amount.currency ?? entryCurrency
        else { throw refuse("the statement names no currency (Acct/Ccy, a balance or an entry)") }
        guard !current.account.isEmpty else { throw refuse("the statement names no account (Acct/Id)") }
        let header = BankStatementHeader(
            format: message!,
            account: current.account,
            statementID: current.id,
            sequence: current.electronicSequence.isEmpty ? current.legalSequence : current.electronicSequence,
            currency: currency,
            opening: opening,
            closing: current.closing
        )
        statement!.header = header
        statement!.check = BalanceCheck(currency: currency)
        try onItem(.statement(header))
    }
}
