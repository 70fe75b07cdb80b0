import Foundation
import LedgerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerServices
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The newcomer's path: `ledgerd serve` with no database configured brings up the embedded
/// cluster and `/health`; SIGTERM shuts everything down and leaves no PostgreSQL behind.
@Suite(.machine(.shared)) struct DaemonProcessTests {
    /// At the default log level (info, as a newcomer runs them), an auditor's offline commands beside a running daemon
    /// print their report and nothing else: no pool noise (a connection the scoped pool was still opening as it closed
    /// printed `PSQLError … Connection creation failed` after a successful verify, about one run in two), no warning.
    @Test(.timeLimit(.minutes(3))) func auditCommandsBesideARunningDaemonPrintOnlyTheirReport() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-quiet-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory, port: TestPorts.free(), logFile: log)
        defer { daemon.process.terminate() }
        try #require(daemon.health != nil, "\(daemon.output())")
        let environment = DaemonProcess.environment(["LEDGERD_LOG_LEVEL": nil])
        for round in 0..<4 {
            for arguments in [["audit", "verify"], ["audit", "verify", "--snapshots"]] {
                let run = try await DaemonProcess.run(arguments + ["--data-dir", dataDirectory.path], environment: environment)
                #expect(run.status == 0, "\(arguments) \(round): \(run.output)")
                let lines = run.output.split(separator: "\n")
                #expect(
                    lines.allSatisfy { $0.hasPrefix("swift verifier:") || $0.hasPrefix("snapshots:") },
                    "\(arguments), round \(round), printed more than its report:\n\(run.output)"
                )
            }
        }
        try await daemon.stop()
    }

    @Test(.timeLimit(.minutes(3))) func serveComesUpWithTheEmbeddedDatabaseAndShutsDownCleanly() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-proc-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let port = TestPorts.free()
        // A checkpoint key, as the README says to make one.
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let keyFile = dataDirectory.appendingPathComponent("checkpoint.pem")
        let keygen = try await DaemonProcess.run(["audit", "keygen", "--out", keyFile.path])
        #expect(keygen.status == 0 && keygen.output.contains("BEGIN PUBLIC KEY"), "\(keygen.output)")
        let log = dataDirectory.deletingLastPathComponent().appendingPathComponent("\(dataDirectory.lastPathComponent).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let environment: [String: String?] = ["LEDGERD_CHECKPOINT_KEY": keyFile.path]
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory, port: port, logFile: log, environment: environment)
        let process = daemon.process
        let output = { daemon.output() }
        guard let health = daemon.health else {
            process.terminate()
            Issue.record("no /health answer; daemon output:\n\(output())")
            return
        }
        #expect(health.1.contains(#""status":"up""#) || health.1.contains(#""status": "up""#))
        #expect(health.1.contains("last_position"))
        #expect(
            !DaemonProcess.processes(mentioning: dataDirectory.path).filter { $0 != process.processIdentifier }.isEmpty,
            "the embedded PostgreSQL should be running"
        )

        // Back-office commands talk to the running daemon with the operator key it generated.
        var payment = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/payment")!)
        payment.httpMethod = "POST"
        payment.setValue("application/json", forHTTPHeaderField: "Content-Type")
        payment.httpBody = StorefrontDriver.paymentBody()
        let (paid, _) = try await TestHTTP.data(for: payment)
        let orderID = try #require(try JSONDecoder().decode(PaymentReply.self, from: paid).orderId as String?)
        let base = ["--url", "http://127.0.0.1:\(port)", "--data-dir", dataDirectory.path]
        let capture = try await DaemonProcess.run(["order", "capture", orderID, "--amount", "10.00", "--idempotency-key", "k1"] + base)
        #expect(capture.status == 0 && capture.output.contains("partially_captured"), "\(capture.output)")
        let again = try await DaemonProcess.run(["order", "capture", orderID, "--amount", "10.00", "--idempotency-key", "k1"] + base)
        #expect(again.status == 0 && again.output.contains("replayed"), "\(again.output)")
        let refused = try await DaemonProcess.run(["order", "refund", orderID, "--amount", "10.01", "--reason", "too much"] + base)
        #expect(refused.status != 0 && refused.output.contains("exceeds_refundable"), "\(refused.output)")
        // The other hold operations go through the generated client too: a partial void (the hold stays open for the
        // capture after the restart below), an increment the issuer approves or declines (exit 2, the reply printed all
        // the same), a ship of an order the ledger does not have (404, its error printed, exit 1).
        let void = try await DaemonProcess.run(["order", "void", orderID, "--amount", "1.00"] + base)
        #expect(void.status == 0 && void.output.contains(#""operation":"void""#), "\(void.output)")
        let increment = try await DaemonProcess.run(["order", "increment", orderID, "--amount", "1.00"] + base)
        #expect([0, 2].contains(increment.status) && increment.output.contains(#""operation":"increment""#), "\(increment.output)")
        let unknown = try await DaemonProcess.run(["order", "ship", "3f0c0a36-0000-4000-8000-000000000000", "--carrier", "UPS"] + base)
        #expect(unknown.status == 1 && unknown.output.contains(#""code":"not_found""#), "\(unknown.output)")
        // The disputes (none yet), with both filters as query parameters the daemon accepts (a time with an offset and
        // a fraction of a second), as a table and as JSON; a status the document does not list is refused before asking.
        let filters = ["--status", "inquiry", "--due-before", "2030-01-01T00:00:00.5+02:00"]
        let disputes = try await DaemonProcess.run(["disputes", "list"] + filters + base)
        #expect(disputes.status == 0 && disputes.output.contains("no disputes"), "\(disputes.output)")
        let disputesJSON = try await DaemonProcess.run(["disputes", "list", "--json"] + filters + base)
        #expect(disputesJSON.status == 0 && disputesJSON.output.contains(#"{"disputes":[]}"#), "\(disputesJSON.output)")
        let badStatus = try await DaemonProcess.run(["disputes", "list", "--status", "open"] + base)
        #expect(badStatus.status != 0 && badStatus.output.contains("--status is one of inquiry"), "\(badStatus.output)")
        // Settlement runs in the daemon too: the last closed business day (nothing, or a finished batch),
        // a weekend day refused, and a report naming no batch of this ledger refused.
        let settle = try await DaemonProcess.run(["settle"] + base)
        #expect(
            settle.status == 0 && (settle.output.contains("nothing to settle") || settle.output.contains("payout_scheduled")),
            "\(settle.output)"
        )
        let weekend = try await DaemonProcess.run(["settle", "--business-date", "2026-06-20"] + base)
        #expect(weekend.status != 0 && weekend.output.contains("not_a_business_day"), "\(weekend.output)")
        let report = dataDirectory.deletingLastPathComponent().appendingPathComponent("\(dataDirectory.lastPathComponent)-report.csv")
        defer { try? FileManager.default.removeItem(at: report) }
        try "Company Account\r\n".write(to: report, atomically: true, encoding: .utf8)
        let reconcile = try await DaemonProcess.run(["reconcile", "--report", report.path] + base)
        #expect(reconcile.status != 0 && reconcile.output.contains("invalid_report"), "\(reconcile.output)")

        // A signed checkpoint on demand, with the operator key the daemon generated.
        let keys = try JSONSerialization.jsonObject(with: Data(contentsOf: dataDirectory.appendingPathComponent("api-keys.json"))) as? [String: Any]
        let operatorKey = try #require((keys?["operator_keys"] as? [String])?.first)
        var sign = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/audit/checkpoints")!)
        sign.httpMethod = "POST"
        sign.setValue("Bearer \(operatorKey)", forHTTPHeaderField: "Authorization")
        let (signed, signedResponse) = try await TestHTTP.data(for: sign)
        #expect((signedResponse as? HTTPURLResponse)?.statusCode == 201, "\(String(decoding: signed, as: UTF8.self))")
        let checkpointFile = dataDirectory.appendingPathComponent("auditor-copy.json")
        try signed.write(to: checkpointFile)

        process.terminate()  // SIGTERM
        for _ in 0..<120 where process.isRunning { try await Task.sleep(for: .milliseconds(250)) }
        #expect(!process.isRunning, "ledgerd did not exit after SIGTERM")
        #expect(process.terminationStatus == 0, "exit status \(process.terminationStatus); output:\n\(output())")
        let left1 = DaemonProcess.processes(mentioning: dataDirectory.path)
        #expect(left1.isEmpty, "PostgreSQL processes were left behind: \(DaemonProcess.describe(left1))")
        #expect(!FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("pg/postmaster.pid").path))

        // The acquirer service (the daemon's child, its journal in the embedded cluster) survives the
        // restart: the hold authorized before it can still be captured after it. Its secrets are in a
        // file only the daemon's user can read.
        let secrets = try FileManager.default.attributesOfItem(atPath: dataDirectory.appendingPathComponent("acquirer/secrets.json").path)
        #expect((secrets[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let again2 = try await DaemonProcess.start(dataDirectory: dataDirectory, port: port, logFile: log, environment: environment).process
        let afterRestart = try await DaemonProcess.run(["order", "capture", orderID, "--amount", "1.00"] + base)
        #expect(afterRestart.status == 0 && afterRestart.output.contains("\"captured\":\"11.00\""), "\(afterRestart.output)\n\(output())")
        again2.terminate()
        for _ in 0..<120 where again2.isRunning { try await Task.sleep(for: .milliseconds(250)) }
        #expect(!again2.isRunning && again2.terminationStatus == 0)

        // Offline commands on the same data directory start the cluster, do their work, and stop
        // what they started.
        let migrate = try await DaemonProcess.run(["migrate", "--data-dir", dataDirectory.path])
        #expect(migrate.status == 0 && migrate.output.contains("migrations up to date"), "\(migrate.output)")
        let verify = try await DaemonProcess.run(["audit", "verify", "--sql", "--data-dir", dataDirectory.path])
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("swift verifier: chain verified") && verify.output.contains("sql verifier:   chain verified"))
        let left2 = DaemonProcess.processes(mentioning: dataDirectory.path)
        #expect(left2.isEmpty, "an offline command left PostgreSQL running: \(DaemonProcess.describe(left2))")

        // The auditor's offline tools on the same ledger.
        let data = ["--data-dir", dataDirectory.path]
        let proved = try await DaemonProcess.run(
            ["audit", "verify", "--checkpoint", checkpointFile.path, "--public-key", keyFile.path + ".pub", "--sql"] + data
        )
        #expect(proved.status == 0 && proved.output.contains("checkpoint signature: valid"), "\(proved.output)")
        let strangerKey = dataDirectory.appendingPathComponent("stranger.pem")
        _ = try await DaemonProcess.run(["audit", "keygen", "--out", strangerKey.path])
        let forged = try await DaemonProcess.run(
            ["audit", "verify", "--checkpoint", checkpointFile.path, "--public-key", strangerKey.path + ".pub"] + data
        )
        #expect(forged.status == 1 && forged.output.contains("INVALID"), "\(forged.output)")
        let csvFile = dataDirectory.appendingPathComponent("export.csv")
        let export = try await DaemonProcess.run(["audit", "export", "--format", "csv", "--from", "2", "--to", "6", "--output", csvFile.path] + data)
        #expect(export.status == 0, "\(export.output)")
        let records = try CSVReader.records(String(contentsOf: csvFile, encoding: .utf8))
        #expect(
            records.first == AuditExport.csvColumns && records.dropFirst().filter { $0 != [""] }.map { $0[0] } == ["2", "3", "4", "5", "6"],
            "\(records.prefix(3))"
        )
        let history = try await DaemonProcess.run(["audit", "history", "--order", orderID] + data)
        #expect(
            history.status == 0 && history.output.contains(#""type":"HoldCaptured""#) && history.output.contains("StockReserved"),
            "\(history.output)"
        )
        let stream = try await DaemonProcess.run(["audit", "history", "hold-\(orderID)", "--format", "csv"] + data)
        #expect(stream.status == 0 && stream.output.contains("AuthorizationHoldPlaced"), "\(stream.output)")
        let checkpointPosition = try JSONDecoder().decode(CheckpointFile.self, from: signed).checkpoint.position
        let asOf = try await DaemonProcess.run(["audit", "as-of", "--order", orderID, "--at", "\(checkpointPosition)"] + data)
        #expect(asOf.status == 0 && asOf.output.contains(#""status":"partially_captured""#), "\(asOf.output)")
        // In the shape of GET /orders/{id}?as_of=… (less its links): the row beside the point it reflects.
        let asOfLine = try #require(asOf.output.split(separator: "\n").first { $0.hasPrefix("{") })
        let asOfReply = try #require(try JSONSerialization.jsonObject(with: Data(asOfLine.utf8)) as? [String: Any])
        #expect(Set(asOfReply.keys) == ["order", "as_of"], "\(asOf.output)")
        #expect(((asOfReply["as_of"] as? [String: Any])?["position"] as? NSNumber)?.int64Value == checkpointPosition, "\(asOf.output)")
        let erased = try await DaemonProcess.run(["privacy", "erase", "--customer", "jane@example.com"] + data)
        #expect(erased.status == 0 && erased.output.contains("erased contact-"), "\(erased.output)")
        let erasedAgain = try await DaemonProcess.run(["privacy", "erase", "--customer", "jane@example.com"] + data)
        #expect(erasedAgain.status == 1, "\(erasedAgain.output)")
        let offlineCheckpoint = try await DaemonProcess.run(["audit", "checkpoint", "--key", keyFile.path] + data)
        #expect(offlineCheckpoint.status == 0 && offlineCheckpoint.output.contains("ledgerd-checkpoint-v1"), "\(offlineCheckpoint.output)")
        let stillProved = try await DaemonProcess.run(
            ["audit", "verify", "--checkpoint", checkpointFile.path, "--public-key", keyFile.path + ".pub"] + data
        )
        #expect(stillProved.status == 0, "\(stillProved.output)")
        let left3 = DaemonProcess.processes(mentioning: dataDirectory.path)
        #expect(left3.isEmpty, "an audit command left PostgreSQL running: \(DaemonProcess.describe(left3))")

        // An applied migration edited afterwards stops the daemon at start, naming the file.
        let edited = dataDirectory.appendingPathComponent("edited-sql")
        try FileManager.default.copyItem(at: TestCluster.migrationsDirectory, to: edited)
        let first = edited.appendingPathComponent("0001_create_event_log.sql")
        try (String(contentsOf: first, encoding: .utf8) + "\n-- edited after it was applied\n").write(to: first, atomically: true, encoding: .utf8)
        let stopped = try await DaemonProcess.run(
            ["serve", "--port", "\(port)", "--data-dir", dataDirectory.path],
            migrationsDirectory: edited
        )
        #expect(stopped.status != 0)
        #expect(stopped.output.contains("0001_create_event_log.sql was changed after it was applied"), "\(stopped.output)")
        let left4 = DaemonProcess.processes(mentioning: dataDirectory.path)
        #expect(left4.isEmpty, "a refused start left PostgreSQL running: \(DaemonProcess.describe(left4))")
    }

    /// One daemon per data directory (security review 4): a second `serve` on the same directory used to take over the
    /// first's PostgreSQL, fail to bind, and stop that cluster on its way out, so the first answered 503 until
    /// restarted. Now it exits at once naming the first (its PID and port) and touches nothing; a second `serve` on the
    /// same port with its own directory stops only its own cluster; and a daemon killed with SIGKILL leaves no lock
    /// that blocks its restart.
    @Test(.timeLimit(.minutes(5))) func aSecondServeOnTheSameDataDirectoryExitsAtOnceAndTheFirstKeepsServing() async throws {
        let tag = UUID().uuidString.prefix(8)
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-lock-\(tag)")
        let otherDirectory = URL(fileURLWithPath: "/tmp/ledgerd-lock-other-\(tag)")
        let log = URL(fileURLWithPath: "/tmp/ledgerd-lock-\(tag).log")
        defer {
            for pid in DaemonProcess.processes(mentioning: dataDirectory.path) + DaemonProcess.processes(mentioning: otherDirectory.path) {
                _ = kill(pid, SIGKILL)
            }
            for url in [dataDirectory, otherDirectory, log] { try? FileManager.default.removeItem(at: url) }
        }
        let port = TestPorts.free()
        let first = try await DaemonProcess.start(dataDirectory: dataDirectory, port: port, logFile: log)
        defer { first.process.terminate() }
        try #require(first.health?.status == 200, "\(first.output())")
        let pid = first.process.processIdentifier
        let config = dataDirectory.appendingPathComponent("pg/ledgerd.conf")
        let configWritten = try FileManager.default.attributesOfItem(atPath: config.path)[.modificationDate] as? Date
        let lock = try? Data(contentsOf: dataDirectory.appendingPathComponent("ledgerd.lock"))
        func paid() async throws -> Int {
            try await first.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self)).0
        }

        // The same directory, another port: refused at once, naming the first; nothing written, the first unharmed.
        // Launched and waited for with a bound: before the lock, the second daemon took the cluster over and kept running.
        let secondLog = URL(fileURLWithPath: "/tmp/ledgerd-lock-\(tag)-second.log")
        defer { try? FileManager.default.removeItem(at: secondLog) }
        let started = ContinuousClock.now
        let second = try ChildProcessHandle.launch(
            DaemonProcess.binary.path,
            ["serve", "--port", "\(TestPorts.free())", "--host", "127.0.0.1", "--data-dir", dataDirectory.path],
            environment: DaemonProcess.environment(["LEDGERD_LOG_LEVEL": "warning"]),
            standardOutput: .appending(secondLog.path),
            standardError: .appending(secondLog.path)
        )
        let ended = await second.exited(within: .seconds(15))
        let took = ContinuousClock.now - started
        if ended == nil {
            second.terminate()
            _ = await second.exited(within: .seconds(60))
        }
        let secondOutput = (try? String(contentsOf: secondLog, encoding: .utf8)) ?? ""
        #expect(ended != nil && second.terminationStatus != 0, "the second serve did not exit with an error within 15 s:\n\(secondOutput)")
        #expect(took < .seconds(2), "the second serve took \(took)")
        #expect(secondOutput.contains("pid \(pid)") && secondOutput.contains("port \(port)"), "\(secondOutput)")
        #expect(try FileManager.default.attributesOfItem(atPath: config.path)[.modificationDate] as? Date == configWritten)
        #expect(lock != nil && (try? Data(contentsOf: dataDirectory.appendingPathComponent("ledgerd.lock"))) == lock)
        #expect(await DaemonProcess.get(URL(string: "http://127.0.0.1:\(port)/health")!)?.0 == 200)
        #expect(try await paid() == 200)
        // The lock file is the daemon's alone.
        let mode = (try? FileManager.default.attributesOfItem(atPath: dataDirectory.appendingPathComponent("ledgerd.lock").path))?[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o600)

        // Another directory, the same port: it fails to bind and stops its own cluster, not the first's.
        let samePort = try await DaemonProcess.run(["serve", "--port", "\(port)", "--host", "127.0.0.1", "--data-dir", otherDirectory.path])
        #expect(samePort.status != 0, "\(samePort.output)")
        #expect(DaemonProcess.processes(mentioning: otherDirectory.path).isEmpty, "the refused daemon left its PostgreSQL running")
        #expect(await DaemonProcess.get(URL(string: "http://127.0.0.1:\(port)/health")!)?.0 == 200)
        #expect(try await paid() == 200)

        // SIGKILL: the kernel drops the lock with the process; a restart on the same directory comes up (taking over
        // the cluster the killed daemon left running) and serves.
        _ = kill(pid, SIGKILL)
        #expect(try await first.exited())
        let restarted = try await DaemonProcess.start(dataDirectory: dataDirectory, port: port, logFile: log)
        #expect(restarted.health?.status == 200, "the restart after SIGKILL did not come up:\n\(restarted.output().suffix(4_000))")
        let (status, _) = try await restarted.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self))
        #expect(status == 200)
        try await restarted.stop()
    }

    /// A careless operator's data directory: a path holding `'`, `&` and spaces. It went into the embedded
    /// cluster's `ledgerd.conf` unquoted (`unix_socket_directories = '/tmp/o'brien/run'`): PostgreSQL refused the file
    /// ("syntax error … near token brien") and `serve` never came up; and raw into the acquirer's database URL
    /// (`?host=/tmp/o'brien & co/run`), which did not read back.
    @Test(.timeLimit(.minutes(3))) func aDataDirectoryWithAQuoteAndSpacesInItsPathServes() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-o'brien & co \(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "/tmp/ledgerd-quoted-\(UUID().uuidString.prefix(8)).log")
        defer {
            for pid in DaemonProcess.processes(mentioning: dataDirectory.path) { _ = kill(pid, SIGKILL) }
            for url in [dataDirectory, log] { try? FileManager.default.removeItem(at: url) }
        }
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory, port: TestPorts.free(), logFile: log)
        defer { daemon.process.terminate() }
        #expect(daemon.health?.status == 200, "serve did not come up:\n\(daemon.output().suffix(4_000))")
        let (status, _) = try await daemon.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self))
        #expect(status == 200)
        try await daemon.stop()
    }
}
