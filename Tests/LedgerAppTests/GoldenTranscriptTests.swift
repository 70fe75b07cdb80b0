import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerServices
import LedgerTestSupport
import Synchronization
import Testing

/// The HTTP contract as a recorded transcript: the book's flow (inventory → payment → capture → ship →
/// refund → settle → history, plus refusals along the way) through the real router, compared byte for
/// byte with `Golden/book-flow.transcript` after masking what legitimately varies between runs
/// (uuids, timestamps, hashes; each numbered by first appearance so that references stay checked).
///
/// The transcript was recorded before the services were moved out of the HTTP layer; a change to it is
/// a change of the public contract. Re-record with `LEDGERD_RECORD_GOLDEN=1 swift test --filter GoldenTranscript`.
@Suite(.machine(.shared)) struct GoldenTranscriptTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/book-flow.transcript")

    @Test func theBooksFlowAnswersExactlyAsRecorded() async throws {
        let clock = SimulatedClock(ISO8601DateFormatter().date(from: "2026-06-17T10:00:00Z")!)
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        let transcript = Mutex("")
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, _ in
            var log: [String] = []
            func call(
                _ method: HTTPRequest.Method,
                _ uri: String,
                _ body: String? = nil,
                key: String? = nil,
                idempotency: String? = nil
            ) async throws -> String {
                var headers: HTTPFields = [:]
                if body != nil { headers[.contentType] = "application/json" }
                if let key { headers[.authorization] = "Bearer \(key)" }
                if let idempotency { headers[HTTPField.Name("Idempotency-Key")!] = idempotency }
                let (status, text) = try await client.execute(
                    uri: uri,
                    method: method,
                    headers: headers,
                    body: body.map { ByteBuffer(string: $0) }
                ) { ($0.status, String(buffer: $0.body)) }
                log.append("\(method) \(uri)\(body.map { " " + $0 } ?? "")\n\(status.code)\n\(text)\n")
                return text
            }
            let op = TestApp.operatorKey
            let auditor = TestApp.auditorKey
            _ = try await call(.get, "/inventory")
            _ = try await call(.get, "/shipping_methods")
            let payment = Transcript.canonical(StorefrontDriver.paymentBody())
            // Refusals first: they change nothing, so the positions below stay the same.
            _ = try await call(.post, "/payment", Transcript.canonical(StorefrontDriver.paymentBody(amount: 1)))
            _ = try await call(.post, "/payment", #"{"amount": "#)
            _ = try await call(.post, "/payment", Transcript.canonical(StorefrontDriver.paymentBody(product: "Nothing")))
            let paid = try await call(.post, "/payment", payment, idempotency: "golden-1")
            _ = try await call(.post, "/payment", payment, idempotency: "golden-1")
            let reply = try JSONSerialization.jsonObject(with: Data(paid.utf8)) as? [String: Any]
            let order = try #require(reply?["order_id"] as? String)
            _ = try await call(.get, "/orders/\(order)", key: auditor)
            // Money-moving operations carry an Idempotency-Key each (required): a uuid, as the ledger's own references are
            // (the acquirer's modification reference names it), so the masked transcript is unchanged.
            _ = try await call(.post, "/orders/\(order)/capture", "{}", idempotency: UUID().uuidString.lowercased())
            _ = try await call(.post, "/orders/\(order)/capture", #"{"amount": "-1"}"#, key: op, idempotency: UUID().uuidString.lowercased())
            _ = try await call(.post, "/orders/\(order)/capture", "{}", key: op, idempotency: UUID().uuidString.lowercased())
            _ = try await call(.post, "/orders/\(order)/capture", "{}", key: op, idempotency: UUID().uuidString.lowercased())
            _ = try await call(.post, "/orders/\(order)/ship", #"{"carrier": "UPS", "tracking": "1Z999"}"#, key: op)
            _ = try await call(
                .post,
                "/orders/\(order)/refund",
                #"{"amount": "10.00", "reason": "damaged"}"#,
                key: op,
                idempotency: UUID().uuidString.lowercased()
            )
            _ = try await call(
                .post,
                "/orders/\(order)/refund",
                #"{"amount": "100.00", "reason": "too much"}"#,
                key: op,
                idempotency: UUID().uuidString.lowercased()
            )
            _ = try await call(.get, "/inventory")
            _ = try await call(.post, "/settlements/run", #"{"business_date": "2026-06-17"}"#, key: op)
            clock.set(ISO8601DateFormatter().date(from: "2026-06-17T22:00:01Z")!)
            let settled = try await call(.post, "/settlements/run", #"{"business_date": "2026-06-17"}"#, key: op)
            let summary = try JSONSerialization.jsonObject(with: Data(settled.utf8)) as? [String: Any]
            let batch = try #require((summary?["batches"] as? [[String: Any]])?.first?["batch_id"] as? String)
            _ = try await call(.get, "/settlements", key: auditor)
            _ = try await call(.get, "/settlements/\(batch)", key: auditor)
            _ = try await call(.get, "/settlements/\(batch)/reconciliation", key: auditor)
            _ = try await call(.get, "/settlements/\(batch)/report.csv", key: auditor)
            _ = try await call(.get, "/orders/\(order)", key: auditor)
            _ = try await call(.get, "/orders/\(order)/history", key: auditor)
            _ = try await call(.get, "/orders?limit=5", key: auditor)
            _ = try await call(.get, "/authorizations", key: auditor)
            _ = try await call(.get, "/products/clock", key: auditor)
            _ = try await call(.get, "/streams/order-\(order)/events", key: auditor)
            _ = try await call(.get, "/events?after=0&limit=3", key: auditor)
            _ = try await call(.get, "/audit/verify", key: auditor)
            _ = try await call(.get, "/orders/no-such-order", key: auditor)
            transcript.withLock { $0 = log.joined(separator: "\n") }
        }
        try Transcript.expectMatches(transcript.withLock { $0 }, golden: Self.golden)
    }
}
