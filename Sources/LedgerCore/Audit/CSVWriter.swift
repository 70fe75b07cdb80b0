/// Writes RFC 4180 CSV: a field is quoted when it holds a comma, a double quote, CR or LF (or
/// starts or ends with a space), with inner quotes doubled; records end with CRLF. What
/// ``CSVReader`` reads back field for field.
///
/// CSV is defined on bytes, so the writer works on UTF-8 bytes, never on `Character`s: a quote
/// followed by a combining mark (`"` U+0301) is one `Character` that is not equal to `"`, and a
/// writer comparing `Character`s leaves it undoubled — a field that breaks out of its quotes
/// (security review 4, M1 and M2). Every CSV writer of the ledger quotes through ``quoted(_:)``.
public enum CSVWriter {
    /// Who reads the cells.
    public enum Cells: Sendable, Hashable {
        /// A program that must read every cell back exactly (the acquirer report format, imports).
        case exact
        /// People, in a spreadsheet: a cell a spreadsheet would run as a formula is neutralised
        /// (``spreadsheetSafe(_:)``). For exports meant for people: audit history, the journal,
        /// a reconciliation's breaks.
        case spreadsheetSafe
    }

    public static func field(_ text: String, _ cells: Cells) -> String {
        let text = cells == .spreadsheetSafe ? spreadsheetSafe(text) : text
        let needsQuotes =
            text.utf8.contains { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }
            || text.utf8.first == 0x20 || text.utf8.last == 0x20
        return needsQuotes ? quoted(text) : text
    }

    public static func record(_ fields: [String], _ cells: Cells) -> String {
        fields.map { field($0, cells) }.joined(separator: ",") + "\r\n"
    }

    /// `text` between double quotes with each of its quote bytes doubled: the one quoting rule of
    /// every CSV the ledger writes (here and in the settlement report's writer).
    public static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = [0x22]
        bytes.reserveCapacity(text.utf8.count + 2)
        for byte in text.utf8 {
            bytes.append(byte)
            if byte == 0x22 { bytes.append(0x22) }
        }
        bytes.append(0x22)
        // Only ASCII quotes were added to valid UTF-8: the bytes decode back without loss.
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection):
    /// `=`, `+`, `-`, `@`, TAB and CR.
    static let formulaStarts: Set<UInt8> = [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D]

    /// `text` as a spreadsheet shows it without running it: a cell starting with `=`, `+`, `-`, `@`,
    /// TAB or CR gets a leading `'` (which spreadsheets read as "text follows"), unless it is a plain
    /// decimal number (`-5.00`, an amount, is data: `-?digits(.digits)?` runs nothing and stays as is).
    public static func spreadsheetSafe(_ text: String) -> String {
        guard let first = text.utf8.first, formulaStarts.contains(first), !isPlainDecimal(text) else { return text }
        return "'" + text
    }

    /// Whether `text` is `-?[0-9]+(\.[0-9]+)?`.
    static func isPlainDecimal(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if bytes.first == 0x2D { bytes = bytes.dropFirst() }
        let parts = bytes.split(separator: 0x2E, maxSplits: 1, omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        return parts.allSatisfy { part in !part.isEmpty && part.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }
}
