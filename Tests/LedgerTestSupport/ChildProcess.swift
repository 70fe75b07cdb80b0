import Foundation
import LedgerProcess

/// Runs a program to completion without holding a thread of Swift's cooperative pool.
///
/// The pool has as many threads as cores (two here). A blocking wait for a child or a blocking read of a pipe
/// inside a test holds one of them for the child's whole life, and with a few such tests running at once the
/// rest of the suite's tasks (other tests' servers, clocks, loops) stall until their time limits pass. Here
/// the child's exit is polled (``ChildProcessHandle/exited(within:polling:)``), and its output goes to a
/// temporary file rather than a pipe that could fill. Children start through ``ChildProcessHandle``, never
/// Foundation's `Process` (its `run()` can crash on Linux; the handle says why).
public enum ChildProcess {
    /// Runs `executable` with `arguments`; its exit status (or the signal that ended it) and combined standard
    /// output and error. Without `environment` the child gets this process's.
    public static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        currentDirectory: URL? = nil
    ) async throws -> (status: Int32, output: String) {
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let child = try ChildProcessHandle.launch(
            executable.path,
            arguments,
            environment: environment ?? ProcessInfo.processInfo.environment,
            directory: currentDirectory?.path,
            standardOutput: .appending(outputURL.path),
            standardError: .appending(outputURL.path)
        )
        await child.exited()
        return (child.terminationStatus, (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "")
    }
}
