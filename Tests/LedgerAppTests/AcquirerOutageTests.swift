import Foundation
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The supervised acquirer service across PostgreSQL faults (found by the failover drill, `ca1e79c`): a statement sent
/// as its connection dies is never answered by PostgresNIO, and the acquirer's model, journalling one batch at a time,
/// waited for it for ever — every payment after it answered 502/503. Its pool is now bounded by the deadline the
/// supervising ledger passes (`--database-deadline-milliseconds`, the ledger's `statement_timeout` + 2 s).
///
/// A real daemon on its embedded cluster, its acquirer supervised; no root needed (the backends are signalled as the
/// OS user that runs them, this process's own or, as root, any). Each round:
/// 1. every backend of the acquirer's pool is stopped (SIGSTOP; its watcher's probe connection is left alone, so the
///    database looks healthy and only the statement deadline can free a statement sent on a stopped connection) and a
///    payment must then be answered 200 within ``bound`` — 502/503 do not count;
/// 2. those backends are killed (SIGKILL: the postmaster ends every backend and recovers, a PostgreSQL crash) and again
///    a payment must be answered 200 within ``bound``.
///
/// With the deadline the first 200 comes a few seconds after the stop; without the flag the service's own default
/// (32 s) holds the model past ``bound``, and before `ca1e79c` for ever.
@Suite(.serialized, .machine(.shared)) struct AcquirerOutageTests {
    /// The ledger's statement timeout here: its deadline (and the acquirer's) is 2 s more.
    static let statementTimeoutSeconds = 2
    /// How long after each fault a payment must have been answered 200: the deadline (4 s) with a margin for a loaded
    /// machine, well short of the acquirer's own 32 s default.
    static let bound: Duration = .seconds(20)

    /// The acquirer's pool's backends in its database (`acquirer`), without the watcher's probe connections.
    static func acquirerPoolBackends(_ superuser: PostgresClient.Configuration) async throws -> [Int32] {
        try await withPostgresClient(configuration: superuser, logger: TestCluster.logger) { client in
            let rows = try await client.query(
                """
                SELECT pid FROM pg_stat_activity
                WHERE usename = 'acquirer_app' AND datname = 'acquirer'
                  AND query NOT LIKE 'SELECT false, false%' AND query NOT LIKE 'SELECT pg_is_in_recovery()%'
                """,
                logger: TestCluster.logger
            )
            var pids: [Int32] = []
            for try await pid in rows.decode(Int32.self) { pids.append(pid) }
            return pids
        }
    }

    /// Sends payments from two workers until one is answered 200 or `bound` passed; the time to that 200 (nil: none)
    /// and how many of each other answer came before it (0: none within the time).
    static func firstApproval(port: Int, payment: String, bound: Duration) async -> (took: Duration?, others: [Int: Int]) {
        let started = ContinuousClock.now
        let outcome = OutageLoopTests.Tally()
        let approved = OutageLoopTests.Flag()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    while !approved.value.withLock({ $0 }), ContinuousClock.now - started < bound {
                        let left = Double((bound - (ContinuousClock.now - started)).components.seconds) + 1
                        let status = try? await OutageLoopTests.request(port: port, "POST", "/payment", payment, timeout: left)
                        if status == 200, ContinuousClock.now - started <= bound {
                            approved.value.withLock { $0 = true }
                            outcome.record(status: 200, took: ContinuousClock.now - started)
                        } else {
                            outcome.record(status: status, took: .zero)
                            // Unhurried: every unknown outcome (502) keeps its reservation until recovery resolves it.
                            if status != nil { try? await Task.sleep(for: .seconds(1)) }
                        }
                    }
                }
            }
        }
        let counts = outcome.counts.withLock { $0 }
        var others = counts.answered.filter { $0.key != 200 }
        if counts.unanswered > 0 { others[0] = counts.unanswered }
        return (counts.answered[200] == nil ? nil : counts.slowest, others)
    }

    @Test(.timeLimit(.minutes(6))) func paymentsAreApprovedAgainSoonAfterTheAcquirersBackendsHangOrPostgreSQLIsKilled() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-acqout-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            try? FileManager.default.removeItem(at: dataDirectory)
            try? FileManager.default.removeItem(at: log)
        }
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            environment: [
                "LEDGERD_DB_STATEMENT_TIMEOUT_SECONDS": "\(Self.statementTimeoutSeconds)",
                "LEDGERD_ACQUIRER_TIMEOUT_MS": "3000",
                "LEDGERD_ACQUIRER_ATTEMPTS": "1",
                "LEDGERD_RECOVERY_INTERVAL_SECONDS": "1",
                "LEDGERD_LOG_LEVEL": "notice",
            ]
        )
        try #require(daemon.health != nil, "no /health answer; daemon output:\n\(daemon.output().suffix(3_000))")
        let cluster = EmbeddedPostgres(
            configuration: .init(dataDirectory: dataDirectory, binDirectory: nil, osUser: "postgres"),
            logger: TestCluster.logger
        )
        // Whatever happens, no backend is left stopped (it would hold the cluster's shutdown) and nothing keeps running.
        var stoppedPIDs: [Int32] = []
        var failure: (any Error)?
        do {
            let superuser = PostgresClient.Configuration(
                unixSocketPath: cluster.endpoint.socketPath,
                username: cluster.endpoint.superuser,
                password: nil,
                database: "postgres"
            )
            // A product of 50 for each phase (price + 8 % tax + 5.00 standard shipping): a payment whose outcome is unknown
            // keeps its reservation until recovery, and one product's stock would run out over the phases.
            let payments = [("Pen", 3_200), ("Stapler", 2_120), ("Cup", 2_660), ("Catpad", 1_796), ("T-Ruler", 2_012)].map { product, amount in
                String(decoding: StorefrontDriver.paymentBody(amount: amount, product: product), as: UTF8.self)
            }
            let warm = await Self.firstApproval(port: daemon.port, payment: payments[0], bound: .seconds(60))
            try #require(warm.took != nil, "no payment approved before any fault: \(warm.others)\n\(daemon.output().suffix(3_000))")
            for round in 1...2 {
                let stopped = try await Self.acquirerPoolBackends(superuser)
                try #require(!stopped.isEmpty, "round \(round): the acquirer's pool has no backend to stop")
                for pid in stopped { kill(pid, SIGSTOP) }
                stoppedPIDs = stopped
                let hung = await Self.firstApproval(port: daemon.port, payment: payments[2 * round - 1], bound: Self.bound)
                print(
                    "acquirer outage round \(round): \(stopped.count) backends stopped; first 200 after \(String(describing: hung.took)), before it \(hung.others)"
                )
                #expect(
                    hung.took != nil,
                    "round \(round): no payment approved within \(Self.bound) of the acquirer's backends hanging (answers: \(hung.others))\n\(daemon.output().suffix(3_000))"
                )
                // A PostgreSQL crash: a backend killed, the postmaster ends the others and recovers.
                for pid in stopped { kill(pid, SIGKILL) }
                stoppedPIDs = []
                let killed = await Self.firstApproval(port: daemon.port, payment: payments[2 * round], bound: Self.bound)
                print(
                    "acquirer outage round \(round): backends killed; first 200 after \(String(describing: killed.took)), before it \(killed.others)"
                )
                #expect(
                    killed.took != nil,
                    "round \(round): no payment approved within \(Self.bound) of PostgreSQL's crash (answers: \(killed.others))\n\(daemon.output().suffix(3_000))"
                )
            }
        } catch {
            failure = error
        }
        for pid in stoppedPIDs { kill(pid, SIGKILL) }
        let stopped = try await daemon.terminate()
        #expect(stopped, "the daemon did not stop on SIGTERM:\n\(daemon.output().suffix(3_000))")
        if !stopped { kill(daemon.process.processIdentifier, SIGKILL) }
        if !DaemonProcess.processes(mentioning: dataDirectory.appendingPathComponent("pg").path).isEmpty {
            try? await cluster.stopOffPool(mode: "immediate")
        }
        if let failure { throw failure }
    }
}
