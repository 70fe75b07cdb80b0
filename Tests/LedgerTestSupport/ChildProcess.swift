import Foundation

/// Runs a program to completion without holding a thread of Swift's cooperative pool.
///
/// The pool has as many threads as cores (two here). `Process.waitUntilExit()` or a blocking read of a pipe
/// inside a test holds one of them for the child's whole life, and with a few such tests running at once the
/// rest of the suite's tasks (other tests' servers, clocks, loops) stall until their time limits pass. Here
/// the child's exit resumes the caller from Foundation's termination handler, and its output goes to a
/// temporary file rather than a pipe that could fill.
public enum ChildProcess {
    /// Runs `executable` with `arguments`; its exit status and combined standard output and error.
    public static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        currentDirectory: URL? = nil
    ) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let handle = try FileHandle(forWritingTo: outputURL)
        process.standardOutput = handle
        process.standardError = handle
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        try handle.close()
        return (status, (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "")
    }
}
