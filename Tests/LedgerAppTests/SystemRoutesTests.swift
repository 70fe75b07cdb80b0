import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Logging
import PostgresNIO
import Testing

/// Drives the real router (with its services: the pool and the writer) against a real database.
@Suite(.machine(.shared)) struct SystemRoutesTests {
    struct HealthBody: Decodable {
        struct Database: Decodable {
            let status: String
            let last_position: Int64?
        }
        let status: String
        let database: Database
    }

    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            let code: String
            let message: String
            let field: String?
        }
        let error: Detail
    }

    @Test func healthReportsTheDatabaseAndTheLastPosition() async throws {
        try await TestApp.withApp { client, services in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                let health = try JSONDecoder().decode(HealthBody.self, from: Data(buffer: response.body))
                #expect(health.status == "ok" && health.database.status == "up" && health.database.last_position == 0)
            }
            for n in 0..<3 {
                _ = try await services.writer.append(
                    AppendRequest(
                        stream: StreamID("sample-1")!,
                        expectedVersion: .any,
                        events: [NewEvent(type: "SampleRecorded", data: #"{"n": \#(n)}"#, effectiveAt: Date())]
                    )
                )
            }
            try await client.execute(uri: "/health", method: .get) { response in
                let health = try JSONDecoder().decode(HealthBody.self, from: Data(buffer: response.body))
                #expect(health.database.last_position == 3)
            }
        }
    }

    /// A scrape's key: `/metrics` needs an operator or auditor key, as every back-office read does (L8).
    static let metricsKey: HTTPFields = [.authorization: "Bearer \(TestApp.auditorKey)"]

    /// L8: `/metrics` (request counts by route and status, sign-in attempts, event volumes) is a back-office read — no
    /// key or an unknown one is 401 with the error shape and nothing of the page; an auditor's or an operator's key reads it.
    @Test func metricsNeedAnOperatorOrAuditorKey() async throws {
        try await TestApp.withApp { client, _ in
            for headers: HTTPFields in [[:], [.authorization: "Bearer not-a-key"]] {
                try await client.execute(uri: "/metrics", method: .get, headers: headers) { response in
                    let text = String(buffer: response.body)
                    #expect(response.status == .unauthorized && text.contains(#""unauthenticated""#), "\(headers): \(text)")
                    #expect(!text.contains("http_requests_total"))
                }
            }
            for key in [TestApp.auditorKey, TestApp.operatorKey] {
                try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(key)"]) { response in
                    #expect(response.status == .ok && String(buffer: response.body).contains("http_requests_total{"))
                }
            }
        }
    }

    @Test func metricsAreInPrometheusTextFormat() async throws {
        try await TestApp.withApp { client, services in
            _ = try await services.writer.append(
                AppendRequest(
                    stream: StreamID("sample-1")!,
                    expectedVersion: .any,
                    events: [
                        NewEvent(type: "SampleRecorded", data: "{}", effectiveAt: Date()),
                        NewEvent(type: "SampleRecorded", data: "{}", effectiveAt: Date()),
                    ]
                )
            )
            try await client.execute(uri: "/health", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/nowhere", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/metrics", method: .get, headers: Self.metricsKey) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
                let text = String(buffer: response.body)
                #expect(text.contains("# TYPE ledger_appended_events_total counter"))
                #expect(text.contains("ledger_appended_events_total 2"))
                #expect(text.contains(#"ledger_append_requests_total{outcome="appended"} 1"#))
                #expect(text.contains("ledger_batch_events_bucket"))
                #expect(text.contains("ledger_commit_duration_seconds_bucket"))
                #expect(text.contains(#"http_requests_total{route="/health",method="GET",status="200"} 1"#))
                #expect(text.contains(#"http_requests_total{route="NotFound",method="GET",status="404"} 1"#))
            }
        }
    }

    /// Every metric has its `# HELP` (none the generic fallback), the process metrics and the database's state are
    /// there, and `promtool check metrics` (when installed) accepts the page.
    @Test func everyMetricHasHelpAndPromtoolAcceptsThePage() async throws {
        try await TestApp.withApp(seed: true) { client, _ in
            #expect(try await StorefrontDriver().pay(client, StorefrontDriver.paymentBody()).0 == .ok)
            try await client.execute(uri: "/metrics", method: .get, headers: Self.metricsKey) { response in
                let text = String(buffer: response.body)
                let lines = text.split(separator: "\n").map(String.init)
                var types = 0
                for (index, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
                    types += 1
                    let name = line.split(separator: " ")[2]
                    let help = index > 0 ? lines[index - 1] : ""
                    #expect(help.hasPrefix("# HELP \(name) ") && !help.contains("ledgerd metric"), "\(line) has no help: \(help)")
                }
                #expect(types >= 10)
                #expect(text.contains("ledger_database_up 1"))
                #expect(text.contains("process_resident_memory_bytes ") && text.contains("process_open_fds "))
                try await expectPromtoolAccepts(text)
            }
        }
    }

    /// The background jobs are on `/metrics` with their help: every app runs the expiry sweeper (here each second; it
    /// expires a hold lapsed on the simulated clock), the inventory snapshotter and the webhook dispatcher.
    @Test(.timeLimit(.minutes(3))) func backgroundJobRunsAreOnTheMetricsPage() async throws {
        let clock = SimulatedClock(Date(timeIntervalSince1970: 1_790_000_000))
        let model = AcquirerModel(seed: 5, clock: { clock.now })
        try await TestApp.withApp(
            seed: true,
            acquirer: model,
            clock: { clock.now },
            environment: ["LEDGERD_EXPIRY_INTERVAL_SECONDS": "1"]
        ) { client, services in
            _ = try await StorefrontDriver().placeOrder(client)
            clock.advance(by: 8 * 86_400)
            let jobs = ["expiry", "inventory_snapshot", "webhook_dispatch"]
            var text = ""
            let ran = try await eventually {
                text = try await client.execute(uri: "/metrics", method: .get, headers: Self.metricsKey) { String(buffer: $0.body) }
                return text.contains("ledger_holds_expired_total 1")
                    && jobs.allSatisfy({ text.contains(#"ledger_job_runs_total{name="\#($0)",outcome="success"} "#) })
            }
            try #require(ran, "within 60 s the metrics page did not show a run of each job and the expiry:\n\(text)")
            for job in jobs {
                #expect(text.contains(#"ledger_job_last_success_timestamp_seconds{name="\#(job)"} "#))
                #expect(text.contains(#"ledger_job_duration_seconds_count{name="\#(job)"} "#))
            }
            for name in [
                "ledger_job_runs_total", "ledger_job_duration_seconds", "ledger_job_last_success_timestamp_seconds", "ledger_holds_expired_total",
            ] {
                #expect(text.contains("# HELP \(name) ") && !text.contains("# HELP \(name) ledgerd metric"), "\(name) has no help")
            }
            #expect(try await services.eventCount(type: "HoldExpired") == 1)
        }
    }

    /// Its services start together, so each waits for the pool; PostgresNIO would warn of a lease before `run()`.
    @Test func nothingLeasesAConnectionBeforeThePoolRuns() async throws {
        let logs = CapturedLogs()
        var poolLogger = Logger(label: "ledger.tests.pool") { _ in CapturingLogHandler(sink: logs) }
        poolLogger.logLevel = .warning
        for _ in 0..<10 {
            // Seeding runs before the first request, so it is the first to query.
            try await TestApp.withApp(seed: true, poolLogger: poolLogger) { client, _ in
                try await client.execute(uri: "/inventory", method: .get) { #expect($0.status == .ok) }
            }
        }
        #expect(!logs.text.contains("hasn't been called yet"), "\(logs.text)")
    }

    @Test func unknownRoutesAnswerWithTheJSONErrorShape() async throws {
        try await TestApp.withApp { client, _ in
            try await client.execute(uri: "/no/such/thing", method: .get) { response in
                #expect(response.status == .notFound)
                let body = try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body))
                #expect(body.error.code == "not_found")
                #expect(body.error.message.contains("/no/such/thing"))
            }
        }
    }
}
