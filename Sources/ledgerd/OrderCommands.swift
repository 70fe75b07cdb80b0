import ArgumentParser
import Foundation
import LedgerApp
import LedgerBench
import LedgerCore
import LedgerServices

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ledgerd order capture|increment|void|refund|ship ORDER …`: the back-office hold operations,
/// sent to a running daemon's API with an operator key. They go through the daemon because it is
/// the one that talks to the acquirer; each is idempotent by `--idempotency-key` (the API's
/// `Idempotency-Key`), so a retried command never applies twice.
struct Order: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Operate on an order's authorization hold through a running daemon.",
        subcommands: [Capture.self, Increment.self, Void.self, Refund.self, Ship.self]
    )

    struct Connection: ParsableArguments {
        @OptionGroup var common: ClientOptions
        @Option(help: "The daemon's base URL (default: LEDGERD_URL, else http(s)://LEDGERD_HOST:LEDGERD_PORT, 127.0.0.1:12345).")
        var url: String?
        @Option(help: "Operator API key (default: LEDGERD_API_KEY, the first of LEDGERD_OPERATOR_KEYS, or the embedded daemon's api-keys.json).")
        var apiKey: String?

        /// POSTs a JSON body to `path` with the operator key; returns the status and the reply.
        func post(_ path: String, body: [String: Any], idempotencyKey: String? = nil) async throws -> (status: Int, body: Data) {
            let data = try JSONSerialization.data(withJSONObject: body)
            return try await post(path, data: data, contentType: "application/json", idempotencyKey: idempotencyKey)
        }

        /// POSTs raw bytes to `path` with the operator key; returns the status and the reply.
        func post(_ path: String, data body: Data, contentType: String, idempotencyKey: String? = nil) async throws -> (status: Int, body: Data) {
            let request = try request(path, data: body, contentType: contentType, idempotencyKey: idempotencyKey)
            let (data, response) = try await Self.reaching(request) { try await URLSession.shared.data(for: request) }
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
        }

        /// The daemon's base URL: `--url`, else `LEDGERD_URL`, else `http://` (`https://` when
        /// `LEDGERD_TLS_CERTIFICATE` is set) + `LEDGERD_HOST` (a wildcard bind means this machine) + `:LEDGERD_PORT`.
        func baseURL() throws -> String {
            if let url, !url.isEmpty { return url }
            if let url = ProcessInfo.processInfo.environment["LEDGERD_URL"], !url.isEmpty { return url }
            let configuration = try common.configuration()
            let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
            let shown = host.contains(":") ? "[\(host)]" : host
            return "\(configuration.tlsCertificatePath == nil ? "http" : "https")://\(shown):\(configuration.port)"
        }

        /// Runs `body`; a failure to reach the daemon at all becomes one line on standard error and exit 1. When the
        /// request may have reached the daemon (no answer, or the connection closed before it) and carries an
        /// `Idempotency-Key`, the line names the key to send again: the same key cannot apply the operation twice.
        static func reaching<T>(_ request: URLRequest, _ body: () async throws -> T) async throws -> T {
            do {
                return try await body()
            } catch let error as URLError {
                let base = request.url.map { "\($0.scheme ?? "http")://\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")" } ?? "?"
                let reason: String
                switch error.code {
                case .cannotConnectToHost: reason = "connection refused"
                case .timedOut: reason = "no answer (timed out)"
                case .cannotFindHost, .dnsLookupFailed: reason = "unknown host"
                case .networkConnectionLost: reason = "the connection was closed"
                case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasUnknownRoot:
                    reason = "TLS failed (plain http to an https daemon, or a certificate this machine does not trust)"
                default: reason = "network error \(error.code.rawValue)"
                }
                var retry = ""
                if [.timedOut, .networkConnectionLost].contains(error.code), let key = request.value(forHTTPHeaderField: "Idempotency-Key") {
                    retry = " It may have been applied: run it again with --idempotency-key \(key) (applied once, whatever happened)."
                }
                FileHandle.standardError.write(
                    Data(
                        "ledgerd: cannot reach the daemon at \(base): \(reason). Is `ledgerd serve` running there? (--url, LEDGERD_URL, LEDGERD_PORT)\(retry)\n"
                            .utf8
                    )
                )
                throw ExitCode(1)
            }
        }

        /// A POST of `body` to `path` with the operator key (and the idempotency key, if any).
        func request(_ path: String, data body: Data, contentType: String, idempotencyKey: String? = nil) throws -> URLRequest {
            let key = try apiKey ?? APIKeys.operatorKey(for: common.configuration())
            guard let target = URL(string: try baseURL() + path) else { throw ValidationError("invalid URL") }
            var request = URLRequest(url: target)
            request.httpMethod = "POST"
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
            if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
            request.httpBody = body
            return request
        }
    }

    /// The options of an operation on an order: the daemon to reach, and the operation's idempotency key (only these
    /// commands take one: the daemon requires it for the operations that move money).
    struct Operation: ParsableArguments {
        @OptionGroup var connection: Connection
        @Option(help: "Idempotency key: the same key and arguments apply once (default: a new key per invocation).")
        var idempotencyKey: String?

        /// POSTs `body` to `/orders/{id}/{operation}`, prints the reply, and fails on a non-2xx status. Without
        /// `--idempotency-key` the invocation makes its own; when the daemon may have applied it without answering,
        /// ``Connection/reaching(_:_:)`` names the key to retry with.
        func send(_ operation: String, order: String, body: [String: Any]) async throws {
            guard let escaped = order.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) else { throw ValidationError("invalid order id") }
            let key = idempotencyKey ?? "cli-\(UUID.newRandomString())"
            let (status, data) = try await connection.post("/orders/\(escaped)/\(operation)", body: body, idempotencyKey: key)
            print(String(decoding: data, as: UTF8.self))
            guard (200..<300).contains(status) else { throw ExitCode(status == 402 ? 2 : 1) }
        }
    }

    struct Capture: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Capture part or all of the open amount.")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount, e.g. 12.50 (default: all that is open).") var amount: String?
        @Flag(help: "Final capture: release the rest of the hold.") var final = false
        @OptionGroup var connection: Operation
        func run() async throws {
            var body: [String: Any] = ["final": final]
            if let amount { body["amount"] = amount }
            try await connection.send("capture", order: order, body: body)
        }
    }

    struct Increment: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask the issuer to add to the hold (exit 2 when declined).")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount to add, e.g. 5.00.") var amount: String
        @OptionGroup var connection: Operation
        func run() async throws { try await connection.send("increment", order: order, body: ["amount": amount]) }
    }

    struct Void: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Void part or all of the open amount (all: the order is cancelled).")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount (default: all that is open).") var amount: String?
        @OptionGroup var connection: Operation
        func run() async throws { try await connection.send("void", order: order, body: amount.map { ["amount": $0] } ?? [:]) }
    }

    struct Refund: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refund captured money.")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount, e.g. 10.00.") var amount: String
        @Option(help: "Why (kept in the ledger).") var reason: String
        @OptionGroup var connection: Operation
        func run() async throws { try await connection.send("refund", order: order, body: ["amount": amount, "reason": reason]) }
    }

    struct Ship: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark shipped (captures what is open under the on-shipment policy).")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Carrier.") var carrier: String?
        @Option(help: "Tracking number.") var tracking: String?
        @OptionGroup var connection: Operation
        func run() async throws {
            var body: [String: Any] = [:]
            if let carrier { body["carrier"] = carrier }
            if let tracking { body["tracking"] = tracking }
            try await connection.send("ship", order: order, body: body)
        }
    }
}
