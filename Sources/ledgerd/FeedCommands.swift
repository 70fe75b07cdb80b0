import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import OpenAPIRuntime

/// `ledgerd tail [--after N] [--type T]`: the live feed (`GET /events/stream`) of a running daemon,
/// one event's JSON per line, following new commits until interrupted. It reconnects after a lost
/// connection with `Last-Event-ID`, so it prints every event once and in position order.
struct Tail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the live event feed of a running daemon, one JSON event per line.",
        discussion: "Like tail -f: from the events recorded after it starts, unless --after or --from-start says where."
    )
    @OptionGroup var common: ClientOptions
    @Option(help: "The daemon's base URL.") var url = "http://127.0.0.1:12345"
    @Option(help: "API key (default: LEDGERD_API_KEY, the first of LEDGERD_OPERATOR_KEYS, or the embedded daemon's api-keys.json).") var apiKey:
        String?
    @Option(help: "Start after this position (default: the ledger's head when the command starts).") var after: Int64?
    @Flag(help: "Replay the feed from the first event (--after 0).") var fromStart = false
    @Option(help: "Only events of this type (repeat or comma-separate for several).") var type: [String] = []
    @Option(help: "Only events of streams whose id starts with this.") var streamPrefix: String?
    @Option(help: "Exit after this many events.") var count: Int?

    func validate() throws {
        if fromStart && after != nil { throw ValidationError("--from-start and --after name two starts: give one") }
    }

    func run() async throws {
        let key = try apiKey ?? APIKeys.operatorKey(for: common.configuration())
        let types = type.flatMap { $0.split(separator: ",").map(String.init) }
        // A stream is endless: its deadline is a year away; a lost connection is taken up again a second later.
        try await DaemonClient.with(baseURL: url, key: key, timeout: .hours(24 * 365)) { client in
            var position: Int64
            if fromStart {
                position = 0
            } else if let after {
                position = after
            } else {
                position = try await head(client)
            }
            var printed = 0
            while true {
                do {
                    let output = try await client.streamEvents(
                        query: .init(after: Int(position), _type: types.isEmpty ? nil : types.joined(separator: ","), streamPrefix: streamPrefix),
                        headers: .init(lastEventID: position > 0 ? String(position) : nil)
                    )
                    let refusal: Answer<Void>
                    switch output {
                    case .ok(let ok):
                        for try await message in try ok.body.textEventStream.asDecodedServerSentEvents() {
                            guard let id = message.id.flatMap(Int64.init), let data = message.data else { continue }
                            position = id
                            FileHandle.standardOutput.write(Data((data + "\n").utf8))
                            printed += 1
                            if let count, printed >= count { return }
                        }
                        continue
                    case .badRequest(let r): refusal = .refused(400, r)
                    case .unauthorized(let r): refusal = .refused(401, r)
                    case .tooManyRequests(let r): refusal = .refused(429, r)
                    case .undocumented(let status, let payload): refusal = .undocumented(status: status, payload.body)
                    }
                    FileHandle.standardError.write(Data("ledgerd tail: \(try await refusal.text())\n".utf8))
                    throw ExitCode(1)
                } catch let error as ExitCode {
                    throw error
                } catch {
                    FileHandle.standardError.write(Data("ledgerd tail: \(error); reconnecting after position \(position)\n".utf8))
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// The ledger's head as the daemon's audited reads see it: the `Ledger-Position` of an empty page of the feed.
    func head(_ client: Client) async throws -> Int64 {
        let refusal: Answer<Void>
        switch try await client.listEvents(query: .init(after: Int(Int64.max), limit: 1)) {
        case .ok(let ok):
            guard let head = ok.headers.ledgerPosition.flatMap(Int64.init) else {
                FileHandle.standardError.write(Data("ledgerd tail: the feed's page has no Ledger-Position\n".utf8))
                throw ExitCode(1)
            }
            return head
        case .badRequest(let r): refusal = .refused(400, r)
        case .unauthorized(let r): refusal = .refused(401, r)
        case .serviceUnavailable(let r): refusal = .refused(503, r)
        case .undocumented(let status, let payload): refusal = .undocumented(status: status, payload.body)
        }
        FileHandle.standardError.write(Data("ledgerd tail: \(try await refusal.text())\n".utf8))
        throw ExitCode(1)
    }
}

/// `ledgerd journal export --from --to --format csv|jsonl [--output FILE]`: the accounting journal of
/// a period (docs/journal.md) for an ERP import, read from the database.
struct Journal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The accounting journal.", subcommands: [Export.self])

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export the journal lines of the money events recorded in [from, to) as CSV or JSON lines."
        )
        @OptionGroup var common: CommonOptions
        @Option(help: "Start (inclusive): YYYY-MM-DD (midnight UTC) or an RFC 3339 time.") var from: String
        @Option(help: "End (exclusive): YYYY-MM-DD (midnight UTC) or an RFC 3339 time.") var to: String
        @Option(help: "csv or jsonl.") var format = "csv"
        @Option(help: "Write to this file instead of standard output.") var output: String?

        func validate() throws {
            guard ["csv", "jsonl"].contains(format) else { throw ValidationError("--format must be csv or jsonl") }
            guard Self.micros(from) != nil else { throw ValidationError("--from must be YYYY-MM-DD or an RFC 3339 time") }
            guard Self.micros(to) != nil else { throw ValidationError("--to must be YYYY-MM-DD or an RFC 3339 time") }
        }

        static func micros(_ text: String) -> Int64? {
            if let date = BusinessDate(text) { return RFC3339.micros("\(date)T00:00:00Z") }
            return RFC3339.micros(text)
        }

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            let (fromMicros, toMicros) = (Self.micros(from)!, Self.micros(to)!)
            let entries = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                try await JournalService(store: EventStore(client: client, logger: logger)).entries(fromMicros: fromMicros, toMicros: toMicros)
            }
            var text = format == "csv" ? JournalExport.csvHeader : ""
            for entry in entries { text += format == "csv" ? JournalExport.csv(entry, .exact) : JournalExport.jsonl(entry) }
            if let output {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output))
            } else {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }
}
