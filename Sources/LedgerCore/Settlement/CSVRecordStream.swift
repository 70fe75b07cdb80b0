/// RFC 4180 records read incrementally: bytes are fed in chunks of any size (a chunk may end inside
/// a quoted field or between CR and LF) and each complete record is handed over as soon as its line
/// ends, so a report of any length is read with memory for one record. The same rules as
/// ``CSVReader`` (quoted fields may hold commas, doubled quotes and line breaks; CR LF, CR and LF end
/// a record), which reads a whole text at once. Each field must be UTF-8 (a chunk may end inside a
/// character; a field is checked when it is complete).
public struct CSVRecordStream: Sendable {
    private var record: [String] = []
    private var field: [UInt8] = []
    private var inQuotes = false
    private var fieldWasQuoted = false
    /// The previous chunk ended with CR: an LF starting this one belongs to it.
    private var pendingCR = false
    /// Records handed over so far (the row number of errors).
    public private(set) var records = 0

    public init() {}

    /// Feeds the next bytes; calls `onRecord` for each record they complete.
    ///
    /// The bytes are read through one contiguous buffer (the chunk's own storage, else a copy): a generic loop called
    /// from another module runs unspecialized, a witness-table call per byte — 41 % of a million-line import's CPU on a
    /// release build, 2026-12-06 (docs/report-formats.md).
    public mutating func feed<Bytes: Sequence>(
        _ bytes: Bytes,
        _ onRecord: ([String]) throws -> Void
    ) throws where Bytes.Element == UInt8 {
        if try bytes.withContiguousStorageIfAvailable({ try feed(buffer: $0, onRecord) }) != nil { return }
        try Array(bytes).withUnsafeBufferPointer { try feed(buffer: $0, onRecord) }
    }

    private mutating func feed(buffer bytes: UnsafeBufferPointer<UInt8>, _ onRecord: ([String]) throws -> Void) throws {
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let cr = UInt8(ascii: "\r")
        let lf = UInt8(ascii: "\n")
        for byte in bytes {
            if pendingCR {
                pendingCR = false
                if byte == lf { continue }
            }
            if inQuotes {
                if afterQuote {
                    afterQuote = false
                    if byte == quote {
                        field.append(quote)
                        continue
                    }
                    inQuotes = false  // the closing quote; this byte is read outside the quotes below
                } else if byte == quote {
                    afterQuote = true
                    continue
                } else {
                    field.append(byte)
                    continue
                }
            }
            switch byte {
            case quote:
                guard field.isEmpty, !fieldWasQuoted else {
                    throw CSVReaderError(row: records + 1, reason: "quote inside an unquoted field")
                }
                inQuotes = true
                fieldWasQuoted = true
            case comma:
                try endField()
            case cr, lf:
                try endField()
                let done = record
                record = []
                records += 1
                pendingCR = byte == cr
                try onRecord(done)
            default:
                guard !fieldWasQuoted else { throw CSVReaderError(row: records + 1, reason: "text after a closing quote") }
                field.append(byte)
            }
        }
    }

    /// A quote seen inside a quoted field: a doubled quote or the closing one (the next byte says,
    /// which may come in the next chunk).
    private var afterQuote = false

    /// Ends the input: a last record without its line break is handed over.
    public mutating func finish(_ onRecord: ([String]) throws -> Void) throws {
        if afterQuote {
            afterQuote = false
            inQuotes = false
        }
        if inQuotes { throw CSVReaderError(row: records + 1, reason: "unterminated quoted field") }
        if !field.isEmpty || fieldWasQuoted || !record.isEmpty {
            try endField()
            let done = record
            record = []
            records += 1
            try onRecord(done)
        }
    }

    private mutating func endField() throws {
        // Decoding repairs ill-formed UTF-8 (each bad sequence becomes U+FFFD, bytes a well-formed field cannot hold at
        // that place), so a field is UTF-8 exactly when its decoding gives its own bytes back; an ASCII field needs no
        // check. (`String(validating:as:)` runs unspecialized here: 10 % of an import's CPU.)
        let text = String(decoding: field, as: UTF8.self)
        guard field.allSatisfy({ $0 < 0x80 }) || text.utf8.elementsEqual(field) else {
            throw CSVReaderError(row: records + 1, reason: "a field is not UTF-8 text")
        }
        record.append(text)
        field.removeAll(keepingCapacity: true)
        fieldWasQuoted = false
    }
}
