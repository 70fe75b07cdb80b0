import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// How a delivery leaves the daemon: one POST, its answer's status or the failure.
public protocol WebhookTransport: Sendable {
    func post(url: String, body: [UInt8], headers: [(String, String)], timeout: Duration) async -> WebhookTransportResult
}

/// A POST's outcome: the status when the endpoint answered, else why not (never the body or a secret).
public struct WebhookTransportResult: Sendable, Hashable {
    public var statusCode: Int?
    public var error: String?

    public init(statusCode: Int?, error: String?) {
        self.statusCode = statusCode
        self.error = error
    }

    /// A 2xx answer: delivered.
    public var delivered: Bool { statusCode.map { (200..<300).contains($0) } ?? false }
}

/// The transport over AsyncHTTPClient (its shared client; HTTP/1.1 or TLS by the URL's scheme).
public struct HTTPWebhookTransport: WebhookTransport {
    let client: HTTPClient

    public init(client: HTTPClient = .shared) { self.client = client }

    public func post(url: String, body: [UInt8], headers: [(String, String)], timeout: Duration) async -> WebhookTransportResult {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let milliseconds = timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000
            let response = try await client.execute(request, timeout: .milliseconds(milliseconds))
            // The answer's body is read (so the connection can be reused) and discarded.
            _ = try? await response.body.collect(upTo: 64 * 1_024)
            return WebhookTransportResult(statusCode: Int(response.status.code), error: nil)
        } catch {
            return WebhookTransportResult(statusCode: nil, error: String(String(describing: error).prefix(200)))
        }
    }
}
