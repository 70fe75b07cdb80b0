import Foundation
import LedgerTestSupport
import Testing

/// Security review 3, N8: any auditor could open unlimited `/events/stream?after=0` catch-ups. Each key may hold
/// `LEDGERD_FEED_STREAMS_PER_KEY` streams; one more is 429 `busy`, another key is not affected, and a stream that
/// ends gives its slot back.
@Suite(.machine(.shared)) struct FeedStreamLimitTests {
    static func streamRequest(key: String) -> String {
        "GET /events/stream?after=0 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n\r\n"
    }

    /// Opens a stream on a raw connection; the connection once its status line has come (or 20 s passed).
    static func open(port: Int, key: String) async throws -> ByteClient {
        let connection = try await ByteClient.connect(port: port)
        try await connection.send(streamRequest(key: key))
        let deadline = ContinuousClock.now + .seconds(20)
        while !connection.received.contains("\r\n\r\n"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return connection
    }

    @Test(.timeLimit(.minutes(3))) func aKeyHoldsAtMostItsStreamsAndGetsThemBackWhenOneEnds() async throws {
        try await TestApp.withApp(seed: true, environment: ["LEDGERD_FEED_STREAMS_PER_KEY": "2"], live: true) { client, _ in
            let port = try #require(client.port)
            let first = try await Self.open(port: port, key: TestApp.auditorKey)
            let second = try await Self.open(port: port, key: TestApp.auditorKey)
            #expect(first.received.hasPrefix("HTTP/1.1 200") && second.received.hasPrefix("HTTP/1.1 200"))
            let third = try await Self.open(port: port, key: TestApp.auditorKey)
            #expect(third.received.hasPrefix("HTTP/1.1 429") && third.received.contains(#""code":"busy""#), "\(third.received)")
            let other = try await Self.open(port: port, key: TestApp.operatorKey)
            #expect(other.received.hasPrefix("HTTP/1.1 200"), "another key was refused: \(other.received)")
            // One ends (the client goes): its slot comes back once the server notices (at the latest its next keep-alive).
            first.channel.close(promise: nil)
            var reopened = false
            let started = ContinuousClock.now
            while !reopened, ContinuousClock.now - started < .seconds(60) {
                let again = try await Self.open(port: port, key: TestApp.auditorKey)
                reopened = again.received.hasPrefix("HTTP/1.1 200")
                again.channel.close(promise: nil)
                if !reopened { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(reopened, "the ended stream's slot was not given back")
            _ = (second, other)
        }
    }
}
