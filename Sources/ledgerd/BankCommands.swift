import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import OpenAPIRuntime

/// `ledgerd bank import FILE [--format camt.053|camt.054|mt940|bai2]`: imports a bank statement file through a running
/// daemon (`POST /bank/statements`, the same service as the console's upload and the inbox), streaming the file as the
/// body. Prints what was stored (each statement's stream, entries, net and status), or the refusal and exits 1.
struct Bank: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Bank statements, through a running daemon.", subcommands: [Import.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import a bank statement file (camt.053, camt.054, MT940 or BAI2).",
            discussion: "The format is detected from the file's content unless given. A statement already imported appends nothing."
        )
        typealias Format = Operations.ImportBankStatement.Input.Query.FormatPayload

        @Argument(help: "The statement file.") var file: String
        @Option(help: "camt.053, camt.054, mt940 or bai2 (camt053 and camt054 too; default: detected from the content).")
        var format: String?
        @Flag(help: "Print the daemon's JSON reply instead of a table.") var json = false
        @OptionGroup var connection: Order.Connection

        /// The format named, the dotless spelling of camt's accepted too.
        var named: Format? {
            guard let format else { return nil }
            let spelled = format.lowercased().hasPrefix("camt") && !format.contains(".") ? "camt." + format.dropFirst(4) : format.lowercased()
            return Format(rawValue: spelled)
        }

        func validate() throws {
            if format != nil && named == nil {
                throw ValidationError("--format is one of " + Format.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard FileManager.default.isReadableFile(atPath: file) else { throw ValidationError("cannot read \(file)") }
        }

        func run() async throws {
            let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
            let answer: Answer<Components.Schemas.BankStatementImport> = try await connection.withClient(timeout: .minutes(30)) { client in
                // Streamed a chunk at a time: a statement file may be larger than this process should hold.
                let body = HTTPBody(FileChunks(path: file), length: .known(size), iterationBehavior: .single)
                switch try await client.importBankStatement(query: .init(format: named), body: .binary(body)) {
                case .ok(let ok): return .ok(try ok.body.json)
                case .badRequest(let refusal): return .refused(400, refusal)
                case .unauthorized(let refusal): return .refused(401, refusal)
                case .forbidden(let refusal): return .refused(403, refusal)
                case .contentTooLarge(let refusal): return .refused(413, refusal)
                case .unprocessableContent(let refusal): return .refused(422, refusal)
                case .tooManyRequests(let refusal): return .refused(429, refusal)
                case .serviceUnavailable(let refusal): return .refused(503, refusal)
                case .undocumented(let status, let payload): return .undocumented(status: status, payload.body)
                }
            }
            guard case .ok(let reply) = answer else { try await answer.fail() }
            if json {
                print(try WireJSON.encode(reply))
                return
            }
            print("\(file): \(reply.format.rawValue), SHA-256 \(reply.fileSha256), \(reply.statements.count) statements")
            for s in reply.statements {
                print(
                    "  statement \(s.statementId) sequence \(s.sequence) of \(s.account): \(s.status.rawValue), \(s.entries) entries, "
                        + "net \(s.net) \(s.currency), \(s.appendedEvents) events appended (\(s.stream))"
                )
            }
            let pass = reply.matching
            let breaks = pass.breaks.additionalProperties.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            print(
                "  matching: \(pass.matched) matched, breaks found: \(breaks.isEmpty ? "none" : breaks.joined(separator: ", ")), "
                    + "\(pass.resolved) resolved, \(pass.openBreaks) open"
            )
        }

    }
}

/// A file's bytes in chunks of 64 KiB, each read when the request asks for it (so memory holds a chunk, whatever the
/// file's size).
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let path: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?
        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let handle else { return nil }
            guard let data = try handle.read(upToCount: 64 * 1024), !data.isEmpty else {
                try? handle.close()
                return nil
            }
            return ArraySlice(data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: FileHandle(forReadingAtPath: path)) }
}
