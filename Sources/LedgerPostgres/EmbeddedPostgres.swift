import Foundation
import LedgerCore
import LedgerProcess
import Logging

#if canImport(Glibc)
import Glibc
import LedgerMacros
#endif

/// A private PostgreSQL cluster for the embedded default and for the tests.
///
/// It uses the installed server binaries (`pg_config --bindir`, `/usr/lib/postgresql/*/bin`, or
/// `LEDGERD_PG_BINDIR`), keeps its data under `<dataDirectory>/pg`, listens on a Unix socket in
/// `<dataDirectory>/run` only (no TCP), and authenticates local connections by trust: the
/// directory is the access control, so keep it private (it is created mode 0700).
/// PostgreSQL refuses to run as root, so when this process is root the cluster's files and
/// processes belong to an unprivileged OS user (`postgres` by default) via `setpriv`.
@MemberwiseInit
public struct EmbeddedPostgres: Sendable {
    @MemberwiseInit
    public struct Configuration: Sendable {
        public var dataDirectory: URL
        /// Directory holding `initdb`, `pg_ctl`, `postgres`; found automatically when nil.
        public var binDirectory: URL?
        /// The OS user that runs the cluster when this process is root.
        public var osUser: String = "postgres"
        /// Durable (fsync) by default. Tests turn it off for speed; never a production setting.
        public var durable: Bool = true
        /// Extra `name = value` server settings.
        public var settings: [String: String] = [:]
    }

    /// Where to connect: the socket directory, the port that names the socket, the superuser.
    public struct Endpoint: Sendable, Hashable {
        public var socketDirectory: String
        public var port: Int
        public var superuser: String
        /// Full path of the socket file, what PostgresNIO connects to.
        public var socketPath: String { "\(socketDirectory)/.s.PGSQL.\(port)" }
    }

    public let configuration: Configuration
    private let logger: Logger

    public var clusterDirectory: URL { configuration.dataDirectory.appendingPathComponent("pg") }
    public var socketDirectory: URL { configuration.dataDirectory.appendingPathComponent("run") }
    public var endpoint: Endpoint { Endpoint(socketDirectory: socketDirectory.path, port: 5432, superuser: "postgres") }

