import ArgumentParser
import AsyncHTTPClient
import Foundation
import LedgerApp
import LedgerCore
import LedgerPostgres
import LedgerServices
import NIOCore

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
        let client = HTTPClient.shared
        var position: Int64
        if fromStart {
            position = 0
        } else if let after {
            position = after
        } else {
            position = try await head(client, key: key)
        }
        var printed = 0
        while true {
            var query = "after=\(position)"
            let types = type.flatMap { $0.split(separator: ",").map(String.init) }
            if !types.isEmpty { query += "&type=" + types.joined(separator: ",") }
            if let streamPrefix, let escaped = streamPrefix.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) {
                query += "&stream_prefix=" + escaped
            }
            var request = HTTPClientRequest(url: "\(url)/events/stream?\(query)")
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.headers.add(name: "Accept", value: "text/event-stream")
            if position > 0 { request.headers.add(name: "Last-Event-ID", value: String(position)) }
            do {
                let response = try await client.execute(request, timeout: .hours(24 * 365))
                guard response.status.code == 200 else {
                    let body = try await response.body.collect(upTo: 64 * 1024)
                    FileHandle.standardError.write(Data("ledgerd tail: \(response.status.code) \(String(buffer: body))\n".utf8))
                    throw ExitCode(1)
                }
                var parser = ServerSentEvents.Parser()
                for try await chunk in response.body {
                    var out = ""
                    for message in parser.feed(chunk.readableBytesView) {
                        guard let id = message.id.flatMap(Int64.init) else { continue }
                        position = id
                        out += message.data + "\n"
                        printed += 1
                        if let count, printed >= count { break }
                    }
                    if !out.isEmpty { FileHandle.standardOutput.write(Data(out.utf8)) }
                    if let count, printed >= count { return }
                }
            } catch let error as ExitCode {
                throw error
            } catch {
                FileHandle.standardError.write(Data("ledgerd tail: \(error); reconnecting after position \(position)\n".utf8))
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// The ledger's head as the daemon's audited reads see it: the `Ledger-Position` of an empty page of the feed.
    func head(_ client: HTTPClient, key: String) async throws -> Int64 {
        var request = HTTPClientRequest(url: "\(url)/events?after=\(Int64.max)&limit=1")
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 * 1024)
        guard response.status.code == 200, let head = response.headers.first(name: "Ledger-Position").flatMap(Int64.init) else {
            FileHandle.standardError.write(Data("ledgerd tail: \(response.status.code) \(String(buffer: body))\n".utf8))
            throw ExitCode(1)
        }
        return head
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
            for entry in entries { text += format == "csv" ? JournalExport.csv(entry) : JournalExport.jsonl(entry) }
            if let output {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output))
            } else {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }
}
