import Foundation
import LedgerTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import LedgerPostgres

#if canImport(Glibc)
import Glibc
#endif

/// Nothing leases a connection before the pool runs: PostgresNIO's warning "Trying to lease connection from
/// `PostgresClient`, but `PostgresClient.run()` hasn't been called yet" never appears. (The wait makes it rare;
/// ``LeaseBeforeRunFilter`` drops the rest, the moment between letting waiters go and `run()`.)
@Suite(.machine(.shared)) struct PostgresPoolTests {
    /// The warnings a logger received.
    final class Warnings: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    struct Capture: LogHandler {
        let warnings: Warnings
        var logLevel: Logger.Level = .warning
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            if event.level >= .warning { warnings.lines.withLock { $0.append("\(event.message)") } }
        }
    }

    @Test func aCommandsFirstQueryWaitsForThePool() async throws {
        let db = try await TestDatabase.fresh()
        let warnings = Warnings()
        let logger = Logger(label: "ledger.tests.pool") { _ in Capture(warnings: warnings) }
        let configuration = TestCluster.configuration(endpoint: db.endpoint, database: db.name, user: "ledger_app")
        // Without the wait, most of these raced the pool's start.
        for _ in 0..<25 {
            try await withPostgresClient(configuration: configuration, logger: logger) { client in
                _ = try await client.query("SELECT 1")
            }
        }
        #expect(warnings.all.isEmpty, "\(warnings.all)")
    }

    /// The filter drops PostgresNIO's lease-before-run warning, in PostgresNIO's own words, and nothing else.
    @Test func theLeaseBeforeRunWarningIsDroppedAndEveryOtherMessagePasses() async throws {
        let db = try await TestDatabase.fresh()
        let configuration = TestCluster.configuration(endpoint: db.endpoint, database: db.name, user: "ledger_app")
        // PostgresNIO's words: a client leased before its run() warns, and the filter's prefix matches them.
        let raw = Warnings()
        let client = PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "raw") { _ in Capture(warnings: raw) })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await client.query("SELECT 1") }
            let deadline = ContinuousClock.now + .seconds(60)
            while raw.all.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            group.addTask { await client.run() }
            try await group.next()
            group.cancelAll()
        }
        let warning = try #require(raw.all.first)
        #expect(raw.all.count == 1 && warning.hasPrefix(LeaseBeforeRunFilter.dropped), "\(raw.all)")

        // The filter drops exactly that warning; other messages, and the same words at another level, pass.
        let passed = Warnings()
        let filtered = LeaseBeforeRunFilter.wrapping(Logger(label: "filtered") { _ in Capture(warnings: passed) })
        #expect(filtered.logLevel == .warning)
        filtered.warning("\(warning)")
        filtered.warning("the database is unreachable")
        filtered.error("\(warning)")
        #expect(passed.all == ["the database is unreachable", warning])
    }

    @Test func runningReturnsOnceTheRunHasStartedOrTheWaiterIsCancelled() async throws {
        let db = try await TestDatabase.fresh()
        let pool = DatabaseClient(
            configuration: TestCluster.configuration(endpoint: db.endpoint, database: db.name, user: "ledger_app"),
            backgroundLogger: TestCluster.logger
        )
        let cancelled = Task { await pool.running() }
        cancelled.cancel()
        await cancelled.value
        let released = Mutex(false)
        let waiter = Task {
            await pool.running()
            released.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!released.withLock { $0 }, "running() returned before run()")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            defer { group.cancelAll() }
            await waiter.value
            #expect(released.withLock { $0 })
            await pool.running()  // at once, now that it runs
            let one = try await column(pool, "SELECT 1", as: Int32.self)
            #expect(one == [1])
        }
    }
}

/// A stopping pool never keeps its owner from stopping: `run()` returns once cancelled (the daemon's graceful bound
/// cancels what is still draining), even while a statement holds a connection that never comes back.
@Suite(.machine(.shared)) struct PoolStopTests {
    @Test(.timeLimit(.minutes(3))) func aCancelledRunReturnsWhileAConnectionIsStillLeased() async throws {
        let db = try await TestDatabase.fresh()
        let pool = DatabaseClient(
            configuration: TestCluster.configuration(endpoint: db.endpoint, database: db.name, user: "ledger_app"),
            backgroundLogger: TestCluster.logger
        )
        let running = Task { await pool.run() }
        await pool.running()
        // A lease held until the end of the test: its closure waits for a release that comes only afterwards.
        let release = AsyncStream<Void>.makeStream()
        let leased = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await pool.withConnection { _ in
                leased.continuation.yield()
                for await _ in release.stream { break }
            }
        }
        for await _ in leased.stream { break }
        running.cancel()
        await running.value  // before: waited for the leased connection, i.e. forever
        release.continuation.yield()
        release.continuation.finish()
        _ = await holder.result
    }
}

/// The statement deadline (review 3, N5): a statement that never gets an answer — here from a server that accepts
/// the connection and never speaks — fails as unavailable by the deadline instead of waiting for ever.
@Suite(.machine(.shared)) struct StatementDeadlineTests {
    @Test(.timeLimit(.minutes(3))) func aStatementWithoutAnAnswerFailsAtTheDeadline() async throws {
        // A listening socket that never accepts: connections complete in its backlog, and nothing ever answers.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0 && listen(listener, 16) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        var silent = PostgresClient.Configuration(
            host: "127.0.0.1",
            port: Int(UInt16(bigEndian: address.sin_port)),
            username: "nobody",
            password: nil,
            database: nil,
            tls: .disable
        )
        silent.options.connectTimeout = .seconds(600)
        let pool = DatabaseClient(configuration: silent, backgroundLogger: TestCluster.logger, statementDeadline: .seconds(1))
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            defer { group.cancelAll() }
            await pool.running()
            let error = await #expect(throws: DatabaseUnavailableError.self) { try await pool.query("SELECT 1") }
            #expect(error?.description == DatabaseUnavailableError.timedOut.description)
        }
    }
}
