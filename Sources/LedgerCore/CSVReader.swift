/// Reads RFC 4180 CSV into records of fields; shared by every CSV the ledger reads (settlement
/// reports, catalog imports).
public enum CSVReader {
    /// RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks.
    /// Works on Unicode scalars so that a CRLF (one `Character` in Swift) is seen as CR then LF.
    public static func records(_ text: String) throws(CSVReaderError) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = String.UnicodeScalarView()
        var inQuotes = false, fieldWasQuoted = false
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        func nextScalar() -> Unicode.Scalar? {
            if let scalar = pending { pending = nil; return scalar }
            return scalars.next()
        }
        func endField() {
            record.append(String(field))
            field = String.UnicodeScalarView()
            fieldWasQuoted = false
        }
        func endRecord() {
            endField()
            records.append(record)
            record = []
        }
        var sawAnything = false
        while let scalar = nextScalar() {
            sawAnything = true
            if inQuotes {
                if scalar == "\"" {
                    if let following = nextScalar() {
                        if following == "\"" { field.append("\"") } else { inQuotes = false; pending = following }
                    } else {
                        inQuotes = false
                    }
                } else {
                    field.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"":
                guard field.isEmpty, !fieldWasQuoted else { throw CSVReaderError(row: records.count + 1, reason: "quote inside an unquoted field") }
                inQuotes = true
                fieldWasQuoted = true
            case ",":
                endField()
            case "\r":
                if let following = nextScalar(), following != "\n" { pending = following }
                endRecord()
            case "\n":
                endRecord()
            default:
                guard !fieldWasQuoted else { throw CSVReaderError(row: records.count + 1, reason: "text after a closing quote") }
                field.append(scalar)
            }
        }
        if inQuotes { throw CSVReaderError(row: records.count + 1, reason: "unterminated quoted field") }
        // A final line break ends the last record; text without one still forms a record.
        if sawAnything && (!field.isEmpty || !record.isEmpty || fieldWasQuoted) { endRecord() }
        return records
    }
}

/// Why a CSV text could not be read. Rows are 1-based.
public struct CSVReaderError: Error, Hashable, Sendable, CustomStringConvertible {
    public let row: Int
    public let reason: String

    public init(row: Int, reason: String) {
        self.row = row
        self.reason = reason
    }

    public var description: String { "CSV row \(row): \(reason)" }
}
