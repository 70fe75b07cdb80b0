import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import LedgerBench
import LedgerCore
import LedgerServices
import NIOCore

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

        /// Runs `body` with the generated client for the daemon at ``baseURL()``, sending the operator key
        /// (``DaemonClient/with(baseURL:key:timeout:idempotencyKey:_:)``).
        func withClient<T>(
            timeout: TimeAmount = .minutes(1),
            idempotencyKey: String? = nil,
            _ body: (Client) async throws -> T
        ) async throws -> T {
            let key = try apiKey ?? APIKeys.operatorKey(for: common.configuration())
            return try await DaemonClient.with(baseURL: try baseURL(), key: key, timeout: timeout, idempotencyKey: idempotencyKey, body)
        }
    }

    /// The options of an operation on an order: the daemon to reach, and the operation's idempotency key (only these
    /// commands take one: the daemon requires it for the operations that move money).
    struct Operation: ParsableArguments {
        @OptionGroup var connection: Connection
        @Option(help: "Idempotency key: the same key and arguments apply once (default: a new key per invocation).")
        var idempotencyKey: String?

        /// Sends `operation` with the invocation's idempotency key, prints the reply, and fails on a refusal (exit 2 when
        /// the issuer declined). Without `--idempotency-key` the invocation makes its own; when the daemon may have applied
        /// it without answering, ``DaemonClient/reaching(_:idempotencyKey:_:)`` names the key to retry with.
        func send(_ operation: (Client, _ idempotencyKey: String) async throws -> Answer<HoldReply>) async throws {
            let key = idempotencyKey ?? "cli-\(UUID.newRandomString())"
            let answer = try await connection.withClient(idempotencyKey: key) { try await operation($0, key) }
            guard case .ok(let hold) = answer else { try await answer.fail() }
            print(try WireJSON.encode(hold.reply))
            if hold.declined { throw ExitCode(2) }
        }
    }

    /// A hold operation's reply, and whether it is the issuer's decline (402).
    struct HoldReply {
        let reply: Components.Schemas.HoldOperationReply
        let declined: Bool
    }

    struct Capture: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Capture part or all of the open amount.")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount, e.g. 12.50 (default: all that is open).") var amount: String?
        @Flag(help: "Final capture: release the rest of the hold.") var final = false
        @OptionGroup var connection: Operation
        func run() async throws {
            try await connection.send { client, key in
                try await client.captureOrder(
                    path: .init(id: order),
                    headers: .init(idempotencyKey: key),
                    body: .json(.init(amount: amount, final: final))
                ).answer
            }
        }
    }

    struct Increment: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask the issuer to add to the hold (exit 2 when declined).")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount to add, e.g. 5.00.") var amount: String
        @OptionGroup var connection: Operation
        func run() async throws {
            try await connection.send { client, key in
                try await client.incrementOrder(path: .init(id: order), headers: .init(idempotencyKey: key), body: .json(.init(amount: amount)))
                    .answer
            }
        }
    }

    struct Void: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Void part or all of the open amount (all: the order is cancelled).")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount (default: all that is open).") var amount: String?
        @OptionGroup var connection: Operation
        func run() async throws {
            try await connection.send { client, key in
                try await client.voidOrder(path: .init(id: order), headers: .init(idempotencyKey: key), body: .json(.init(amount: amount))).answer
            }
        }
    }

    struct Refund: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refund captured money.")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Amount, e.g. 10.00.") var amount: String
        @Option(help: "Why (kept in the ledger).") var reason: String
        @OptionGroup var connection: Operation
        func run() async throws {
            try await connection.send { client, key in
                try await client.refundOrder(
                    path: .init(id: order),
                    headers: .init(idempotencyKey: key),
                    body: .json(.init(amount: amount, reason: reason))
                ).answer
            }
        }
    }

    struct Ship: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark shipped (captures what is open under the on-shipment policy).")
        @Argument(help: "Order id.") var order: String
        @Option(help: "Carrier.") var carrier: String?
        @Option(help: "Tracking number.") var tracking: String?
        @OptionGroup var connection: Operation
        func run() async throws {
            try await connection.send { client, key in
                try await client.shipOrder(
                    path: .init(id: order),
                    headers: .init(idempotencyKey: key),
                    body: .json(.init(carrier: carrier, tracking: tracking))
                ).answer
            }
        }
    }
}

// Each hold operation's answers: the reply, or the documented refusal (the same set for all five; 402 only for increment).

