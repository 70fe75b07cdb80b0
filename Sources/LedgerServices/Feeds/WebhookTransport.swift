import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
import Glibc
#endif

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

/// The transport over AsyncHTTPClient, behind the ``WebhookDestinations`` rule (security review 3, N2).
///
/// Each delivery checks its URL again, resolves a host name itself and checks every address it resolves to (a name
/// registered as public may resolve inward later), then connects to the first of them (AsyncHTTPClient's
/// `dnsOverride`: the name still goes in `Host` and in TLS's SNI and certificate check). Redirects are never followed:
/// a 3xx is an answer that is not 2xx, a failed delivery, recorded with its status. A failure is recorded as one of
/// a few fixed texts, never the network's own message ("connection refused", an errno), which made the delivery
/// history a port scanner. A client per delivery (its own connection): deliveries are few, and an address checked
/// must be the address used.
public struct HTTPWebhookTransport: WebhookTransport {
    let destinations: WebhookDestinations

    public init(destinations: WebhookDestinations = WebhookDestinations()) { self.destinations = destinations }

    /// The texts a failed delivery records (besides a status).
    public enum Failure {
        public static let refused = "destination refused: not a public address"
        public static let unresolved = "the host name did not resolve"
        public static let connection = "connection failed"
        public static let timeout = "no answer in time"
    }

    public func post(url: String, body: [UInt8], headers: [(String, String)], timeout: Duration) async -> WebhookTransportResult {
        let host: String
        do {
            host = try destinations.check(url: url).host
        } catch {
            return WebhookTransportResult(statusCode: nil, error: Failure.refused)
        }
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        // A refused connection fails the attempt at once: the dispatcher's schedule is the retry. (AsyncHTTPClient's
        // default reconnects for its whole connect timeout, 10 s, holding the endpoint's claim and its transaction.)
        configuration.connectionPool.retryConnectionEstablishment = false
        if WebhookDestinations.addressBytes(host) == nil {
            let addresses = await Self.resolve(host)
            guard let first = addresses.first else { return WebhookTransportResult(statusCode: nil, error: Failure.unresolved) }
            for address in addresses {
                do { try destinations.check(address: address) } catch { return WebhookTransportResult(statusCode: nil, error: Failure.refused) }
            }
            configuration.dnsOverride = [host: Self.text(first)]
        }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let milliseconds = timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000
        do {
            return try await HTTPClient.withHTTPClient(configuration: configuration) { client in
                let response = try await client.execute(request, timeout: .milliseconds(milliseconds))
                // The answer's body is read (so the connection closes cleanly) and discarded.
                _ = try? await response.body.collect(upTo: 64 * 1_024)
                return WebhookTransportResult(statusCode: Int(response.status.code), error: nil)
            }
        } catch let error as HTTPClientError where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) {
            return WebhookTransportResult(statusCode: nil, error: Failure.timeout)
        } catch {
            return WebhookTransportResult(statusCode: nil, error: Failure.connection)
        }
    }

    /// The addresses `host` resolves to (`getaddrinfo`, on a thread of its own: it blocks), 4 or 16 bytes each.
    static func resolve(_ host: String) async -> [[UInt8]] {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, nil, &hints, &list) == 0 else { return continuation.resume(returning: []) }
                defer { freeaddrinfo(list) }
                var addresses: [[UInt8]] = []
                var entry = list
                while let current = entry?.pointee {
                    if current.ai_family == AF_INET, let address = current.ai_addr {
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                            var bytes = $0.pointee.sin_addr
                            addresses.append(withUnsafeBytes(of: &bytes) { Array($0) })
                        }
                    } else if current.ai_family == AF_INET6, let address = current.ai_addr {
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                            var bytes = $0.pointee.sin6_addr
                            addresses.append(withUnsafeBytes(of: &bytes) { Array($0) })
                        }
                    }
                    entry = current.ai_next
                }
                continuation.resume(returning: addresses)
            }
        }
    }

    /// An address's text (`inet_ntop`).
    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        _ = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
