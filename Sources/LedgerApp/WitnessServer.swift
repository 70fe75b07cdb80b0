import Foundation
import Hummingbird
import LedgerCore
import LedgerHTTP
import LedgerServices
import Logging

/// `ledgerd witness serve`: a C2SP tlog-witness on its own (its key, the log keys it trusts, its state file; no
/// database), serving `POST /add-checkpoint`, `GET /key` and `GET /metrics`.
public enum WitnessServer {
    /// Serves until stopped; prints `witness listening on port N` when `announce` (port 0: any free one).
    public static func run(
        name: String,
        keyPath: String,
        trustedKeys: [String],
        stateFile: String,
        host: String,
        port: Int,
        announce: Bool,
        logger: Logger
    ) async throws {
        let keys = try trustedKeys.map { text in
            do { return try NoteVerifier(vkey: text) } catch let error as NoteError { throw ConfigurationError("log key \(text): \(error.reason)") }
        }
        guard !keys.isEmpty else { throw ConfigurationError("a witness trusts at least one log key (--log-key)") }
        let metrics = LedgerMetrics()
        let service = try WitnessService(
            name: name,
            key: CheckpointKeys.privateKey(contentsOf: keyPath),
            trustedKeys: keys,
            stateFile: URL(fileURLWithPath: stateFile),
            metrics: metrics.factory,
            logger: logger
        )
        let app = application(service: service, metrics: metrics, host: host, port: port, logger: logger) { port in
            if announce { FileHandle.standardOutput.write(Data("witness listening on port \(port)\n".utf8)) }
        }
        try await app.runService()
    }

    /// The witness's HTTP application (the command and the tests).
    public static func application(
        service: WitnessService,
        metrics: LedgerMetrics,
        host: String = "127.0.0.1",
        port: Int = 0,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router(context: BasicRequestContext.self)
        WitnessRoutes<BasicRequestContext>(witness: service, metricsText: { metrics.exposition() }).register(on: router)
        return Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "ledgerd-witness"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("witness serving", metadata: ["port": "\(port)", "key": "\(service.verifierKey)"])
                onServerRunning(port)
            },
            logger: logger
        )
    }
}
