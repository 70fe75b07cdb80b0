import ArgumentParser
import AsyncHTTPClient
import Foundation
import HTTPTypes
import LedgerAPI
import NIOCore
import NIOPosix
import NIOSSL
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// The CLI's way to a running daemon: the client generated from the API's document (`LedgerAPI`'s `Client`) on
/// AsyncHTTPClient, with the key in `Authorization`, and a failure to reach the daemon told in one line.
enum DaemonClient {
    /// Runs `body` with a client for the daemon at `baseURL` that sends `key`, then shuts the HTTP client down. A
    /// failure to reach the daemon becomes one line on standard error and exit 1 (``reaching(_:idempotencyKey:_:)``).
    /// `timeout` bounds each request, its reply's body included (a stream's too).
    static func with<T>(
        baseURL: String,
        key: String,
        timeout: TimeAmount = .minutes(1),
        idempotencyKey: String? = nil,
        _ body: (Client) async throws -> T
    ) async throws -> T {
        guard let url = URL(string: baseURL), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("invalid URL \(baseURL)")
        }
        var configuration = HTTPClient.Configuration()
        // A command asks once: a daemon that is not there is said at once, not retried until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let client = Client(
            serverURL: url,
            // Times with their fractional seconds (`--due-before`): the daemon reads RFC 3339 to the microsecond.
            configuration: Configuration(dateTranscoder: .iso8601WithFractionalSeconds),
            transport: AsyncHTTPClientTransport(configuration: .init(client: http, timeout: timeout)),
            middlewares: [BearerKey(key: key)]
        )
        let result: Result<T, any Error>
        do {
            result = .success(try await reaching(baseURL, idempotencyKey: idempotencyKey) { try await body(client) })
        } catch {
            result = .failure(error)
        }
        try? await http.shutdown()
        return try result.get()
    }

    /// Runs `body`; a failure to reach the daemon at all becomes one line on standard error and exit 1. When the
    /// request may have reached the daemon (no answer, or the connection closed before it) and carries an
    /// `Idempotency-Key`, the line names the key to send again: the same key cannot apply the operation twice. A reply
    /// the document does not describe (a body that does not decode as its schema) is said as such, also exit 1.
    static func reaching<T>(_ baseURL: String, idempotencyKey: String?, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            let base = URL(string: baseURL).map { "\($0.scheme ?? "http")://\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")" } ?? baseURL
            guard let (reason, mayHaveApplied) = unreachable(error.underlyingError) else {
                FileHandle.standardError.write(
                    Data(
                        "ledgerd: the daemon at \(base) answered \(error.operationID) with what the API document does not describe: \(error.causeDescription) (\(error.underlyingError))\n"
                            .utf8
                    )
                )
                throw ExitCode(1)
            }
            var retry = ""
            if mayHaveApplied, let idempotencyKey {
                retry = " It may have been applied: run it again with --idempotency-key \(idempotencyKey) (applied once, whatever happened)."
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

    /// Why the daemon was not reached, and whether the request may have reached it all the same; nil for an error
    /// that is not about reaching it.
    static func unreachable(_ error: any Error) -> (reason: String, mayHaveApplied: Bool)? {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return ("no answer (connecting timed out)", false)
            case .deadlineExceeded, .readTimeout, .writeTimeout: return ("no answer (timed out)", true)
            case .remoteConnectionClosed: return ("the connection was closed", true)
            case .tlsHandshakeTimeout: return ("TLS failed (no handshake: plain http to an https daemon?)", false)
            default: return ("\(error)", true)
            }
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty && (error.dnsAError != nil || error.dnsAAAAError != nil) { return ("unknown host", false) }
            if let first = error.connectionErrors.first { return unreachable(first.error) }
            return ("cannot connect", false)
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return ("connection refused", false)
            case ECONNRESET, EPIPE: return ("the connection was closed", true)
            default: return ("network error (\(error))", true)
            }
        case is ChannelError:
            return ("the connection failed (\(error))", true)
        case is NIOSSLError, is BoringSSLError:
            return ("TLS failed (plain http to an https daemon, or a certificate this machine does not trust)", false)
        default:
            return nil
        }
    }

    /// Sends the key as `Authorization: Bearer` (the document's operator and auditor schemes).
    struct BearerKey: ClientMiddleware {
        let key: String

        func intercept(
            _ request: HTTPRequest,
            body: HTTPBody?,
            baseURL: URL,
            operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            var request = request
            request.headerFields[.authorization] = "Bearer \(key)"
            return try await next(request, body, baseURL)
        }
    }

    /// A reply's body the document does not describe (an undocumented status), as text.
    static func text(_ body: HTTPBody?) async -> String {
        guard let body, let data = try? await Data(collecting: body, upTo: 64 * 1024) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// What a documented operation answered: its success, or a refusal with its status and `{"error": …}` body, or a status
/// the document does not list for it.
enum Answer<Success> {
    case ok(Success)
    case refused(status: Int, Components.Schemas._Error)
    case undocumented(status: Int, HTTPBody?)

    /// Prints a refusal's error body (or an undocumented reply's status and text) and exits with `code`.
    func fail(exitCode code: Int32 = 1) async throws -> Never {
        print(try await text())
        throw ExitCode(code)
    }

    /// A refusal's error body as JSON, or an undocumented reply's status and text.
    func text() async throws -> String {
        switch self {
        case .ok: ""
        case .refused(_, let error): try WireJSON.encode(error)
        case .undocumented(let status, let body): "HTTP \(status) \(await DaemonClient.text(body))"
        }
    }
}

/// The error body every refusal of the API carries (`Components.Responses.BadRequest` and its kind).
protocol Refusal {
    var error: Components.Schemas._Error { get }
}

extension Components.Responses.BadRequest: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.Unauthorized: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.Forbidden: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.NotFound: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.Conflict: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.PayloadTooLarge: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.UnsupportedMediaType: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.Unprocessable: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.Busy: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.BadGateway: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}
extension Components.Responses.Unavailable: Refusal {
    var error: Components.Schemas._Error {
        switch body {
        case .json(let e): e
        }
    }
}

extension Answer {
    static func refused(_ status: Int, _ refusal: some Refusal) -> Self { .refused(status: status, refusal.error) }
}
