import Foundation
import LedgerTestSupport
import Testing

/// The README's demo day (`deploy/demo/day.sh`), run as written against the built `ledgerd`, on a fresh data
/// directory and a free port: it exits 0 only when every step went as described (each payment answered as its test
/// card says, the day settled early and reconciled with 0 breaks, the acquirer's chargeback read into a dispute
/// two days later, the lapsed hold expired, the chain verified) — the checks below read what it printed.
@Suite(.machine(.shared)) struct DemoDayTests {
    @Test(.timeLimit(.minutes(4))) func theDemoDayRunsAsWritten() async throws {
        let directory = "/tmp/ledgerd-demo-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = TestCluster.repositoryRoot.appendingPathComponent("deploy/demo/day.sh").path
        let port = TestPorts.free()
        let (status, printed) = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/bash"),
            [script],
            environment: DaemonProcess.environment([
                "LEDGERD": DaemonProcess.binary.path, "DEMO_DIR": directory, "DEMO_PORT": "\(port)",
            ])
        )
        #expect(status == 0, "\(printed)")
        #expect(printed.contains("reconciled: 7 items matched, 0 breaks"), "\(printed)")
        #expect(printed.contains("the acquirer raised a chargeback: dispute") && printed.contains("10.4 59.00 USD charged_back"), "\(printed)")
        #expect(printed.contains("is expired") && printed.contains(#""ok":true"#), "\(printed)")
        #expect(printed.contains("11 refused payments"), "\(printed)")
        // Where to look: console pages a browser opens (the script opened each, signed in, and got 200), not the API's
        // URLs, which answer 401 in a browser, nor a console "(when built)".
        let base = "http://127.0.0.1:\(port)"
        let looks = printed.components(separatedBy: "== where to look").last ?? ""
        for page in ["/console/sign-in", "/console/settlements/", "/console/disputes/", "/console/orders/", "/console/audit"] {
            #expect(looks.contains(base + page), "where to look names \(page): \(looks)")
        }
        #expect(!looks.contains("\(base)/settlements/") && !looks.contains("\(base)/audit/") && !looks.contains("(when built)"), "\(looks)")
        // The script stopped its daemon: nothing answers on its port any more.
        let probe = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/curl"),
            ["-s", "-o", "/dev/null", "--max-time", "2", "http://127.0.0.1:\(port)/health"],
            environment: [:]
        )
        #expect(probe.status != 0, "the demo's daemon is still running")
    }
}
