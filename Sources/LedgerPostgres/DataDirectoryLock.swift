import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The data directory's lock, `<data>/ledgerd.lock`: one process at a time manages a data directory and its embedded
/// cluster.
///
/// `ledgerd serve` takes it first thing and holds it until it exits; a second `serve` on the same directory finds it
/// held and stops at once, naming the holder, before it starts, stops or writes anything (a second daemon used to take
/// over the first's cluster, fail to bind, and stop that cluster on its way out: security review 4). An offline
/// command takes it too when it is free, and then starts and stops the cluster as it needs; when a daemon (or another
/// command) holds it, the command uses the cluster that is running and never stops it.
///
/// An advisory `flock`, so the kernel releases it when its holder ends however it ends (`kill -9` included): a stale
/// file never blocks a restart. The descriptor is close-on-exec, so no child (the postmaster, the acquirer) inherits
/// the lock and keeps it after its parent died. The file (mode 0600) holds the holder's PID, command and, once bound,
/// port, for the message the next process prints.
public final class DataDirectoryLock: Sendable {
    public static let fileName = "ledgerd.lock"

    /// The result of ``acquire(in:command:)``.
    public enum Attempt: Sendable {
        /// This process holds the lock now.
        case acquired(DataDirectoryLock)
        /// Another process holds it: who, as its file describes it (``holderDescription(_:)``).
        case held(by: String)
    }

    private let descriptor: Int32
    private let command: String
    public let path: String

    private init(descriptor: Int32, command: String, path: String) {
        self.descriptor = descriptor
        self.command = command
        self.path = path
    }

    deinit { close(descriptor) }

    /// Takes the lock of `directory` without waiting (created mode 0700 if missing) and writes this process's PID and
    /// `command` into the file; when another process holds it, reads who does and writes nothing.
    public static func acquire(in directory: URL, command: String) throws -> Attempt {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory.appendingPathComponent(fileName).path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw DataDirectoryLockError("cannot open the data directory's lock \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            defer { close(descriptor) }
            guard failure == EAGAIN else {  // EWOULDBLOCK
                throw DataDirectoryLockError("cannot lock the data directory's lock \(path): \(String(cString: strerror(failure)))")
            }
            return .held(by: holderDescription(read(descriptor)))
        }
        let lock = DataDirectoryLock(descriptor: descriptor, command: command, path: path)
        lock.write(port: nil)
        return .acquired(lock)
    }

    /// Lets go of the lock (the descriptor is closed when this object goes).
    public func release() { flock(descriptor, LOCK_UN) }

    /// This process's command for the lock file: the subcommand words before the first option (`audit verify`).
    public static var currentCommand: String {
        CommandLine.arguments.dropFirst().prefix { !$0.hasPrefix("-") }.prefix(2).joined(separator: " ")
    }

    /// Adds the port the daemon is bound to, for the message a second `serve` prints.
    public func record(port: Int) { write(port: port) }

    private func write(port: Int?) {
        var text = "pid=\(getpid())\ncommand=\(command)\n"
        if let port { text += "port=\(port)\n" }
        let bytes = Array(text.utf8)
        ftruncate(descriptor, 0)
        _ = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    private static func read(_ descriptor: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        return String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
    }

    /// "ledgerd serve (pid 41, port 12345)" from the file's `key=value` lines; a holder that has not written them yet
    /// is one that is starting.
    static func holderDescription(_ text: String) -> String {
        var fields: [Substring: Substring] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        guard let pid = fields["pid"] else { return "another ledgerd process (starting)" }
        let command = fields["command"].map { "ledgerd \($0)" } ?? "ledgerd"
        let port = fields["port"].map { ", port \($0)" } ?? ""
        return "\(command) (pid \(pid)\(port))"
    }
}

/// The data directory is managed by another process, or its lock cannot be taken.
public struct DataDirectoryLockError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    public init(_ message: String) { self.message = message }
}
