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
    /// Sends `request` (method, headers, body, `timeoutInterval`) and returns the body and the response.
    public static func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        guard let url = request.url else { throw URLError(.badURL) }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] { outgoing.headers.add(name: name, value: value) }
        if let body = request.httpBody { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let timeout = TimeAmount.milliseconds(Int64(request.timeoutInterval * 1000))
        let response = try await HTTPClient.shared.execute(outgoing, timeout: timeout)
        let body = try await response.body.collect(upTo: 256 << 20)
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name] = header.value }
        guard let reply = HTTPURLResponse(url: url, statusCode: Int(response.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            throw URLError(.badServerResponse)
        }
        return (Data(body.readableBytesView), reply)
    }
}
