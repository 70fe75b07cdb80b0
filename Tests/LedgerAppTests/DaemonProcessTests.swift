import Foundation
import LedgerApp
import LedgerServices
import LedgerCore
import LedgerHTTP
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The newcomer's path: `ledgerd serve` with no database configured brings up the embedded
/// cluster and `/health`; SIGTERM shuts everything down and leaves no PostgreSQL behind.
@Suite struct DaemonProcessTests {
    static var ledgerdBinary: URL {
        let testBinaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [testBinaryDirectory.appendingPathComponent("ledgerd"),
                          testBinaryDirectory.deletingLastPathComponent().appendingPathComponent("ledgerd"),
                          TestCluster.repositoryRoot.appendingPathComponent(".build/debug/ledgerd")]
        where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        return TestCluster.repositoryRoot.appendingPathComponent(".build/debug/ledgerd")
    }

    func get(_ url: URL) async -> (Int, String)? {
        var request = URLRequest(url: url)
        request.timeoutInterval = 2
        guard let (data, response) = try? await URLSession.shared.data(for: request),
              let http = response as? HTTPURLResponse else { return nil }
        return (http.statusCode, String(decoding: data, as: UTF8.self))
    }

    /// PIDs of processes whose command line mentions `path`.
    func processes(mentioning path: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\0", with: " ").contains(path)
        }
    }

    @Test(.timeLimit(.minutes(3))) func serveComesUpWithTheEmbeddedDatabaseAndShutsDownCleanly() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-proc-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let port = Int.random(in: 20_000..<40_000)
        // A checkpoint key, as the README says to make one.
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let keyFile = dataDirectory.appendingPathComponent("checkpoint.pem")
        let keygen = try runLedgerd(["audit", "keygen", "--out", keyFile.path])
        #expect(keygen.status == 0 && keygen.output.contains("BEGIN PUBLIC KEY"), "\(keygen.output)")
        let process = Process()
        process.executableURL = Self.ledgerdBinary
        process.arguments = ["serve", "--port", "\(port)", "--host", "127.0.0.1", "--data-dir", dataDirectory.path]
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGERD_MIGRATIONS_DIR"] = TestCluster.migrationsDirectory.path
        environment["LEDGERD_CHECKPOINT_KEY"] = keyFile.path
        environment.removeValue(forKey: "LEDGERD_DATABASE_URL")
        process.environment = environment
        let log = dataDirectory.deletingLastPathComponent().appendingPathComponent("\(dataDirectory.lastPathComponent).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let logHandle = try FileHandle(forWritingTo: log)
        process.standardOutput = logHandle
        process.standardError = logHandle
        try process.run()

        var health: (Int, String)?
        for _ in 0..<240 {
            if let answer = await get(URL(string: "http://127.0.0.1:\(port)/health")!), answer.0 == 200 {
                health = answer
                break
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        guard let health else {
            process.terminate()
            Issue.record("no /health answer; daemon output:\n\(output())")
            return
        }
        #expect(health.1.contains(#""status":"up""#) || health.1.contains(#""status": "up""#))
        #expect(health.1.contains("last_position"))
        #expect(!processes(mentioning: dataDirectory.path).filter { $0 != process.processIdentifier }.isEmpty,
                "the embedded PostgreSQL should be running")

        // Back-office commands talk to the running daemon with the operator key it generated.
        var payment = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/payment")!)
        payment.httpMethod = "POST"
        payment.setValue("application/json", forHTTPHeaderField: "Content-Type")
        payment.httpBody = PaymentTests.body()
        let (paid, _) = try await URLSession.shared.data(for: payment)
        let orderID = try #require(try JSONDecoder().decode(PaymentReply.self, from: paid).order_id as String?)
        let base = ["--url", "http://127.0.0.1:\(port)", "--data-dir", dataDirectory.path]
        let capture = try runLedgerd(["order", "capture", orderID, "--amount", "10.00", "--idempotency-key", "k1"] + base)
        #expect(capture.status == 0 && capture.output.contains("partially_captured"), "\(capture.output)")
        let again = try runLedgerd(["order", "capture", orderID, "--amount", "10.00", "--idempotency-key", "k1"] + base)
        #expect(again.status == 0 && again.output.contains("replayed"), "\(again.output)")
        let refused = try runLedgerd(["order", "refund", orderID, "--amount", "10.01", "--reason", "too much"] + base)
        #expect(refused.status != 0 && refused.output.contains("exceeds_refundable"), "\(refused.output)")
        // Settlement runs in the daemon too: the last closed business day (nothing, or a finished batch),
        // a weekend day refused, and a report naming no batch of this ledger refused.
        let settle = try runLedgerd(["settle"] + base)
        #expect(settle.status == 0 && (settle.output.contains("nothing to settle") || settle.output.contains("payout_scheduled")),
                "\(settle.output)")
        let weekend = try runLedgerd(["settle", "--business-date", "2026-06-20"] + base)
        #expect(weekend.status != 0 && weekend.output.contains("not_a_business_day"), "\(weekend.output)")
        let report = dataDirectory.deletingLastPathComponent().appendingPathComponent("\(dataDirectory.lastPathComponent)-report.csv")
        defer { try? FileManager.default.removeItem(at: report) }
        try "Company Account\r\n".write(to: report, atomically: true, encoding: .utf8)
        let reconcile = try runLedgerd(["reconcile", "--report", report.path] + base)
        #expect(reconcile.status != 0 && reconcile.output.contains("invalid_report"), "\(reconcile.output)")

        // A signed checkpoint on demand, with the operator key the daemon generated.
        let keys = try JSONSerialization.jsonObject(with: Data(contentsOf: dataDirectory.appendingPathComponent("api-keys.json"))) as? [String: Any]
        let operatorKey = try #require((keys?["operator_keys"] as? [String])?.first)
        var sign = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/audit/checkpoints")!)
        sign.httpMethod = "POST"
        sign.setValue("Bearer \(operatorKey)", forHTTPHeaderField: "Authorization")
        let (signed, signedResponse) = try await URLSession.shared.data(for: sign)
        #expect((signedResponse as? HTTPURLResponse)?.statusCode == 201, "\(String(decoding: signed, as: UTF8.self))")
        let checkpointFile = dataDirectory.appendingPathComponent("auditor-copy.json")
        try signed.write(to: checkpointFile)

        process.terminate()  // SIGTERM
        for _ in 0..<120 where process.isRunning { try await Task.sleep(for: .milliseconds(250)) }
        #expect(!process.isRunning, "ledgerd did not exit after SIGTERM")
        #expect(process.terminationStatus == 0, "exit status \(process.terminationStatus); output:\n\(output())")
        #expect(processes(mentioning: dataDirectory.path).isEmpty, "PostgreSQL processes were left behind")
        #expect(!FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("pg/postmaster.pid").path))
        try logHandle.close()

        // The acquirer model survives the restart (its snapshot is in the data directory): the hold
        // authorized before it can still be captured after it.
        #expect(FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("acquirer-model.json").path))
        let again2 = Process()
        again2.executableURL = Self.ledgerdBinary
        again2.arguments = ["serve", "--port", "\(port)", "--host", "127.0.0.1", "--data-dir", dataDirectory.path]
        again2.environment = environment
        let log2 = try FileHandle(forWritingTo: log)
        try log2.seekToEnd()
        again2.standardOutput = log2
        again2.standardError = log2
        try again2.run()
        for _ in 0..<240 {
            if let answer = await get(URL(string: "http://127.0.0.1:\(port)/health")!), answer.0 == 200 { break }
            if !again2.isRunning { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        let afterRestart = try runLedgerd(["order", "capture", orderID, "--amount", "1.00"] + base)
        #expect(afterRestart.status == 0 && afterRestart.output.contains("\"captured\":\"11.00\""), "\(afterRestart.output)\n\(output())")
        again2.terminate()
        for _ in 0..<120 where again2.isRunning { try await Task.sleep(for: .milliseconds(250)) }
        #expect(!again2.isRunning && again2.terminationStatus == 0)
        try log2.close()

        // Offline commands on the same data directory start the cluster, do their work, and stop
        // what they started.
        let migrate = try runLedgerd(["migrate", "--data-dir", dataDirectory.path])
        #expect(migrate.status == 0 && migrate.output.contains("migrations up to date"), "\(migrate.output)")
        let verify = try runLedgerd(["audit", "verify", "--sql", "--data-dir", dataDirectory.path])
        #expect(verify.status == 0, "\(verify.output)")
        #expect(verify.output.contains("swift verifier: chain verified") && verify.output.contains("sql verifier:   chain verified"))
        #expect(processes(mentioning: dataDirectory.path).isEmpty, "an offline command left PostgreSQL running")

        // The auditor's offline tools on the same ledger.
        let data = ["--data-dir", dataDirectory.path]
        let proved = try runLedgerd(["audit", "verify", "--checkpoint", checkpointFile.path, "--public-key", keyFile.path + ".pub", "--sql"] + data)
        #expect(proved.status == 0 && proved.output.contains("checkpoint signature: valid"), "\(proved.output)")
        let strangerKey = dataDirectory.appendingPathComponent("stranger.pem")
        _ = try runLedgerd(["audit", "keygen", "--out", strangerKey.path])
        let forged = try runLedgerd(["audit", "verify", "--checkpoint", checkpointFile.path, "--public-key", strangerKey.path + ".pub"] + data)
        #expect(forged.status == 1 && forged.output.contains("INVALID"), "\(forged.output)")
        let csvFile = dataDirectory.appendingPathComponent("export.csv")
        let export = try runLedgerd(["audit", "export", "--format", "csv", "--from", "2", "--to", "6", "--output", csvFile.path] + data)
        #expect(export.status == 0, "\(export.output)")
        let records = try CSVReader.records(String(contentsOf: csvFile, encoding: .utf8))
        #expect(records.first == AuditExport.csvColumns && records.dropFirst().filter { $0 != [""] }.map { $0[0] } == ["2", "3", "4", "5", "6"],
                "\(records.prefix(3))")
        let history = try runLedgerd(["audit", "history", "--order", orderID] + data)
        #expect(history.status == 0 && history.output.contains(#""type":"HoldCaptured""#) && history.output.contains("StockReserved"),
                "\(history.output)")
        let stream = try runLedgerd(["audit", "history", "hold-\(orderID)", "--format", "csv"] + data)
        #expect(stream.status == 0 && stream.output.contains("AuthorizationHoldPlaced"), "\(stream.output)")
        let asOf = try runLedgerd(["audit", "as-of", "--order", orderID, "--at", "\(try JSONDecoder().decode(CheckpointFile.self, from: signed).checkpoint.position)"] + data)
        #expect(asOf.status == 0 && asOf.output.contains(#""status":"partially_captured""#), "\(asOf.output)")
        let erased = try runLedgerd(["privacy", "erase", "--customer", "jane@example.com"] + data)
        #expect(erased.status == 0 && erased.output.contains("erased contact-"), "\(erased.output)")
        let erasedAgain = try runLedgerd(["privacy", "erase", "--customer", "jane@example.com"] + data)
        #expect(erasedAgain.status == 1, "\(erasedAgain.output)")
        let offlineCheckpoint = try runLedgerd(["audit", "checkpoint", "--key", keyFile.path] + data)
        #expect(offlineCheckpoint.status == 0 && offlineCheckpoint.output.contains("ledgerd-checkpoint-v1"), "\(offlineCheckpoint.output)")
        let stillProved = try runLedgerd(["audit", "verify", "--checkpoint", checkpointFile.path, "--public-key", keyFile.path + ".pub"] + data)
        #expect(stillProved.status == 0, "\(stillProved.output)")
        #expect(processes(mentioning: dataDirectory.path).isEmpty, "an audit command left PostgreSQL running")

        // An applied migration edited afterwards stops the daemon at start, naming the file.
        let edited = dataDirectory.appendingPathComponent("edited-sql")
        try FileManager.default.copyItem(at: TestCluster.migrationsDirectory, to: edited)
        let first = edited.appendingPathComponent("0001_create_event_log.sql")
        try (String(contentsOf: first, encoding: .utf8) + "\n-- edited after it was applied\n").write(to: first, atomically: true, encoding: .utf8)
        let stopped = try runLedgerd(["serve", "--port", "\(port)", "--data-dir", dataDirectory.path],
                                     migrationsDirectory: edited)
        #expect(stopped.status != 0)
        #expect(stopped.output.contains("0001_create_event_log.sql was changed after it was applied"), "\(stopped.output)")
        #expect(processes(mentioning: dataDirectory.path).isEmpty, "a refused start left PostgreSQL running")
    }

    /// Runs `ledgerd` to completion and returns its exit status and combined output.
    func runLedgerd(_ arguments: [String], migrationsDirectory: URL = TestCluster.migrationsDirectory) throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGERD_MIGRATIONS_DIR"] = migrationsDirectory.path
        environment["LEDGERD_LOG_LEVEL"] = "warning"
        environment.removeValue(forKey: "LEDGERD_DATABASE_URL")
        return try Self.run(arguments, environment: environment)
    }

    /// Runs `ledgerd` with exactly `environment` to completion; its exit status and combined output.
    static func run(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = ledgerdBinary
        process.arguments = arguments
        process.environment = environment
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("ledgerd-cmd-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let handle = try FileHandle(forWritingTo: outputURL)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "")
    }
}
