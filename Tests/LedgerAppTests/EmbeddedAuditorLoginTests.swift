import Foundation
import LedgerTestSupport
import Testing

/// The README's auditor login in embedded mode, as a newcomer types it: the real daemon on a fresh data directory,
/// then psql with the documented connection string (`host=<data dir>/run dbname=ledger user=auditor`). The role
/// verifies the chain and reads the log, and can neither read shipping contacts nor write.
@Suite(.machine(.shared)) struct EmbeddedAuditorLoginTests {
    @Test(.timeLimit(.minutes(3))) func theDocumentedAuditorLoginVerifiesTheChainAndCanDoNothingElse() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-auditor-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let data = dataDirectory.appendingPathComponent("d")
        let daemon = try await DaemonProcess.start(
            dataDirectory: data,
            port: TestPorts.free(),
            logFile: dataDirectory.appendingPathComponent("daemon.log")
        )
        guard daemon.health != nil else {
            daemon.process.terminate()
            Issue.record("no /health answer:\n\(daemon.output())")
            return
        }
        let psql = URL(fileURLWithPath: try #require(AuditorSQLTests.psql, "psql is not installed (apt-get install -y postgresql-client)"))
        func asAuditor(_ sql: String) async throws -> (status: Int32, output: String) {
            try await ChildProcess.run(
                psql,
                ["-X", "-At", "-v", "ON_ERROR_STOP=1", "host=\(data.path)/run dbname=ledger user=auditor", "-c", sql]
            )
        }
        let verified = try await asAuditor("SELECT ok, checked > 0 FROM ledger.verify_chain()")
        #expect(verified.status == 0 && verified.output.contains("t|t"), "\(verified.output)")
        let events = try await asAuditor("SELECT count(*) > 0 FROM ledger.events")
        #expect(events.status == 0 && events.output.contains("t"), "\(events.output)")
        let contacts = try await asAuditor("SELECT count(*) FROM ledger.shipping_contacts")
        #expect(contacts.status != 0 && contacts.output.contains("permission denied"), "\(contacts.output)")
        let write = try await asAuditor("DELETE FROM ledger.events WHERE position = 1")
        #expect(write.status != 0 && write.output.contains("permission denied"), "\(write.output)")
        try await daemon.stop()
    }
}
