import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `URLSession.shared.data(for:)` for the tests, on AsyncHTTPClient. Foundation's URLSession on Linux watches its
/// sockets with select(2), which cannot watch a descriptor above FD_SETSIZE (1024); the test process holds more
/// descriptors than that at its peak (hundreds of apps' pools side by side), and URLSession's requests then hung,
/// and the whole run with them. NIO's epoll has no such limit.
public enum TestHTTP {
    /// Unlike `HTTPClient.shared`, it fails a request at once when its connection is refused: the tests kill and
    /// restart daemons, and a client that kept retrying the connection until the request's deadline (AsyncHTTPClient's
    /// default) turned every request to a killed daemon into a 30 s wait. Idle connections go after 5 s.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.idleTimeout = .seconds(5)
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// Sends `request` (method, headers, body, `timeoutInterval`) and returns the body and the response.
    public static func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        guard let url = request.url else { throw URLError(.badURL) }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] { outgoing.headers.add(name: name, value: value) }
        if let body = request.httpBody { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let timeout = TimeAmount.milliseconds(Int64(request.timeoutInterval * 1000))
        let response = try await client.execute(outgoing, timeout: timeout)
        let body = try await response.body.collect(upTo: 256 << 20)
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name] = header.value }
        guard let reply = HTTPURLResponse(url: url, statusCode: Int(response.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            throw URLError(.badServerResponse)
        }
        return (Data(body.readableBytesView), reply)
    }
}
