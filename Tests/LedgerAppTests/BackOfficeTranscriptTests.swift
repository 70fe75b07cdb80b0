import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Synchronization
import Testing

/// The back office's replies that the book's flow (``GoldenTranscriptTests``) does not reach, as a
/// recorded transcript: the settlement run as newline-delimited JSON, batch lists and as-of reads,
/// a reconciliation with a break and its resolution, an uploaded report, checkpoints, contacts and
/// erasures, paged lists with a next cursor. Compared byte for byte with `Golden/back-office.transcript`
/// after the same masking (uuids, times, hashes); the `Ledger-As-Of-*` headers are part of it.
///
/// Recorded before the typed wire layer replaced the hand-built JSON strings; a change to it is a
/// change of the public contract. Re-record with `LEDGERD_RECORD_GOLDEN=1 swift test --filter BackOfficeTranscript`.
@Suite(.machine(.shared)) struct BackOfficeTranscriptTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden/back-office.transcript")

    @Test func theBackOfficeAnswersExactlyAsRecorded() async throws {
        let clock = SimulatedClock(ISO8601DateFormatter().date(from: "2026-06-17T10:00:00Z")!)
        // Every report line dropped: the first day's batch breaks once the second day closes its window.
        var faults = FaultConfiguration()
        faults.dropLine = FaultKnob(probability: Rate(numerator: 1, denominator: 1))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(faults: faults), clock: clock.reading)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-transcript-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let transcript = Mutex("")
        try await TestApp.withApp(
            seed: true,
            acquirer: acquirer,
            clock: { clock.now },
            environment: ["LEDGERD_DATA_DIR": directory.path],
            checkpointKey: CheckpointKey.generate()
        ) { client, services in
            var log: [String] = []
            func call(
                _ method: HTTPRequest.Method,
                _ uri: String,
                _ body: String? = nil,
                key: String? = TestApp.auditorKey,
                accept: String? = nil,
                idempotency: String? = nil
            ) async throws -> String {
                var headers: HTTPFields = [:]
                if let idempotency { headers[HTTPField.Name("Idempotency-Key")!] = idempotency }
                if body != nil { headers[.contentType] = method == .post && uri.hasSuffix("/reports") ? "text/csv" : "application/json" }
                if let key { headers[.authorization] = "Bearer \(key)" }
                if let accept { headers[.accept] = accept }
                let (status, point, text) = try await client.execute(
                    uri: uri,
                    method: method,
                    headers: headers,
                    body: body.map { ByteBuffer(string: $0) }
                ) { response in
                    let point = [StateRoutes.asOfPositionHeader, StateRoutes.asOfTimeHeader].compactMap { name in
                        response.headers[name].map { "\(name): \($0)" }
                    }
                    return (response.status, point, String(buffer: response.body))
                }
                let shown = uri.hasSuffix("/reports") ? " <report>" : body.map { " " + $0 } ?? ""
                log.append("\(method) \(uri)\(shown)\n\(status.code)\n" + point.map { $0 + "\n" }.joined() + "\(text)\n")
                return text
            }
            func orderID(_ reply: String) throws -> String {
                let object = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any]
                return try #require(object?["order_id"] as? String)
            }
            let op = TestApp.operatorKey
            let payment = Transcript.canonical(StorefrontDriver.paymentBody())
            let a = try orderID(try await call(.post, "/payment", payment, key: nil))
            let paid = try await services.store.head().position
            _ = try await call(.post, "/orders/\(a)/capture", "{}", key: op, idempotency: UUID().uuidString.lowercased())
            _ = try await call(.get, "/authorizations/\(a)")
            _ = try await call(.get, "/authorizations/\(a)?as_of=\(paid)")
            _ = try await call(.get, "/orders/\(a)?as_of=\(paid)")
            _ = try await call(.get, "/products/clock?as_of=\(paid)")
            _ = try await call(.get, "/inventory?as_of=\(paid)")
            _ = try await call(.get, "/authorizations/\(a)?as_of=1")

            clock.set(ISO8601DateFormatter().date(from: "2026-06-17T22:00:01Z")!)
            _ = try await call(.post, "/settlements/run", #"{"business_date": "2026-06-17"}"#, key: op, accept: "application/x-ndjson")
            let settled = try await services.store.head().position
            let b = try orderID(try await call(.post, "/payment", payment, key: nil))
            _ = try await call(.post, "/orders/\(b)/capture", #"{"amount": "10.00"}"#, key: op, idempotency: UUID().uuidString.lowercased())
            clock.set(ISO8601DateFormatter().date(from: "2026-06-18T22:00:01Z")!)
            _ = try await call(.post, "/settlements/run", #"{"business_date": "2026-06-18"}"#, key: op)

            let batch = "OrderLedgerStore-USD-2026-06-17"
            _ = try await call(.get, "/settlements")
            _ = try await call(.get, "/settlements?from=2026-06-18")
            _ = try await call(.get, "/settlements/\(batch)")
            _ = try await call(.get, "/settlements/\(batch)?as_of=\(settled)")
            let reconciliation = try await call(.get, "/settlements/\(batch)/reconciliation")
            let object = try JSONSerialization.jsonObject(with: Data(reconciliation.utf8)) as? [String: Any]
            let breakID = try #require((object?["breaks"] as? [[String: Any]])?.first?["break_id"] as? String)
            _ = try await call(.post, "/reconciliation/breaks/\(breakID)/resolve", #"{"reason": "acquirer ticket 42"}"#, key: op)
            _ = try await call(.post, "/reconciliation/breaks/\(breakID)/resolve", #"{"reason": "twice"}"#, key: op)
            let report = try await call(.get, "/settlements/\(batch)/report.csv")
            _ = try await call(.post, "/reconciliation/reports", report, key: op)

            _ = try await call(.get, "/streams/order-\(a)/events")
            _ = try await call(.get, "/events?after=2&limit=2")
            _ = try await call(.get, "/orders?limit=1")
            _ = try await call(.get, "/authorizations?limit=1")
            _ = try await call(.get, "/audit/checkpoints")
            _ = try await call(.post, "/audit/checkpoints", "{}", key: op)
            _ = try await call(.get, "/audit/checkpoints?limit=1")
            _ = try await call(.get, "/orders/\(a)/contact", key: op)
            _ = try await call(.post, "/privacy/erasures", #"{"customer": "JANE@example.com"}"#, key: op)
            _ = try await call(.get, "/orders/\(b)/contact", key: op)
            _ = try await call(.post, "/privacy/erasures", #"{"customer": "jane@example.com"}"#, key: op)
            transcript.withLock { $0 = log.joined(separator: "\n") }
        }
        try Transcript.expectMatches(transcript.withLock { $0 }, golden: Self.golden)
    }
}
