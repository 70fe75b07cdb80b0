import AsyncHTTPClient
import Foundation
import LedgerCore
import NIOCore

/// A C2SP tlog-witness reached over HTTP: `POST <prefix>/add-checkpoint`, its answer read as the protocol says
/// (200: cosignature lines, kept only when they verify with the witness's key; 409 `text/x.tlog.size`: the size it
/// last cosigned; anything else: refused, with the body as the reason).
public struct HTTPWitness: WitnessSubmitter {
    public let url: String
    public let key: NoteVerifier
    /// The client to use; nil (the default): a client per call that does not retry a failed connection. The builder
    /// asks an unreachable witness again with a backoff of its own (``TransparencyLogBuilder``), while AsyncHTTPClient's
    /// default keeps reconnecting for its connect timeout (10 s) or until the request's deadline: a witness whose address
    /// refuses connections held each attempt for 10 s instead of failing at once.
    let client: HTTPClient?
    let timeout: Duration

    public var name: String { key.name }

    public init(url: String, verifierKey: String, client: HTTPClient? = nil, timeout: Duration = .seconds(10)) throws {
        do {
            key = try NoteVerifier(vkey: verifierKey)
        } catch {
            throw ConfigurationError("witness \(url): \(error.reason)")
        }
        guard key.kind == .cosignatureV1 else { throw ConfigurationError("witness \(url): the key is not a cosignature/v1 key (type 0x04)") }
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.client = client
        self.timeout = timeout
    }

    public func addCheckpoint(_ request: AddCheckpointRequest) async throws -> WitnessAnswer {
        var post = HTTPClientRequest(url: url + "/add-checkpoint")
        post.method = .POST
        post.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        post.body = .bytes(ByteBuffer(string: request.body))
        let exchange: @Sendable (HTTPClient) async throws -> (UInt, String) = { [post, timeout] client in
            let response = try await client.execute(post, timeout: .seconds(timeout.components.seconds))
            return (response.status.code, String(buffer: try await response.body.collect(upTo: 64 * 1_024)))
        }
        let (status, body): (UInt, String)
        if let client {
            (status, body) = try await exchange(client)
        } else {
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.connectionPool.retryConnectionEstablishment = false
            (status, body) = try await HTTPClient.withHTTPClient(configuration: configuration, exchange)
        }
        switch status {
        case 200:
            var cosigned = request.note
            cosigned.signatures = try body.split(separator: "\n").map { try SignedNote.Signature(line: $0) }
            let verified = try cosigned.verified(by: [key])
            return .cosigned(verified.map(\.1))
        case 409:
            if let size = UInt64(body.trimmingCharacters(in: .whitespacesAndNewlines)) { return .conflict(latestSize: size) }
            return .refused(status: 409, reason: String(body.prefix(500)))
        default:
            return .refused(status: Int(status), reason: String(body.prefix(500)))
        }
    }
}
