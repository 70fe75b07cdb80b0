import LedgerMacros

/// Reads RFC 4180 CSV into records of fields; shared by every CSV the ledger reads (settlement
/// reports, catalog imports).
public enum CSVReader {
    /// RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks. Reads the
    /// UTF-8 bytes: the delimiters are ASCII, which never occurs inside a multi-byte character, so
    /// a field is a slice of the text (copied once) unless quoted. CR LF, CR and LF end a record.
    public static func records(_ text: String) throws(CSVReaderError) -> [[String]] {
        let bytes = Array(text.utf8)
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let cr = UInt8(ascii: "\r")
        let lf = UInt8(ascii: "\n")
        var records: [[String]] = []
        var record: [String] = []
        var quoted: [UInt8] = []  // the current quoted field, its doubled quotes undone
        var fieldStart = 0
        var inQuotes = false
        var fieldWasQuoted = false
        func endField(at end: Int) {
            if fieldWasQuoted {
                record.append(String(decoding: quoted, as: UTF8.self))
                quoted.removeAll(keepingCapacity: true)
            } else {
                record.append(String(decoding: bytes[fieldStart..<end], as: UTF8.self))
            }
            fieldWasQuoted = false
        }
        func endRecord(at end: Int) {
            endField(at: end)
            records.append(record)
            record = []
        }
        var i = 0
        let n = bytes.count
        while i < n {
            let byte = bytes[i]
            if inQuotes {
                if byte == quote {
                    if i + 1 < n && bytes[i + 1] == quote {
                        quoted.append(quote)
                        i += 2
                    } else {
                        inQuotes = false
                        i += 1
                    }
                } else {
                    quoted.append(byte)
                    i += 1
                }
                continue
            }
            switch byte {
            case quote:
                guard i == fieldStart, !fieldWasQuoted else { throw CSVReaderError(row: records.count + 1, reason: "quote inside an unquoted field") }
                inQuotes = true
                fieldWasQuoted = true
                i += 1
            case comma:
                endField(at: i)
                i += 1
                fieldStart = i
            case cr, lf:
                endRecord(at: i)
                i += (byte == cr && i + 1 < n && bytes[i + 1] == lf) ? 2 : 1
                fieldStart = i
            default:
                guard !fieldWasQuoted else { throw CSVReaderError(row: records.count + 1, reason: "text after a closing quote") }
                i += 1
            }
        }
        if inQuotes { throw CSVReaderError(row: records.count + 1, reason: "unterminated quoted field") }
        // A final line break ends the last record; text without one still forms a record.
        if n > 0 && (fieldStart < n || !record.isEmpty || fieldWasQuoted) { endRecord(at: n) }
        return records
    }
}

/// Why a CSV text could not be read. Rows are 1-based.
@MemberwiseInit
public struct CSVReaderError: Error, Hashable, Sendable, CustomStringConvertible {
    public let row: Int
    public let reason: String

    public var description: String { "CSV row \(row): \(reason)" }
}
