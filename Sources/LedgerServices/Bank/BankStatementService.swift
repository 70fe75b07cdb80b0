import Crypto
import Foundation
import LedgerAcquirerAPI
import LedgerBank
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPostgres
import Logging

/// Bank statements in (issue 53): a spooled statement file (``ReportUpload``, bounded as it arrived) is read whole
/// first — every statement's balance rule, every amount, date and reference — into a normalized spool file, so that a
/// file refused anywhere appends nothing; then each statement becomes a stream of its own (``BankStatementReceived``
/// then one ``BankEntryBooked`` per entry, appended in pages). A statement already in the log (the same file again, or
/// the same account, statement id and sequence in another file) appends nothing; one whose import stopped between pages
/// is finished from the first entry not recorded. Memory holds one page of entries, whatever the file's size.
public struct BankStatementService: Sendable {
    let writer: LedgerWriter
    let store: EventStore
    let clock: @Sendable () -> Date
    let logger: Logger
    /// The business calendar (weekends, holidays) the payouts' funding windows are counted in.
    let calendar: BusinessCalendar
    /// Business days after a payout's value date its deposit may still arrive (`LEDGERD_BANK_FUNDING_WINDOW_DAYS`).
    let fundingWindowBusinessDays: Int
    /// What the matching read so far (its passes read only what is new), shared by this service's copies.
    let memory = MatchingMemory()

    /// Entries appended per append (one transaction each).
    public static let pageSize = 2000
    /// The most statements one file may hold (their summaries are kept while it is read).
    public static let maximumStatements = 100_000

    public init(
        client: DatabaseClient,
        writer: LedgerWriter,
        clock: @escaping @Sendable () -> Date,
        logger: Logger,
        calendar: BusinessCalendar = BusinessCalendar(),
        fundingWindowBusinessDays: Int = 2
    ) {
        self.writer = writer
        self.store = EventStore(client: client, logger: logger)
        self.clock = clock
        self.logger = logger
        self.calendar = calendar
        self.fundingWindowBusinessDays = max(0, fundingWindowBusinessDays)
    }

    /// What became of one statement of a file.
    @MemberwiseInit
    public struct StatementOutcome: Sendable, Hashable {
        public enum Status: String, Sendable, Hashable {
            /// Recorded now.
            case imported
            /// In the log already with the same content: nothing appended.
            case alreadyImported = "already_imported"
            /// Its earlier import had stopped between pages: finished now.
            case resumed
            /// In the log already with other content (the bank sent a statement of the same id and sequence that
            /// differs): nothing appended, for a clerk to look at.
            case conflicting
        }

        public let account: String
        public let statementID: String
        public let sequence: String
        public let stream: String
        public let currency: Currency
        public let entries: Int
        public let net: Money
        public let status: Status
        /// Events appended by this import.
        public let appended: Int
    }

    /// An import's result.
    @MemberwiseInit
    public struct ImportSummary: Sendable, Hashable {
        /// `camt.053`, `camt.054`, `mt940` or `bai2`.
        public let format: String
        public let fileSHA256: String
        public let statements: [StatementOutcome]
        /// What the matching of payouts to deposits did right after the import (in the same call).
        public var matching: MatchSummary = MatchSummary()
        /// Wall time of the read pass (the reader, the balance rule, the spool) and of storing the statements' events
        /// (the matching's are in ``matching``). For `ledgerd bench bank`; nothing decides on them.
        public var timings: Timings = Timings()

        public struct Timings: Sendable, Hashable {
            public var read: Duration = .zero
            public var store: Duration = .zero

            public init() {}
        }
    }

    /// One statement as read in the first pass.
    package struct ReadStatement: Sendable {
        package var header: BankStatementHeader
        package var end: BankStatementEnd
        package var contentSHA256: String
    }

    /// One line of the normalized spool.
    package enum SpoolLine: Codable, Hashable {
        case statement(BankStatementHeader)
        case entry(BankEntry)
        case end(BankStatementEnd)
    }

    /// The formats' names as `format=` takes them (`camt.053`, …), for a front end's choice.
    public static var formatNames: [String] { BankStatementFormat.allCases.map(\.rawValue) }

