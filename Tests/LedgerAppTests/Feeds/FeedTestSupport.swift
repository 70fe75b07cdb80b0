import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerCore
import LedgerServices
import LedgerTestSupport
import NIOCore
import Synchronization
import Testing

/// Polls `condition` every 50 ms until it holds; false when `timeout` passed first (a deadline that
/// keeps a broken run from hanging, not a timing assertion).
func eventually(_ timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// Reads `GET /events/stream` with AsyncHTTPClient: the messages until `until` says stop.
func readStream(
    port: Int,
    query: String,
    key: String = TestApp.auditorKey,
    lastEventID: String? = nil,
    until: @Sendable ([ServerSentEvents.Message]) -> Bool
) async throws -> (status: Int, messages: [ServerSentEvents.Message]) {
    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/events/stream?\(query)")
    request.headers.add(name: "Authorization", value: "Bearer \(key)")
    if let lastEventID { request.headers.add(name: "Last-Event-ID", value: lastEventID) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
    guard response.status.code == 200 else { return (Int(response.status.code), []) }
    var parser = ServerSentEvents.Parser()
    var messages: [ServerSentEvents.Message] = []
    for try await chunk in response.body {
        messages += parser.feed(chunk.readableBytesView)
        if until(messages) { break }
    }
    return (200, messages)
}

/// A webhook receiver on 127.0.0.1: answers 500 to the first `failures` requests (or while `failing`),
/// then 200, verifying every request's signature with the secrets it is told and recording what came.
final class WebhookReceiver: Sendable {
    struct Hit: Sendable {
        let position: Int64
        let status: Int
        let signatureValid: Bool
        let signatureCount: Int
        let bodyPosition: Int64?
        let at: Date
    }

    struct State {
        var hits: [Hit] = []
        var failuresLeft: Int
        var failing = false
        var secrets: [String]
        /// Every secret must sign (a rotation's grace period).
        var requireAll = false
    }

    let state: Mutex<State>

    init(failures: Int, secrets: [String]) {
        state = Mutex(State(failuresLeft: failures, secrets: secrets))
    }

    var hits: [Hit] { state.withLock { $0.hits } }
    var delivered: [Int64] { hits.filter { $0.status == 200 }.map(\.position) }
    func set(failing: Bool) { state.withLock { $0.failing = failing } }
    func set(secrets: [String], requireAll: Bool) {
        state.withLock {
            $0.secrets = secrets
            $0.requireAll = requireAll
        }
    }

    func handle(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let bytes = Array(body.readableBytesView)
        let signature = request.headers[HTTPField.Name(WebhookSignature.header)!] ?? ""
        let position = Int64(request.headers[HTTPField.Name(WebhookSignature.positionHeader)!] ?? "") ?? -1
        let bodyPosition = (try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])?["position"] as? Int
        let status = state.withLock { state -> Int in
            let checks = state.secrets.map { WebhookSignature.verify(signature, body: bytes, secret: $0).valid }
            let valid = state.requireAll ? !checks.contains(false) : checks.contains(true)
            let answer: Int
            if state.failing || state.failuresLeft > 0 {
                state.failuresLeft -= state.failing ? 0 : 1
                answer = 500
            } else {
                answer = 200
            }
            state.hits.append(
                Hit(
                    position: position,
                    status: answer,
                    signatureValid: valid,
                    signatureCount: signature.split(separator: ",").filter { $0.hasPrefix("v1=") }.count,
                    bodyPosition: bodyPosition.map(Int64.init),
                    at: Date()
                )
            )
            return answer
        }
        return Response(status: .init(code: status))
    }

    /// Runs `body` with the receiver serving on a port of 127.0.0.1; its URL.
    func serve(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("/hook") { request, _ in try await self.handle(request) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            try await body("http://127.0.0.1:\(port)/hook")
        }
    }
}
