import Foundation
import LedgerTestSupport
import Testing

/// A stop always ends (security review 3, N5): when a service ignores the graceful stop and the cancellation after
/// it (`LEDGERD_FAULT_STUCK_STOP`), the stop watchdog ends the daemon 10 s after the 30 s graceful bound, with status
/// 1, saying so, and stops the embedded PostgreSQL it started.
@Suite(.machine(.shared)) struct StopWatchdogTests {
    @Test(.timeLimit(.minutes(4))) func aStuckStopEndsAfterTheGracefulBoundAndTheClusterStops() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-stuck-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            try? FileManager.default.removeItem(at: dataDirectory)
            try? FileManager.default.removeItem(at: log)
        }
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: TestPorts.free(),
            logFile: log,
            environment: ["LEDGERD_FAULT_STUCK_STOP": "true"]
        )
        guard daemon.health != nil else {
            daemon.process.terminate()
            Issue.record("no /health answer; daemon output:\n\(daemon.output())")
            return
        }
        let stopped = ContinuousClock.now
        daemon.process.terminate()
        // 30 s of drain, 10 s more, then the cleanup: a generous bound above that.
        let exited = try await daemon.exited(attempts: (30 + 10 + 60) * 4)
        let took = ContinuousClock.now - stopped
        #expect(exited, "the daemon did not end on SIGTERM:\n\(daemon.output().suffix(4_000))")
        guard exited else {
            kill(daemon.process.processIdentifier, SIGKILL)
            return
        }
        #expect(daemon.process.terminationStatus == 1)
        #expect(took >= .seconds(40), "ended after \(took), before the graceful bound and the watchdog's grace")
        #expect(daemon.output().contains("did not stop within its graceful bound"), "\(daemon.output().suffix(2_000))")
        let postmaster = DaemonProcess.processes(mentioning: dataDirectory.appendingPathComponent("pg").path)
        #expect(postmaster.isEmpty, "the embedded cluster still runs:\n\(DaemonProcess.describe(postmaster))")
    }
}
