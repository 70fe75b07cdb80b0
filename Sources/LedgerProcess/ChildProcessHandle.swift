import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process started with `posix_spawn`, and everything the daemon and the tests do with one: signal it, ask
/// whether it still runs, wait for it without holding a thread.
///
/// Why not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` to close the inherited descriptors and
/// copies each directory entry's whole 256-byte name field, past the end of glibc's buffer; when that buffer ends at
/// an unmapped page the process dies with SIGSEGV (swift-corelibs-foundation#5472, fixed after Swift 6.3.1). A
/// process with many descriptors open — a daemon under load restarting its acquirer child, a test suite of servers —
/// hits it: the full suite crashed in `Process.run()` from `DaemonProcess.start`. Here the child closes every
/// inherited descriptor above the three standard ones with glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34),
/// and no run loop is involved: a small thread of its own per child waits for the exit (`waitid`) and reaps it at once.
/// Reaping at once matters: Swift Testing's exit-test monitor waits for *any* child with `WNOWAIT` and spins while an
/// exited child of someone else's stays a zombie — a child reaped only when asked about kept a core busy.
///
/// The child gets its own process group, as `Process` gave it, so a terminal's Ctrl-C reaches only the parent,
/// which then stops its children in order.
public final class ChildProcessHandle: Sendable {
    /// What a standard descriptor of the child is.
    public enum Stream: Sendable {
        /// The parent's own descriptor of the same number.
        case inherit
        /// `/dev/null`.
        case null
        /// A descriptor of the parent's (a pipe's end, an open file); the child gets its own copy.
        case descriptor(Int32)
        /// A file, created 0600 when missing, written at its end.
        case appending(String)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        case exit(Int32)
        case signal(Int32)
    }

    public let processIdentifier: Int32
    private let termination = Mutex<Termination?>(nil)
    /// Signalled once the child is reaped (for ``reapBlocking()``).
    private let reaped = DispatchSemaphore(value: 0)

    private init(pid: Int32) { processIdentifier = pid }

