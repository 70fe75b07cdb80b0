import Foundation
import LedgerTestSupport
import Testing

/// Commands that go through the running daemon list only the options they use: how to reach it and which key to
/// send, never the database's (they never open it); only the order operations take an idempotency key.
@Suite struct ClientCommandHelpTests {
    @Test(arguments: [["settle"], ["tail"], ["order", "capture"], ["order", "refund"], ["disputes", "list"], ["reconcile"], ["bank", "import"]])
    func aDaemonClientCommandListsNoDatabaseOptions(_ command: [String]) async throws {
        let help = try await DaemonProcess.run(command + ["--help"])
        #expect(help.status == 0, "\(help.output)")
        #expect(help.output.contains("--data-dir") && help.output.contains("--url"), "\(help.output)")
        #expect(!help.output.contains("--database-url") && !help.output.contains("--migration-database-url"), "\(help.output)")
        #expect(help.output.contains("--idempotency-key") == (command.first == "order"), "\(help.output)")
    }
}
