import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import LedgerBench
import LedgerCore
import LedgerPostgres
import LedgerServices

/// Writes to standard output through one buffered handle (exports can be millions of lines).
final class StandardOutput: @unchecked Sendable {
    private var buffer: [UInt8] = []
    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }
    func flush() {
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

/// `--from` / `--to` / `--at`: a position (digits) or an RFC 3339 time.
extension AsOf: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension AuditExport.Format: ExpressibleByArgument {}

extension Audit {
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one stream's events in order (e.g. order-<id>, hold-<id>, product-clock), or an order's whole history."
        )
        @OptionGroup var common: CommonOptions
        @Argument(help: "The stream id.") var stream: String?
        @Option(help: "Instead of one stream: the order's whole history (order, hold, stock, settlement, erasure).") var order: String?
        @Option(help: "jsonl or csv.") var format: AuditExport.Format = .jsonl

        func validate() throws {
            guard (stream == nil) != (order == nil) else { throw ValidationError("give a STREAM or --order ID") }
            if let stream, StreamID(stream) == nil { throw ValidationError("a stream id is 1…200 bytes") }
        }

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            let (stream, order, format) = (stream.flatMap(StreamID.init), order, format)
            let out = StandardOutput()
            let count = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                let store = EventStore(client: client, logger: logger)
                if let order {
                    let events = try await store.orderHistory(order)
                    if let header = AuditExport.header(format) { out.write(header) }
                    for event in events { out.write(AuditExport.line(event, format)) }
                    return events.count
                }
                return try await AuditExport.export(store: store, stream: stream, format: format) { out.write($0) }
            }
            out.flush()
            if count == 0 {
                FileHandle.standardError.write(Data("no events\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export the log (or a range of it) as JSON lines or CSV.",
            discussion: "--from/--to: positions (both inclusive) or RFC 3339 recorded times (from inclusive, to exclusive)."
        )
        @OptionGroup var common: CommonOptions
        @Option(help: "First position, or earliest recorded time.") var from: AsOf?
        @Option(help: "Last position, or the recorded time to stop before.") var to: AsOf?
        @Option(help: "jsonl or csv.") var format: AuditExport.Format = .jsonl
        @Option(help: "Write to this file instead of standard output.") var output: String?

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            let (range, format, output) = (AuditExport.Range(from: from, to: to), format, output)
            let file: FileHandle?
            if let output {
                guard FileManager.default.createFile(atPath: output, contents: nil), let handle = FileHandle(forWritingAtPath: output) else {
                    throw ValidationError("cannot write \(output)")
                }
                file = handle
            } else {
                file = nil
            }
            let out = StandardOutput()
            let count = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                try await AuditExport.export(store: EventStore(client: client, logger: logger), range: range, format: format) { line in
                    if let file { file.write(Data(line.utf8)) } else { out.write(line) }
                }
            }
            out.flush()
            try file?.close()
            FileHandle.standardError.write(Data("\(count) events exported\n".utf8))
        }
    }

    struct AsOfState: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "as-of",
            abstract: "An order, authorization, product, settlement batch or the inventory as of a position or time (a fold of the log).",
            discussion: "The same answer as GET /orders/{id}?as_of=… and its siblings."
        )
        @OptionGroup var common: CommonOptions
        @Option(help: "Order id.") var order: String?
        @Option(help: "Order id whose authorization hold to show.") var authorization: String?
        @Option(help: "Product id.") var product: String?
        @Option(help: "Settlement batch id.") var settlement: String?
        @Flag(help: "The whole inventory.") var inventory = false
        @Option(help: "A position, or an RFC 3339 time.") var at: AsOf

        func validate() throws {
            let chosen = [order != nil, authorization != nil, product != nil, settlement != nil, inventory].filter { $0 }.count
            guard chosen == 1 else { throw ValidationError("choose one of --order, --authorization, --product, --settlement, --inventory") }
        }

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            let (order, authorization, product, settlement, at) = (order, authorization, product, settlement, at)
            let answer = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client -> StateAnswer? in
                let state = StateHistory(client: client, logger: logger)
                do {
                    if let order { return try await state.order(order, asOf: at) }
                    if let authorization { return try await state.authorization(authorization, asOf: at) }
                    if let product { return try await state.product(product, asOf: at) }
                    if let settlement {
                        guard let found = try await state.settlement(settlement, asOf: at) else { return nil }
                        // A typed batch, not a stored row: in the shape GET /settlements/{id} serves it.
                        return StateAnswer(json: try WireJSON.encode(SettlementBatchReply(found.batch)), asOf: found.point)
                    }
                    return try await state.inventory(asOf: at)
                } catch let error as ServiceError {
                    throw ValidationError(error.message)
                }
            }
            guard let answer, let point = answer.asOf else {
                FileHandle.standardError.write(Data("not found as of \(at)\n".utf8))
                throw ExitCode(1)
            }
            // The body the HTTP read answers (`GET /orders/{id}?as_of=…` and its siblings), without the order's links:
            // the row beside `as_of` for an order, authorization or product; the batch or the inventory array as the
            // live endpoint serves it, whose point HTTP puts in headers and this puts on standard error.
            let row = RawJSON(stored: answer.json)
            let member = order != nil ? "order" : authorization != nil ? "authorization" : product != nil ? "product" : nil
            if let member {
                print(RawJSON.object([member: row, "as_of": point.asOfJSON]))
            } else {
                FileHandle.standardError.write(Data("as of position \(point.position) (\(RFC3339.format(point.micros)))\n".utf8))
                print(row)
            }
        }
    }

    struct Checkpoint: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign a checkpoint of the ledger's head now (with LEDGERD_CHECKPOINT_KEY) and write its file."
        )
        @OptionGroup var common: CommonOptions
        @Option(help: "The private key file (default: LEDGERD_CHECKPOINT_KEY).") var key: String?

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            guard let path = key ?? configuration.checkpointKeyPath else {
                throw ValidationError("no key: pass --key FILE or set LEDGERD_CHECKPOINT_KEY")
            }
            let signingKey = try CheckpointKey(contentsOf: path)
            let directory = configuration.checkpointsDirectoryURL
            let (checkpoint, file) = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                try await CheckpointService.signOffline(key: signingKey, client: client, directory: directory, logger: logger)
            }
            print(try CheckpointService.fileJSON(checkpoint), terminator: "")
            FileHandle.standardError.write(Data("checkpoint written to \(file.path)\n".utf8))
        }
    }

    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate an Ed25519 checkpoint key: FILE (private, mode 0600) and FILE.pub (public, for auditors).",
            discussion: "Equivalent: openssl genpkey -algorithm ed25519 -out FILE && openssl pkey -in FILE -pubout -out FILE.pub"
        )
        @Option(help: "Where to write the private key (PEM).") var out: String

        func run() throws {
            guard !FileManager.default.fileExists(atPath: out) else { throw ValidationError("\(out) exists; not overwriting a key") }
            let key = CheckpointKey.generate()
            do {
                try SecretFile.write(Data(key.privateKeyPEM.utf8), to: URL(fileURLWithPath: out))
            } catch {
                throw ValidationError("\(error)")
            }
            try Data(key.publicKeyPEM.utf8).write(to: URL(fileURLWithPath: out + ".pub"))
            print(
                "private key: \(out) (set LEDGERD_CHECKPOINT_KEY=\(out))\npublic key:  \(out).pub (give it to the auditors)\n\(key.publicKeyPEM)",
                terminator: ""
            )
        }
    }
}

struct Privacy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Personal data.", subcommands: [Erase.self])

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a customer's shipping contacts (a ContactErased event each; the chain and the money history stay intact)."
        )
        @OptionGroup var common: CommonOptions
        @Option(help: "The customer: an e-mail address (case-insensitive) or a contact reference.") var customer: String

        func run() async throws {
            let configuration = try common.configuration()
            let logger = makeLogger(configuration)
            let customer = customer
            let erased = try await Daemon.withLedgerClient(configuration: configuration, logger: logger) { client in
                try await PrivacyService.eraseOffline(customer: customer, client: client, logger: logger)
            }
            guard !erased.isEmpty else {
                FileHandle.standardError.write(Data("no shipping contact matches (or it was erased already)\n".utf8))
                throw ExitCode(1)
            }
            for erasure in erased {
                let orders = erasure.orderIDs.joined(separator: ", ")
                print("erased \(erasure.contactRef) (orders \(orders)) — ContactErased at position \(erasure.position)")
            }
        }
    }
}