    /// Initialises the cluster on first use, starts it and waits until it accepts connections.
    ///
    /// A server already running in this directory (another `ledgerd` command, or one left by a
    /// crashed daemon) is used as it is: `alreadyRunning` tells the caller it did not start it,
    /// so that an offline command does not stop a daemon's database when it finishes.
    @discardableResult
    public func start() throws -> (endpoint: Endpoint, alreadyRunning: Bool) {
        let fm = FileManager.default
        let bin = try resolveBinDirectory()
        let owner = try runAsUser()
        let socketPath = endpoint.socketPath
        guard socketPath.utf8.count < 100 else {
            throw EmbeddedPostgresError("the data directory path is too long for a Unix socket (\(socketPath)); choose a shorter LEDGERD_DATA_DIR")
        }

        try fm.createDirectory(
            at: configuration.dataDirectory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        for directory in [clusterDirectory, socketDirectory] {
            try fm.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        if let owner {
            // The cluster's user owns only the cluster (`pg/`) and its socket directory (`run/`). The data
            // directory stays root's — mode 0711, so that user can reach its two directories but can neither
            // list nor change the daemon's own files (API keys, the acquirer model): a daemon started as root
            // keeps its secrets out of reach of the database's OS user. (Older data directories were the
            // cluster user's; they are taken back here.)
            chown(configuration.dataDirectory.path, 0, 0)
            chmod(configuration.dataDirectory.path, 0o711)
            try checkTraversable(configuration.dataDirectory, by: owner)
            for directory in [clusterDirectory, socketDirectory] { chown(directory.path, owner.uid, owner.gid) }
        }

        let versionFile = clusterDirectory.appendingPathComponent("PG_VERSION")
        if !fm.fileExists(atPath: versionFile.path) {
            logger.info("initialising embedded PostgreSQL cluster", metadata: ["directory": "\(clusterDirectory.path)"])
            try run(
                bin.appendingPathComponent("initdb"),
                [
                    "-D", clusterDirectory.path, "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                    "--locale=C",
                ] + (configuration.durable ? [] : ["--no-sync"]),
                as: owner
            )
            let conf = clusterDirectory.appendingPathComponent("postgresql.conf")
            let handle = try FileHandle(forWritingTo: conf)
            handle.seekToEndOfFile()
            handle.write(Data("\ninclude_if_exists = 'ledgerd.conf'\n".utf8))
            try handle.close()
        }

        var settings: [String: String] = [
            "listen_addresses": "''",
            "unix_socket_directories": Self.settingString(Self.listElement(socketDirectory.path)),
            "port": "\(endpoint.port)",
            "max_connections": "200",
            "shared_buffers": "'256MB'",
            "log_min_messages": "warning",
            // No JIT, for every session of the cluster (benchmarks, the acquirer service): why in Daemon.sessionSettings.
            "jit": "off",
        ]
        for (key, value) in Self.writeVolumeSettings(majorVersion: Self.majorVersion(of: clusterDirectory)) { settings[key] = value }
        if !configuration.durable {
            settings["fsync"] = "off"
            settings["synchronous_commit"] = "off"
            settings["full_page_writes"] = "off"
        }
        for (key, value) in configuration.settings { settings[key] = value }
        let conf = settings.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: "\n")
        let confURL = clusterDirectory.appendingPathComponent("ledgerd.conf")
        try Data("# written by ledgerd at every start\n\(conf)\n".utf8).write(to: confURL)
        if let owner { chown(confURL.path, owner.uid, owner.gid) }

        let pgctl = bin.appendingPathComponent("pg_ctl")
        if isRunning(pgctl: pgctl, owner: owner) {
            logger.debug("embedded PostgreSQL is already running", metadata: ["socket": "\(socketPath)"])  // the normal case for a second command
            return (endpoint, true)
        }
        let log = clusterDirectory.appendingPathComponent("server.log")
        do {
            try run(pgctl, ["start", "-D", clusterDirectory.path, "-l", log.path, "-w", "-t", "120"], as: owner)
        } catch {
            let tail =
                (try? String(contentsOf: log, encoding: .utf8))?.split(separator: "\n").suffix(15)
                .joined(separator: "\n") ?? ""
            throw EmbeddedPostgresError("embedded PostgreSQL did not start: \(error)\n\(tail)")
        }
        logger.info("embedded PostgreSQL is up", metadata: ["socket": "\(socketPath)"])
        return (endpoint, false)
    }

    /// The settings that decide how much a day of payments writes (issue 57, docs/performance.md "A day on one
    /// daemon"). PostgreSQL's defaults (`max_wal_size` 1 GB, `checkpoint_timeout` 5 min, no WAL compression) made a
    /// busy ledger request a checkpoint every 15 s, and after each checkpoint the first change to every page is logged
    /// as a full 8 KB page image: WAL per payment rose from 12 KB to 40 KB as the indexes grew. With room for a
    /// quarter of an hour between checkpoints, the page images compressed (lz4 from PostgreSQL 15, pglz before) and
    /// the ledger's keys time-ordered (``Foundation/UUID/newTimeOrdered(now:)``), a payment writes about its own size.
    /// The price: up to `max_wal_size` of WAL on disk, and a crash recovery that replays up to that much.
    static func writeVolumeSettings(majorVersion: Int) -> [String: String] {
        [
            "max_wal_size": "'8GB'",
            "min_wal_size": "'1GB'",
            "checkpoint_timeout": "'15min'",
            "checkpoint_completion_target": "0.9",
            "wal_compression": majorVersion >= 15 ? "lz4" : "on",
        ]
    }

    /// The cluster's major version (its `PG_VERSION` file); 0 when unreadable.
    static func majorVersion(of clusterDirectory: URL) -> Int {
        let text = try? String(contentsOf: clusterDirectory.appendingPathComponent("PG_VERSION"), encoding: .utf8)
        return Int(text?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
    }

    /// The endpoint of this cluster when it is running, for a process that does not hold the data directory's lock
    /// (``DataDirectoryLock``): it neither starts, configures nor stops a cluster another process manages, so it
    /// writes nothing; throws when no server runs.
    public func attach() throws -> Endpoint {
        let bin = try resolveBinDirectory()
        guard isRunning(pgctl: bin.appendingPathComponent("pg_ctl"), owner: try runAsUser()) else {
            throw EmbeddedPostgresError("the embedded PostgreSQL in \(configuration.dataDirectory.path) is not running")
        }
        return endpoint
    }

    /// Stops the cluster and waits for it to exit: `fast` (the default) rolls open sessions back and
    /// checkpoints; `immediate` aborts like a crash (tests of outages).
    public func stop(mode: String = "fast") throws {
        let bin = try resolveBinDirectory()
        let owner = try runAsUser()
        let pgctl = bin.appendingPathComponent("pg_ctl")
        guard isRunning(pgctl: pgctl, owner: owner) else { return }
        try run(pgctl, ["stop", "-D", clusterDirectory.path, "-m", mode, "-w", "-t", "60"], as: owner)
        logger.info("embedded PostgreSQL stopped")
    }

    /// Makes this (not yet initialised) cluster a streaming standby of the cluster at `primary`: a base backup
    /// taken with `pg_basebackup` over the primary's socket (as the cluster's OS user), and `standby.signal`. The
    /// standby follows the primary once started with `primary_conninfo` among its ``Configuration/settings`` —
    /// ``standbySettings(of:applicationName:)``; the primary's `synchronous_standby_names` may name it by
    /// `applicationName`. For failover tests and drills on one machine.
    public func createStandby(of primary: Endpoint) throws {
        let fm = FileManager.default
        let bin = try resolveBinDirectory()
        let owner = try runAsUser()
        guard !fm.fileExists(atPath: clusterDirectory.appendingPathComponent("PG_VERSION").path) else {
            throw EmbeddedPostgresError("\(clusterDirectory.path) already holds a cluster")
        }
        try fm.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try fm.createDirectory(at: clusterDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let owner {
            chown(configuration.dataDirectory.path, 0, 0)
            chmod(configuration.dataDirectory.path, 0o711)
            chown(clusterDirectory.path, owner.uid, owner.gid)
        }
        try run(
            bin.appendingPathComponent("pg_basebackup"),
            [
                "-D", clusterDirectory.path, "-h", primary.socketDirectory, "-p", "\(primary.port)", "-U", primary.superuser,
                "-X", "stream", "-c", "fast",
            ],
            as: owner
        )
        let signal = clusterDirectory.appendingPathComponent("standby.signal")
        try Data().write(to: signal)
        if let owner { chown(signal.path, owner.uid, owner.gid) }
    }

    /// The settings that make a standby made by ``createStandby(of:)`` stream from `primary` as `applicationName`.
    public static func standbySettings(of primary: Endpoint, applicationName: String) -> [String: String] {
        [
            "primary_conninfo":
                "'host=\(primary.socketDirectory) port=\(primary.port) user=\(primary.superuser) application_name=\(applicationName)'"
        ]
    }

    /// Promotes this standby to a primary (`pg_ctl promote -w`: returns once it accepts writes).
    public func promote() throws {
        let bin = try resolveBinDirectory()
        try run(bin.appendingPathComponent("pg_ctl"), ["promote", "-D", clusterDirectory.path, "-w", "-t", "60"], as: try runAsUser())
        logger.info("PostgreSQL standby promoted", metadata: ["directory": "\(clusterDirectory.path)"])
    }

    /// ``start()`` for async code that runs beside other work (tests, mostly): `initdb` and `pg_ctl -w`
    /// take seconds, and waiting for them must not hold one of Swift concurrency's cooperative threads
    /// (as many as cores), so this waits on a Dispatch thread.
    public func startOffPool() async throws -> (endpoint: Endpoint, alreadyRunning: Bool) {
        try await Self.offCooperativePool { try self.start() }
    }

    /// ``createStandby(of:)`` (`pg_basebackup`, seconds to minutes on a loaded machine), waiting on a Dispatch thread
    /// (see ``startOffPool()``; a detached task would still hold a cooperative thread).
    public func createStandbyOffPool(of primary: Endpoint) async throws {
        try await Self.offCooperativePool { try self.createStandby(of: primary) }
    }

    /// ``stop(mode:)``, waiting on a Dispatch thread (see ``startOffPool()``).
    public func stopOffPool(mode: String = "fast") async throws {
        try await Self.offCooperativePool { try self.stop(mode: mode) }
    }

    /// `text` as a quoted `postgresql.conf` string: `'` doubled, and the backslash, CR and LF escaped (the file's
    /// reader un-escapes them). A data directory's path spliced in raw made a `'` in it a syntax error that stopped the
    /// cluster from starting.
    static func settingString(_ text: String) -> String {
        var quoted = "'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "'": quoted += "''"
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "'"
    }

    /// `path` as one element of a list setting (`unix_socket_directories`): double-quoted with `"` doubled, so a comma
    /// or a leading space in the path does not split or trim it.
    static func listElement(_ path: String) -> String {
        var element = "\""
        for scalar in path.unicodeScalars {
            if scalar == "\"" { element += "\"" }
            element.unicodeScalars.append(scalar)
        }
        return element + "\""
    }

    static func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// True while a postmaster runs for this cluster.
    public var isRunning: Bool {
        guard let bin = try? resolveBinDirectory(), let owner = try? runAsUser() else { return false }
        return isRunning(pgctl: bin.appendingPathComponent("pg_ctl"), owner: owner)
    }

    private func isRunning(pgctl: URL, owner: OSUser?) -> Bool {
        guard FileManager.default.fileExists(atPath: clusterDirectory.appendingPathComponent("postmaster.pid").path) else {
            return false
        }
        return (try? run(pgctl, ["status", "-D", clusterDirectory.path], as: owner)) != nil
    }

    // MARK: - Binaries and users

    func resolveBinDirectory() throws -> URL {
        let fm = FileManager.default
        func usable(_ url: URL) -> Bool { fm.isExecutableFile(atPath: url.appendingPathComponent("pg_ctl").path) }
        if let configured = configuration.binDirectory {
            guard usable(configured) else { throw EmbeddedPostgresError("no pg_ctl in \(configured.path)") }
            return configured
        }
        if let output = try? capture(URL(fileURLWithPath: "/usr/bin/env"), ["pg_config", "--bindir"]) {
            let url = URL(fileURLWithPath: output.trimmingCharacters(in: .whitespacesAndNewlines))
            if usable(url) { return url }
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? fm.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions {
            let url = URL(fileURLWithPath: "\(root)/\(version)/bin")
            if usable(url) { return url }
        }
        throw EmbeddedPostgresError(
            "PostgreSQL server binaries not found: install them (apt-get install -y postgresql), set LEDGERD_PG_BINDIR, or set LEDGERD_DATABASE_URL"
        )
    }

    struct OSUser: Sendable {
        var name: String
        var uid: uid_t
        var gid: gid_t
    }

    /// The user to run as, or nil to run as this process's user (when not root).
    private func runAsUser() throws -> OSUser? {
        guard geteuid() == 0 else { return nil }
        guard let entry = getpwnam(configuration.osUser) else {
            throw EmbeddedPostgresError(
                "running as root, but the OS user \"\(configuration.osUser)\" that should run PostgreSQL does not exist (set LEDGERD_PG_USER)"
            )
        }
        return OSUser(name: configuration.osUser, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    private func checkTraversable(_ url: URL, by user: OSUser) throws {
        var path = url.standardizedFileURL
        while path.path != "/" {
            var info = stat()
            if stat(path.path, &info) == 0 {
                let others = info.st_mode & 0o001 != 0
                let group = info.st_gid == user.gid && info.st_mode & 0o010 != 0
                let owner = info.st_uid == user.uid && info.st_mode & 0o100 != 0
                if !(others || group || owner) {
                    throw EmbeddedPostgresError("the OS user \(user.name) cannot enter \(path.path); choose a LEDGERD_DATA_DIR it can reach")
                }
            }
            path = path.deletingLastPathComponent()
        }
    }

    // MARK: - Processes

    @discardableResult
    private func run(_ executable: URL, _ arguments: [String], as user: OSUser?) throws -> String {
        if let user {
            let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
            guard let setpriv else { throw EmbeddedPostgresError("setpriv (util-linux) is needed to run PostgreSQL as \(user.name)") }
            return try capture(
                URL(fileURLWithPath: setpriv),
                ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", executable.path] + arguments
            )
        }
        return try capture(executable, arguments)
    }

    /// Runs a program to completion, output to a temporary file (never a pipe: the server that
    /// pg_ctl starts must not hold a pipe we wait on).
    ///
    /// ``ChildProcessHandle`` and a blocking reap rather than Foundation's Process: it needs no run loop, so it also
    /// works in an atexit handler and while the process is shutting down, and the child closes every inherited
    /// descriptor above stderr, so the postmaster never keeps our sockets open.
    private func capture(_ executable: URL, _ arguments: [String]) throws -> String {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("ledgerd-pg-\(UUID.newRandom().uuidString).out").path
        defer { unlink(outputPath) }
        // Run from "/": the unprivileged user may not be able to enter our cwd.
        // Not our environment: it may hold secrets (API keys, database URLs), and the server's processes — readable
        // by its OS user and, through pg_read_binary_file('/proc/…/environ'), by any superuser session — inherit it.
        let child: ChildProcessHandle
        do {
            child = try ChildProcessHandle.launch(
                executable.path,
                arguments,
                environment: Self.serverEnvironment(),
                directory: "/",
                standardInput: .null,
                standardOutput: .appending(outputPath),
                standardError: .appending(outputPath)
            )
        } catch {
            throw EmbeddedPostgresError("cannot run \(executable.path): \(error)")
        }
        let ended = child.reapBlocking()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard ended == .exit(0) else {
            let how =
                switch ended {
                case .exit(let code): "exited with \(code)"
                case .signal(let signal): "was killed by signal \(signal)"
                }
            throw EmbeddedPostgresError("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) \(how): \(text)")
        }
        return text
    }
}

extension EmbeddedPostgres {
    /// The environment the cluster's programs get: the search path, the locale and time zone, the temporary
    /// directory — nothing else of this process's environment.
    static func serverEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        environment.filter { name, _ in
            ["PATH", "LANG", "TZ", "TMPDIR"].contains(name) || name.hasPrefix("LC_")
        }
    }
}

/// A failure to find, initialise, start or stop the embedded cluster.
public struct EmbeddedPostgresError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
}