    /// Starts the thread that waits for the child's exit without reaping it, then reaps it and records how it ended
    /// under the lock ``send(_:)`` takes, so a signal never reaches a recycled pid.
    private func startReaper() throws(SpawnError) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, 128 * 1024)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread,
            &attributes,
            { context in
                let handle = Unmanaged<ChildProcessHandle>.fromOpaque(context!).takeRetainedValue()
                handle.waitAndReap()
                return nil
            },
            context
        )
        guard created == 0 else {
            Unmanaged<ChildProcessHandle>.fromOpaque(context).release()
            throw SpawnError("cannot start the thread that reaps child \(processIdentifier): \(Self.describe(created))")
        }
    }

    private func waitAndReap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
        termination.withLock { known in
            var status: Int32 = 0
            while waitpid(processIdentifier, &status, 0) == -1 && errno == EINTR {}
            let signal = status & 0x7f
            known = signal == 0 ? .exit((status >> 8) & 0xff) : .signal(signal)
        }
        reaped.signal()
    }

    /// Starts `executable` with `arguments` and exactly `environment`; `directory` is its working directory (the
    /// parent's when nil).
    public static func launch(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String],
        directory: String? = nil,
        standardInput: Stream = .null,
        standardOutput: Stream = .inherit,
        standardError: Stream = .inherit
    ) throws(SpawnError) -> ChildProcessHandle {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), standardInput), (1, standardOutput), (2, standardError)] {
            switch stream {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let source): posix_spawn_file_actions_adddup2(&actions, source, fd)
            case .appending(let path):
                posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            }
        }
        try closeInherited(&actions)
        if let directory {
            guard let addchdir = Self.addchdir else { throw SpawnError("cannot set a child's working directory: glibc lacks addchdir_np") }
            let result = directory.withCString { addchdir(&actions, $0) }
            guard result == 0 else { throw SpawnError("\(executable): working directory \(directory): \(describe(result))") }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        // The child starts with no signal blocked and every signal at its default: the parent's handlers (a
        // daemon's SIGTERM and SIGHUP sources block them) must not pass on as "blocked" to a child that relies on
        // SIGTERM to stop.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp: [UnsafeMutablePointer<CChar>?] =
            environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw SpawnError("cannot run \(executable): \(describe(spawned))") }
        let child = ChildProcessHandle(pid: pid)
        do { try child.startReaper() } catch {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw error
        }
        return child
    }

    /// How the child ended, once it has been reaped; nil while it runs.
    public var terminated: Termination? { termination.withLock { $0 } }

    public var isRunning: Bool { terminated == nil }

    /// The exit status, or the signal that ended the child (as Foundation's `terminationStatus`); -1 while it runs.
    public var terminationStatus: Int32 {
        switch terminated {
        case .exit(let code): code
        case .signal(let signal): signal
        case nil: -1
        }
    }

    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    /// Whether the child exited or a signal ended it; nil while it runs.
    public var terminationReason: TerminationReason? {
        switch terminated {
        case .exit: .exit
        case .signal: .uncaughtSignal
        case nil: nil
        }
    }

    /// Sends `signal` unless the child has already been reaped (its pid may be another process's by then).
    public func send(_ signal: Int32) {
        termination.withLock { known in
            if known == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// SIGTERM.
    public func terminate() { send(SIGTERM) }

    /// Waits until the child has exited, polling every `interval` without holding a thread; nil when `limit` passed
    /// first. A cancelled task keeps waiting: a child is reaped whatever its waiter's fate.
    @discardableResult
    public func exited(within limit: Duration? = nil, polling interval: Duration = .milliseconds(50)) async -> Termination? {
        let clock = ContinuousClock()
        let deadline = limit.map { clock.now + $0 }
        while true {
            if let terminated { return terminated }
            if let deadline, clock.now >= deadline { return nil }
            await Self.pause(interval)
        }
    }

    /// Blocks the calling thread until the child has exited and been reaped. Only for code that may not suspend (an `atexit`
    /// handler, a synchronous launcher); async code uses ``exited(within:polling:)``.
    @discardableResult
    public func reapBlocking() -> Termination {
        if let terminated { return terminated }
        reaped.wait()
        reaped.signal()  // for the next caller
        return terminated!
    }

    /// A pause that a cancelled task takes too (`Task.sleep` returns at once there, and the loop above would spin).
    public static func pause(_ duration: Duration) async {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { continuation.resume() }
        }
    }

    /// Adds "close every descriptor above 2" to `actions`: glibc's closefrom action where the C library has it
    /// (looked up at run time: the Swift Glibc module does not import it), else one close per descriptor open now.
    private static func closeInherited(_ actions: inout posix_spawn_file_actions_t) throws(SpawnError) {
        if let closefrom = Self.addclosefrom {
            let result = closefrom(&actions, 3)
            guard result == 0 else { throw SpawnError("posix_spawn_file_actions_addclosefrom_np: \(describe(result))") }
            return
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var descriptors: [Int32] = []
        while let entry = readdir(directory) {
            // Only the name's bytes up to its terminator: the record may end right after it.
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if let fd = Int32(name), fd > 2, fd != own { descriptors.append(fd) }
        }
        for fd in descriptors { posix_spawn_file_actions_addclose(&actions, fd) }
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let addclosefrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")
    private static let addchdir: AddChdir? = symbol("posix_spawn_file_actions_addchdir_np")

    private static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }  // RTLD_DEFAULT
        return unsafeBitCast(address, to: T.self)
    }

    private static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// A child that could not be started.
public struct SpawnError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A pipe whose two ends are closed when this process starts another (`O_CLOEXEC`): only the child it is handed to
/// gets a copy of an end.
public struct ChildPipe: Sendable {
    public let readEnd: Int32
    public let writeEnd: Int32

    public init() throws(SpawnError) {
        var ends: [Int32] = [0, 0]
        // pipe, then FD_CLOEXEC (the Glibc module does not import pipe2): children started here close every
        // inherited descriptor anyway, the flag covers anything else that forks.
        guard pipe(&ends) == 0 else { throw SpawnError("pipe: \(String(cString: strerror(errno)))") }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        readEnd = ends[0]
        writeEnd = ends[1]
    }
}
