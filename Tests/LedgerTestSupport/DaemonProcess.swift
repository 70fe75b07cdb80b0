import Foundation
@_exported import LedgerProcess
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ledgerd` as a child process: one-shot commands (``run(_:migrationsDirectory:)``) and a serving daemon
/// (``start(dataDirectory:port:logFile:environment:attempts:)``) on the embedded cluster of a data directory,
/// with the migrations of this checkout.
public struct DaemonProcess {
    /// The `ledgerd serve` process.
    public let process: ChildProcessHandle
    /// Its HTTP port on 127.0.0.1.
    public let port: Int
    /// Its `--data-dir`.
    public let dataDirectory: URL
    /// Where its standard output and error go (appended to).
    public let logFile: URL
    /// The first operator key of its `api-keys.json` (nil when it wrote none); ``request(_:_:_:)`` sends it.
    public let operatorKey: String?
    /// The first 200 answer of `/health` (status and body); nil when it never answered.
    public let health: (status: Int, body: String)?

    /// The `ledgerd` binary this test run built (next to the test bundle, else `.build/debug`).
    public static var binary: URL {
        let testBinaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [
            testBinaryDirectory.appendingPathComponent("ledgerd"),
            testBinaryDirectory.deletingLastPathComponent().appendingPathComponent("ledgerd"),
            TestCluster.repositoryRoot.appendingPathComponent(".build/debug/ledgerd"),
        ]
        where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        return TestCluster.repositoryRoot.appendingPathComponent(".build/debug/ledgerd")
    }

    /// This process's environment for `ledgerd`: the checkout's migrations, the embedded cluster (no
    /// `LEDGERD_DATABASE_URL`), and `extra` on top (a nil value removes the variable).
    public static func environment(
        migrationsDirectory: URL = TestCluster.migrationsDirectory,
        _ extra: [String: String?] = [:]
    ) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGERD_MIGRATIONS_DIR"] = migrationsDirectory.path
        environment.removeValue(forKey: "LEDGERD_DATABASE_URL")
        for (name, value) in extra { environment[name] = value }
        return environment
    }

    /// Runs `ledgerd` to completion with the test environment (warnings and worse logged); its exit status
    /// and combined output.
    public static func run(
        _ arguments: [String],
        migrationsDirectory: URL = TestCluster.migrationsDirectory
    ) async throws -> (status: Int32, output: String) {
        try await run(arguments, environment: environment(migrationsDirectory: migrationsDirectory, ["LEDGERD_LOG_LEVEL": "warning"]))
    }

    /// Runs `ledgerd` with exactly `environment` to completion; its exit status and combined output.
    public static func run(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
        try await ChildProcess.run(binary, arguments, environment: environment)
    }

    /// Starts `ledgerd serve` on 127.0.0.1:`port` with its data in `dataDirectory` and its output appended to
    /// `logFile`, then polls `/health` (or `probe`, given the port) every 250 ms until it answers 200, the process exits, or `attempts` polls
    /// went by. Check ``health`` or `process.isRunning` for how it came up.
    ///
    /// `command`, run in `directory`, replaces `ledgerd serve --port … --data-dir …` (the newcomer's path starts the
    /// README's `ledgerd serve` from the PATH in the directory whose `.ledgerd` is `dataDirectory`).
    public static func start(
        dataDirectory: URL,
        port: Int,
        logFile: URL,
        environment extra: [String: String?] = [:],
        attempts: Int = 240,
        command: (executable: URL, arguments: [String])? = nil,
        directory: URL? = nil,
        probe: (@Sendable (Int) async -> (Int, String)?)? = nil
    ) async throws -> DaemonProcess {
        let process = try ChildProcessHandle.launch(
            (command?.executable ?? binary).path,
            command?.arguments ?? ["serve", "--port", "\(port)", "--host", "127.0.0.1", "--data-dir", dataDirectory.path],
            environment: environment(extra),
            directory: directory?.path,
            standardOutput: .appending(logFile.path),
            standardError: .appending(logFile.path)
        )
        var health: (status: Int, body: String)?
        for _ in 0..<attempts {
            let answer = if let probe { await probe(port) } else { await get(URL(string: "http://127.0.0.1:\(port)/health")!) }
            if let answer, answer.0 == 200 {
                health = answer
                break
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        let keys = (try? Data(contentsOf: dataDirectory.appendingPathComponent("api-keys.json")))
            .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        return DaemonProcess(
            process: process,
            port: port,
            dataDirectory: dataDirectory,
            logFile: logFile,
            operatorKey: (keys?["operator_keys"] as? [String])?.first,
            health: health
        )
    }

    /// Everything the daemon wrote so far.
    public func output() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// `method path` with `body` (JSON), the daemon's operator key and an `Idempotency-Key` if given; the status and
    /// the reply's text. Throws when no answer came within `timeout` seconds.
    public func request(
        _ method: String,
        _ path: String,
        _ body: String? = nil,
        idempotencyKey: String? = nil,
        timeout: TimeInterval = 120
    ) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        if let operatorKey { request.setValue("Bearer \(operatorKey)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (data, response) = try await TestHTTP.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// Sends SIGTERM and waits up to `attempts` × 250 ms for the process to exit; true if it did.
    @discardableResult
    public func terminate(attempts: Int = 240) async throws -> Bool {
        process.terminate()
        return try await exited(attempts: attempts)
    }

    /// Waits up to `attempts` × 250 ms for the process to exit (after a signal the test sent); true if it did.
    /// Never `Process.waitUntilExit()`: it would hold a thread of the cooperative pool (see ``ChildProcess``).
    @discardableResult
    public func exited(attempts: Int = 240) async throws -> Bool {
        await process.exited(within: .milliseconds(250 * attempts)) != nil
    }

    /// Stops the daemon with SIGTERM and expects a clean exit (status 0).
    public func stop(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let exited = try await terminate()
        // The output's end: what happened at the stop (a whole log is cut short when printed, and its start says nothing).
        #expect(
            exited && process.terminationStatus == 0,
            "a daemon did not stop on SIGTERM (status \(exited ? process.terminationStatus : -1)); its output's end:\n\(output().suffix(6_000))",
            sourceLocation: sourceLocation
        )
    }

    /// PIDs of the processes whose command line mentions `path` (the embedded PostgreSQL of a data directory).
    /// Each process's id and command line, for a failure message.
    public static func describe(_ pids: [Int32]) -> String {
        pids.map { pid in
            let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map {
                String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "\0", with: " ")
            }
            return "\(pid): \(line ?? "(gone)")"
        }.joined(separator: "\n")
    }

    public static func processes(mentioning path: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\0", with: " ").contains(path)
        }
    }

    /// `GET url` with a 2 s timeout; nil when nothing answered. `Connection: close`: a probe must not keep
    /// one of the daemon's connection slots in the client's pool (the connection-limit test counts them).
    public static func get(_ url: URL) async -> (Int, String)? {
        var request = URLRequest(url: url)
        request.timeoutInterval = 2
        request.setValue("close", forHTTPHeaderField: "Connection")
        guard let (data, response) = try? await TestHTTP.data(for: request),
            let http = response as? HTTPURLResponse
        else { return nil }
        return (http.statusCode, String(decoding: data, as: UTF8.self))
    }
}
