import Foundation
import LedgerCore
import LedgerEngine
import LedgerPostgres
import LedgerTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

/// During a database outage every append fails; the writer logs that through a throttle, not once per request
/// (security review 4, L5: 28,728 `append failed` lines, 3.2 MB, in a 20 s outage).
@Suite(.machine(.shared)) struct AppendFailureLogTests {
    /// The messages a logger received.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    struct Capture: LogHandler {
        let lines: Lines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) { lines.lines.withLock { $0.append("\(event.message)") } }
    }

    @Test(.timeLimit(.minutes(2))) func manyFailedAppendsLogABoundedNumberOfLines() async throws {
        let lines = Lines()
        let logger = Logger(label: "ledger.tests.append-failures") { _ in Capture(lines: lines) }
        // A socket nothing listens on: every statement fails as unavailable at its deadline.
        let missing = PostgresClient.Configuration(
            unixSocketPath: "/tmp/ledgerd-no-such-\(UUID().uuidString.prefix(8))/.s.PGSQL.5432",
            username: "ledger_app",
            password: nil,
            database: "ledger"
        )
        let pool = DatabaseClient(configuration: missing, backgroundLogger: TestCluster.logger, statementDeadline: .milliseconds(200))
        let writer = LedgerWriter(client: pool, logger: logger)
        let attempts = 25
        var failed = 0
        let started = ContinuousClock.now
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            group.addTask { try await writer.run() }
            defer { group.cancelAll() }
            await pool.running()
            // One at a time, so each is its own batch and its own failure.
            for n in 0..<attempts {
                do {
                    _ = try await writer.append(AppendRequest(stream: StreamID("outage-\(n)")!, expectedVersion: .any, events: [sampleEvent(n)]))
                } catch {
                    failed += 1
                }
            }
        }
        #expect(failed == attempts)
        // One line, then at most one per throttle interval (10 s) the appends took.
        let bound = 1 + Int((ContinuousClock.now - started) / .seconds(10))
        let logged = lines.all.filter { $0 == "append failed" }
        #expect(!logged.isEmpty && logged.count <= bound, "\(logged.count) `append failed` lines for \(attempts) failed appends")
    }
}