    /// The format a `format=` parameter names (nil: none named), or 400 `invalid_parameter`.
    public static func format(named text: String?) throws -> BankStatementFormat? {
        guard let text else { return nil }
        guard let format = BankStatementFormat(rawValue: text) else {
            let known = BankStatementFormat.allCases.map(\.rawValue).joined(separator: ", ")
            throw ServiceError.malformed("invalid_parameter", "format must be one of \(known)", field: "format")
        }
        return format
    }

    /// Imports every statement of a file; `format` nil: detected from its first bytes (a name: ``format(named:)``).
    /// Refusals (422 `invalid_statement`, `unknown_format`) append nothing.
    public func importStatements(_ upload: ReportUpload, format name: String?, actor: String) async throws -> ImportSummary {
        let format = try Self.format(named: name) ?? Self.detect(upload)
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("ledgerd-bank-\(UUID.newRandom().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: spool) }
        var timings = ImportSummary.Timings()
        let readStarted = ContinuousClock.now
        let statements = try Self.normalize(upload.file, format: format, into: spool)
        let storeStarted = ContinuousClock.now
        timings.read = storeStarted - readStarted
        let fileSHA256 = Hex.encode(upload.digest)
        var outcomes: [StatementOutcome] = []
        var index = -1
        var current: (read: ReadStatement, stream: StreamID, skipBelow: Int, version: Int64, status: StatementOutcome.Status)?
        var page: [BankEntry] = []
        var appended = 0

        func flush() async throws {
            guard var open = current, !page.isEmpty else { return }
            let header = open.read.header
            let events = try page.map { entry in
                try NewEvent(
                    eventID: writer.ids.next(),
                    payload: BankEntryBooked(
                        account: header.account,
                        statementID: header.statementID,
                        entry: entry.sequence,
                        amount: entry.amount,
                        bookingDate: entry.bookingDate,
                        valueDate: entry.valueDate,
                        bankReference: entry.bankReference,
                        ownerReference: entry.ownerReference,
                        endToEndIDs: entry.endToEndIDs,
                        remittanceInformation: entry.remittanceInformation,
                        transactionCode: entry.transactionCode,
                        reversal: entry.reversal,
                        booked: entry.booked
                    ),
                    effectiveAt: clock()
                )
            }
            try await append(open.stream, expected: open.version, events, actor: actor, correlation: fileSHA256)
            open.version += Int64(events.count)
            appended += events.count
            page.removeAll(keepingCapacity: true)
            current = open
        }

        try await Self.forEachLine(of: spool) { line in
            switch line {
            case .statement:
                index += 1
                let read = statements[index]
                let stream = BankStatementReceived.stream(
                    account: read.header.account,
                    statementID: read.header.statementID,
                    sequence: read.header.sequence
                )
                let (version, status) = try await begin(read, stream: stream, fileSHA256: fileSHA256, actor: actor)
                appended = version == 1 && status == .imported ? 1 : 0
                // Entries already on the stream (version - 1 of them) are not appended again.
                current = (read, stream, status == .imported || status == .resumed ? Int(version) : Int.max, version, status)
            case .entry(let entry):
                guard let open = current, entry.sequence >= open.skipBelow else { return }
                page.append(entry)
                if page.count >= Self.pageSize { try await flush() }
            case .end:
                try await flush()
                guard let open = current else { return }
                let header = open.read.header
                outcomes.append(
                    StatementOutcome(
                        account: header.account,
                        statementID: header.statementID,
                        sequence: header.sequence,
                        stream: open.stream.rawValue,
                        currency: header.currency,
                        entries: open.read.end.entries,
                        net: open.read.end.net,
                        status: open.status,
                        appended: appended
                    )
                )
                current = nil
            }
        }
        timings.store = ContinuousClock.now - storeStarted
        logger.info(
            "bank statements imported",
            metadata: [
                "format": "\(format.rawValue)", "file_sha256": "\(fileSHA256)", "statements": "\(outcomes.count)",
                "appended": "\(outcomes.map(\.appended).reduce(0, +))",
            ]
        )
        // The payouts are matched to the deposits now in the log (these and any earlier), in the same call: the file's
        // outcomes, and the breaks it resolves, are known when the import answers.
        let matching = try await matchPayouts(file: fileSHA256)
        return ImportSummary(format: format.rawValue, fileSHA256: fileSHA256, statements: outcomes, matching: matching, timings: timings)
    }

    /// Starts a statement's stream, or finds it: the stream's version to append after and what this import does.
    private func begin(
        _ read: ReadStatement,
        stream: StreamID,
        fileSHA256: String,
        actor: String
    ) async throws -> (Int64, StatementOutcome.Status) {
        for _ in 0..<AggregateStore.maximumAttempts {
            if let first = try await store.readStream(stream, after: 0, limit: 1).first {
                guard case .bankStatementReceived(let received) = try LedgerEvent.decode(first) else {
                    throw ServiceError(
                        .internalFailure,
                        code: "bank_statement_stream",
                        message: "\(stream) does not start with BankStatementReceived"
                    )
                }
                guard received.contentSHA256 == read.contentSHA256 else { return (0, .conflicting) }
                if try await !store.readStream(stream, after: Int64(received.entryCount), limit: 1).isEmpty { return (0, .alreadyImported) }
                // Stopped between pages: the last version recorded.
                var version: Int64 = 1
                while let last = try await store.readStream(stream, after: version, limit: 1000).last { version = last.streamVersion }
                return (version, .resumed)
            }
            let header = read.header
            let event = BankStatementReceived(
                format: header.format.rawValue,
                account: header.account,
                statementID: header.statementID,
                sequence: header.sequence,
                currency: header.currency,
                opening: header.opening.map { BankStatementBalance(amount: $0.amount, date: $0.date) },
                closing: (read.end.closing ?? header.closing).map { BankStatementBalance(amount: $0.amount, date: $0.date) },
                entryCount: read.end.entries,
                net: read.end.net,
                fileSHA256: fileSHA256,
                contentSHA256: read.contentSHA256
            )
            do {
                try await append(
                    stream,
                    expected: 0,
                    [try NewEvent(eventID: writer.ids.next(), payload: event, effectiveAt: clock())],
                    actor: actor,
                    correlation: fileSHA256
                )
                return (1, .imported)
            } catch let error as AppendError where error == .versionConflict {
                continue  // imported at the same moment by another request: look again
            }
        }
        throw ServiceError.unavailable("the bank statement \(read.header.statementID) is being imported by another request; try again")
    }

    private func append(_ stream: StreamID, expected: Int64, _ events: [NewEvent], actor: String, correlation: String) async throws {
        _ = try await writer.append(
            AppendRequest(
                stream: stream,
                expectedVersion: expected == 0 ? .noStream : .exact(expected),
                events: events,
                metadata: EventMetadata(correlationID: correlation, actor: actor, command: "ImportBankStatement")
            )
        )
    }

    /// The format of a file's first bytes, or the refusal naming the formats known.
    static func detect(_ upload: ReportUpload) throws -> BankStatementFormat {
        let handle = try FileHandle(forReadingFrom: upload.file)
        defer { try? handle.close() }
        let head = Array(try handle.read(upToCount: 4096) ?? Data())
        guard let format = BankStatementFormat.detect(prefix: head) else {
            throw ServiceError.invalid(
                "unknown_format",
                "the file is not a bank statement this ledger reads (camt.053, camt.054, MT940, BAI2); name it with format=",
                field: "format"
            )
        }
        return format
    }

    /// Reads the whole file with its format's reader into `spool` (one ``SpoolRecord`` per header, entry and end, 0600),
    /// checking every statement; returns each statement's header, end and content digest. Refused as 422
    /// `invalid_statement` naming the place and the reason.
    package static func normalize(_ file: URL, format: BankStatementFormat, into spool: URL) throws -> [ReadStatement] {
        guard FileManager.default.createFile(atPath: spool.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw ServiceError(.internalFailure, code: "spool", message: "cannot create the statement spool")
        }
        let output = try FileHandle(forWritingTo: spool)
        defer { try? output.close() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var buffer: [UInt8] = []
        var statements: [ReadStatement] = []
        var header: BankStatementHeader?
        var hasher = SHA256()
        func take(_ item: BankStatementItem) throws {
            let line: SpoolLine
            switch item {
            case .statement(let h):
                guard statements.count < maximumStatements else {
                    throw BankStatementError(place: "", reason: "the file holds more than \(maximumStatements) statements")
                }
                header = h
                hasher = SHA256()
                line = .statement(h)
            case .entry(let e): line = .entry(e)
            case .end(let e): line = .end(e)
            }
            // The content digest is over the items' JSON lines (what earlier imports recorded); the spool holds them
            // in ``SpoolRecord``'s form, read back without JSON.
            let bytes = Array(try encoder.encode(line)) + [0x0A]
            hasher.update(data: bytes)
            if case .end(let end) = item, let h = header {
                statements.append(ReadStatement(header: h, end: end, contentSHA256: Hex.encode(Array(hasher.finalize()))))
                header = nil
            }
            switch item {
            case .entry(let entry): SpoolRecord.append(entry, to: &buffer)
            default: SpoolRecord.append(json: bytes.dropLast(), to: &buffer)
            }
            if buffer.count >= 64 * 1024 {
                try output.write(contentsOf: buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        do {
            switch format {
            case .camt053, .camt054:
                try CamtReader.read(path: file.path, take)
            case .mt940, .bai2:
                let input = try FileHandle(forReadingFrom: file)
                defer { try? input.close() }
                if format == .mt940 {
                    var reader = MT940Reader()
                    while let data = try input.read(upToCount: ReportUpload.chunkSize), !data.isEmpty { try reader.feed(data, take) }
                    try reader.finish(take)
                } else {
                    var reader = BAI2Reader()
                    while let data = try input.read(upToCount: ReportUpload.chunkSize), !data.isEmpty { try reader.feed(data, take) }
                    try reader.finish(take)
                }
            }
            try output.write(contentsOf: buffer)
        } catch let refusal as BankStatementError {
            throw ServiceError.invalid("invalid_statement", "the \(format.rawValue) statement cannot be imported: \(refusal)")
        }
        guard !statements.isEmpty else {
            throw ServiceError.invalid("invalid_statement", "the \(format.rawValue) file holds no statement")
        }
        return statements
    }

    /// Calls `body` with each line of the normalized spool, in order (read in chunks; memory holds a chunk and the
    /// record it ends in).
    package static func forEachLine(of spool: URL, _ body: (SpoolLine) async throws -> Void) async throws {
        let input = try FileHandle(forReadingFrom: spool)
        defer { try? input.close() }
        let decoder = JSONDecoder()
        var buffer: [UInt8] = []
        var offset = 0
        var pending: [SpoolLine] = []
        while let data = try input.read(upToCount: ReportUpload.chunkSize), !data.isEmpty {
            buffer.removeFirst(offset)
            offset = 0
            buffer.append(contentsOf: data)
            while let (line, next) = try SpoolRecord.next(in: buffer, at: offset, decoder) {
                pending.append(line)
                offset = next
            }
            for line in pending { try await body(line) }
            pending.removeAll(keepingCapacity: true)
        }
        guard offset == buffer.count else {
            throw ServiceError(.internalFailure, code: "spool", message: "the statement spool ends inside a record")
        }
    }
}

/// The normalized spool's records: a kind byte, the payload's length (4 bytes, little-endian), the payload. An entry (most
/// of a file) is written field by field and read back without a parser; a statement's header and end, one each per
/// statement, are their JSON lines.
enum SpoolRecord {
    static let entryKind: UInt8 = 0x4E  // N
    static let jsonKind: UInt8 = 0x4A  // J

    static func append(json: ArraySlice<UInt8>, to out: inout [UInt8]) {
        out.append(jsonKind)
        appendLength(json.count, to: &out)
        out += json
    }

    static func append(_ entry: BankEntry, to out: inout [UInt8]) {
        out.append(entryKind)
        let lengthAt = out.count
        appendLength(0, to: &out)
        let start = out.count
        appendInteger(Int64(entry.sequence), to: &out)
        appendInteger(entry.amount.minorUnits, to: &out)
        appendText(entry.amount.currency.code, to: &out)
        for date in [entry.bookingDate, entry.valueDate] {
            out.append(date == nil ? 0 : 1)
            if let date { appendInteger(date.daysSinceEpoch, to: &out) }
        }
        for reference in [entry.bankReference, entry.ownerReference] {
            out.append(reference == nil ? 0 : 1)
            if let reference { appendText(reference, to: &out) }
        }
        appendInteger(Int64(entry.endToEndIDs.count), to: &out)
        for id in entry.endToEndIDs { appendText(id, to: &out) }
        appendText(entry.remittanceInformation, to: &out)
        appendText(entry.transactionCode, to: &out)
        out.append((entry.reversal ? 1 : 0) | (entry.booked ? 2 : 0))
        let length = UInt32(out.count - start)
        for shift in 0..<4 { out[lengthAt + shift] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(shift))) }
    }

    /// The record at `offset` and the offset after it; nil when `bytes` ends before the record does.
    static func next(in bytes: [UInt8], at offset: Int, _ decoder: JSONDecoder) throws -> (BankStatementService.SpoolLine, Int)? {
        guard bytes.count - offset >= 5 else { return nil }
        var length = 0
        for shift in 0..<4 { length |= Int(bytes[offset + 1 + shift]) << (8 * shift) }
        let end = offset + 5 + length
        guard bytes.count >= end else { return nil }
        let payload = bytes[(offset + 5)..<end]
        switch bytes[offset] {
        case jsonKind: return (try decoder.decode(BankStatementService.SpoolLine.self, from: Data(payload)), end)
        case entryKind:
            var reader = Reader(bytes: payload)
            return (.entry(try reader.entry()), end)
        default: throw ServiceError(.internalFailure, code: "spool", message: "the statement spool holds an unknown record")
        }
    }

    static func appendLength(_ length: Int, to out: inout [UInt8]) {
        for shift in 0..<4 { out.append(UInt8(truncatingIfNeeded: length >> (8 * shift))) }
    }

    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        for shift in 0..<8 { out.append(UInt8(truncatingIfNeeded: value >> (8 * Int64(shift)))) }
    }

    static func appendText(_ text: String, to out: inout [UInt8]) {
        appendLength(text.utf8.count, to: &out)
        out += text.utf8
    }

    /// Reads an entry's payload in the order ``append(_:to:)`` wrote it.
    struct Reader {
        var bytes: ArraySlice<UInt8>

        static let damaged = ServiceError(.internalFailure, code: "spool", message: "the statement spool holds a damaged entry")

        mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, bytes.count >= count else { throw Self.damaged }
            defer { bytes = bytes.dropFirst(count) }
            return bytes.prefix(count)
        }

        mutating func byte() throws -> UInt8 { try take(1).first! }

        mutating func integer() throws -> Int64 {
            var value: Int64 = 0
            for (shift, byte) in try take(8).enumerated() { value |= Int64(byte) << (8 * Int64(shift)) }
            return value
        }

        mutating func text() throws -> String {
            var length = 0
            for (shift, byte) in try take(4).enumerated() { length |= Int(byte) << (8 * shift) }
            return String(decoding: try take(length), as: UTF8.self)
        }

        mutating func entry() throws -> BankEntry {
            let sequence = Int(try integer())
            let units = try integer()
            guard let currency = Currency(code: try text()) else { throw Self.damaged }
            let booking = try byte() == 1 ? BusinessDate(daysSinceEpoch: try integer()) : nil
            let value = try byte() == 1 ? BusinessDate(daysSinceEpoch: try integer()) : nil
            let bank = try byte() == 1 ? try text() : nil
            let owner = try byte() == 1 ? try text() : nil
            let count = try integer()
            guard count >= 0 else { throw Self.damaged }
            var ids: [String] = []
            for _ in 0..<count { ids.append(try text()) }
            let remittance = try text()
            let code = try text()
            let flags = try byte()
            return BankEntry(
                sequence: sequence,
                amount: Money(minorUnits: units, currency: currency),
                bookingDate: booking,
                valueDate: value,
                bankReference: bank,
                ownerReference: owner,
                endToEndIDs: ids,
                remittanceInformation: remittance,
                transactionCode: code,
                reversal: flags & 1 != 0,
                booked: flags & 2 != 0
            )
        }
    }
}
