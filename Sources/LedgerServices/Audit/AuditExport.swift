import Foundation
import LedgerCore
import LedgerMacros
import LedgerPostgres
import Logging

/// `ledgerd audit history` and `ledgerd audit export`: events as JSON lines (one event per line,
/// the same object the HTTP history endpoints serve, `data`/`metadata` verbatim as stored) or as
/// RFC 4180 CSV (one column per field, `data` and `metadata` as their JSON text). The CSV is for people
/// (``CSVWriter/Cells/spreadsheetSafe``): a cell a spreadsheet would run as a formula starts with `'`; the
/// JSON lines are the exact form, for programs.
public enum AuditExport {
    public enum Format: String, Sendable, CaseIterable {
        case jsonl, csv
    }

    public static let csvColumns = [
        "position", "stream", "version", "event_id", "type", "schema_version", "data", "metadata",
        "effective_at", "recorded_at", "prev_hash", "hash",
    ]

    /// The header line (CSV only).
    public static func header(_ format: Format) -> String? {
        format == .csv ? CSVWriter.record(csvColumns, .spreadsheetSafe) : nil
    }

    public static func line(_ event: RecordedEvent, _ format: Format) -> String {
        switch format {
        case .jsonl:
            return EventJSON.render(event) + "\n"
        case .csv:
            return CSVWriter.record(
                [
                    String(event.position), event.streamID.rawValue, String(event.streamVersion), event.eventID.uuidString.lowercased(),
                    event.type, String(event.schemaVersion), event.data, event.metadata, RFC3339.format(event.effectiveAtMicros),
                    RFC3339.format(event.recordedAtMicros), Hex.encode(event.prevHash), Hex.encode(event.hash),
                ],
                .spreadsheetSafe
            )
        }
    }

    /// A range of the log: positions (both inclusive) or recorded times (from inclusive, to exclusive).
    @MemberwiseInit
    public struct Range: Sendable, Hashable {
        public var from: AsOf?
        public var to: AsOf?
    }

    /// Writes every event in `range` (optionally only `stream`'s) to `output`, a page at a time;
    /// returns the number written.
    @discardableResult
    public static func export(
        store: EventStore,
        range: Range = .init(from: nil, to: nil),
        stream: StreamID? = nil,
        format: Format,
        pageSize: Int = 5_000,
        output: (String) throws -> Void
    ) async throws -> Int {
        var filter = EventFilter()
        var after: Int64 = 0
        var last = Int64.max
        switch range.from {
        case .position(let p): after = max(0, p - 1)
        case .time(let micros): filter.fromMicros = micros
        case nil: break
        }
        switch range.to {
        case .position(let p): last = p
        case .time(let micros): filter.toMicros = micros
        case nil: break
        }
        if let header = header(format) { try output(header) }
        var written = 0
        if let stream {
            for event in try await store.readStream(stream) where event.position > after && event.position <= last {
                guard filter.matches(event, correlationID: nil) else { continue }
                try output(line(event, format))
                written += 1
            }
            return written
        }
        while true {
            let page = try await store.events(after: after, matching: filter, limit: pageSize)
            for event in page where event.position <= last {
                try output(line(event, format))
                written += 1
            }
            guard let end = page.last?.position, page.count == pageSize, end < last else { return written }
            after = end
        }
    }
}

/// `ledgerd audit verify --checkpoint FILE --public-key KEY`: proves that the log still contains
/// the prefix a signed checkpoint names, unaltered.
public enum CheckpointVerification {
    public struct Outcome: Sendable {
        public var lines: [String]
        public var ok: Bool
    }

    /// 1. The checkpoint's signature must verify with the auditor's public key (a forged or edited
    ///    checkpoint proves nothing). 2. The chain must verify from position 1 to the checkpoint's
    ///    position, and the event there must still have the signed hash (Swift, and with `sql` also
    ///    `ledger.verify_prefix`). 3. The chain must verify on from there to the head.
    public static func run(
        client: DatabaseClient,
        checkpointFile: String,
        publicKeyFile: String,
        sql: Bool,
        parallelism: Int = 1,
        logger: Logger
    ) async throws -> Outcome {
        guard let data = FileManager.default.contents(atPath: checkpointFile) else {
            throw ConfigurationError("cannot read the checkpoint file \(checkpointFile)")
        }
        let file: CheckpointFile
        do { file = try JSONDecoder().decode(CheckpointFile.self, from: data) } catch {
            throw ConfigurationError("\(checkpointFile) is not a \(Checkpoint.format) file: \(error)")
        }
        let checkpoint = file.checkpoint
        let key = try CheckpointPublicKey(contentsOf: publicKeyFile)
        guard key.isValid(checkpoint), let hash = Hex.decode(checkpoint.hash), hash.count == 32 else {
            return Outcome(lines: ["checkpoint signature: INVALID for public key \(key.hex) — the checkpoint proves nothing"], ok: false)
        }
        var lines = ["checkpoint signature: valid (position \(checkpoint.position), hash \(checkpoint.hash), signed \(checkpoint.signedAt))"]
        let verifier = ChainVerifier(client: client, logger: logger)
        let prefix = try await verifier.verifyPrefix(position: checkpoint.position, hash: hash, parallelism: parallelism)
        lines.append("swift verifier, positions 1…\(checkpoint.position) against the checkpoint: \(prefix)")
        var ok = prefix.ok
        if sql {
            let database = try await verifier.verifyPrefixInDatabase(position: checkpoint.position, hash: hash)
            lines.append("sql verifier (ledger.verify_prefix): \(database)")
            ok = ok && database.ok
        }
        if prefix.ok {
            let rest = try await verifier.verify(from: checkpoint.position + 1, parallelism: parallelism)
            lines.append("swift verifier, after the checkpoint to the head: \(rest)")
            ok = ok && rest.ok
        }
        return Outcome(lines: lines, ok: ok)
    }
}