extension Operations.CaptureOrder.Output {
    var answer: Answer<Order.HoldReply> {
        switch self {
        case .ok(let ok): .ok(Order.HoldReply(reply: ok.reply, declined: false))
        case .badRequest(let refusal): .refused(400, refusal)
        case .unauthorized(let refusal): .refused(401, refusal)
        case .forbidden(let refusal): .refused(403, refusal)
        case .notFound(let refusal): .refused(404, refusal)
        case .conflict(let refusal): .refused(409, refusal)
        case .contentTooLarge(let refusal): .refused(413, refusal)
        case .unsupportedMediaType(let refusal): .refused(415, refusal)
        case .unprocessableContent(let refusal): .refused(422, refusal)
        case .badGateway(let refusal): .refused(502, refusal)
        case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
        }
    }
}

extension Operations.IncrementOrder.Output {
    var answer: Answer<Order.HoldReply> {
        switch self {
        case .ok(let ok): .ok(Order.HoldReply(reply: ok.reply, declined: false))
        case .code402(let declined):
            switch declined.body {
            case .json(let reply): .ok(Order.HoldReply(reply: reply, declined: true))
            }
        case .badRequest(let refusal): .refused(400, refusal)
        case .unauthorized(let refusal): .refused(401, refusal)
        case .forbidden(let refusal): .refused(403, refusal)
        case .notFound(let refusal): .refused(404, refusal)
        case .conflict(let refusal): .refused(409, refusal)
        case .contentTooLarge(let refusal): .refused(413, refusal)
        case .unsupportedMediaType(let refusal): .refused(415, refusal)
        case .unprocessableContent(let refusal): .refused(422, refusal)
        case .badGateway(let refusal): .refused(502, refusal)
        case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
        }
    }
}

extension Operations.VoidOrder.Output {
    var answer: Answer<Order.HoldReply> {
        switch self {
        case .ok(let ok): .ok(Order.HoldReply(reply: ok.reply, declined: false))
        case .badRequest(let refusal): .refused(400, refusal)
        case .unauthorized(let refusal): .refused(401, refusal)
        case .forbidden(let refusal): .refused(403, refusal)
        case .notFound(let refusal): .refused(404, refusal)
        case .conflict(let refusal): .refused(409, refusal)
        case .contentTooLarge(let refusal): .refused(413, refusal)
        case .unsupportedMediaType(let refusal): .refused(415, refusal)
        case .unprocessableContent(let refusal): .refused(422, refusal)
        case .badGateway(let refusal): .refused(502, refusal)
        case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
        }
    }
}

extension Operations.RefundOrder.Output {
    var answer: Answer<Order.HoldReply> {
        switch self {
        case .ok(let ok): .ok(Order.HoldReply(reply: ok.reply, declined: false))
        case .badRequest(let refusal): .refused(400, refusal)
        case .unauthorized(let refusal): .refused(401, refusal)
        case .forbidden(let refusal): .refused(403, refusal)
        case .notFound(let refusal): .refused(404, refusal)
        case .conflict(let refusal): .refused(409, refusal)
        case .contentTooLarge(let refusal): .refused(413, refusal)
        case .unsupportedMediaType(let refusal): .refused(415, refusal)
        case .unprocessableContent(let refusal): .refused(422, refusal)
        case .badGateway(let refusal): .refused(502, refusal)
        case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
        }
    }
}

extension Operations.ShipOrder.Output {
    var answer: Answer<Order.HoldReply> {
        switch self {
        case .ok(let ok): .ok(Order.HoldReply(reply: ok.reply, declined: false))
        case .badRequest(let refusal): .refused(400, refusal)
        case .unauthorized(let refusal): .refused(401, refusal)
        case .forbidden(let refusal): .refused(403, refusal)
        case .notFound(let refusal): .refused(404, refusal)
        case .conflict(let refusal): .refused(409, refusal)
        case .contentTooLarge(let refusal): .refused(413, refusal)
        case .unsupportedMediaType(let refusal): .refused(415, refusal)
        case .unprocessableContent(let refusal): .refused(422, refusal)
        case .badGateway(let refusal): .refused(502, refusal)
        case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
        }
    }
}

extension Components.Responses.HoldOperation {
    /// The operation's reply (the response's one body).
    var reply: Components.Schemas.HoldOperationReply {
        switch body {
        case .json(let reply): reply
        }
    }
}
