import Crypto
import Foundation
import LedgerBank
import LedgerCore
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Reports that arrive without a person (issue 53): a directory the daemon watches (`LEDGERD_INBOX_DIR`). An acquirer's
/// settlement report or a bank statement dropped there (by SFTP, a mount, a cron job) is recognized by its content and
/// goes through the same service as its upload (``SettlementService/reconcileReport(_:format:batchID:)``,
/// ``BankStatementService/importStatements(_:format:actor:)``), then moves to `processed/` or `failed/` with a
/// `<name>.reason` file (0600) beside it saying what became of it.
///
/// - A file is read once it has stopped changing: its size and modification time the same as at the previous poll
///   (or first seen), and not modified for `settle` — a file still being written is left alone.
/// - A file is claimed by renaming it into `working/<claim>/` (atomic: of two daemons sharing the inbox, one wins);
///   what is left there after a crash is finished at the next start (both imports are idempotent).
/// - The same content twice (by SHA-256, recorded in `.ledgerd-seen`) is a no-op: moved to `processed/`, its reason
///   naming the file it was seen as.
/// - A file larger than the report limit is failed unread; a refusal of the service (the 4xx of its upload) fails the
///   file with the refusal as its reason, nothing stored. Any other failure (the database down) leaves the file in
///   `working/` to be tried again at the next poll.
/// - Names starting with `.` are skipped: the usual way to drop a file is to write it under such a name and rename it.
public struct ReportInbox: Service, Sendable {
    /// Where and how often.
    public struct Settings: Sendable {
        public var directory: URL
        public var pollInterval: Duration
        /// How long a file must have been unmodified before it is read.
        public var settle: Duration
        /// The largest file read (`LEDGERD_REPORT_MAX_BYTES`, as an upload's).
        public var maximumBytes: Int
        /// This daemon's name among those that may share the inbox (its `working/` subdirectory).
        public var claim: String

        public init(directory: URL, pollInterval: Duration, settle: Duration, maximumBytes: Int, claim: String) {
            self.directory = directory
            self.pollInterval = pollInterval
            self.settle = settle
            self.maximumBytes = maximumBytes
            self.claim = claim
        }
    }

    /// What became of one file.
    public struct Outcome: Sendable, Hashable {
        public enum Place: String, Sendable { case processed, failed }
        public let name: String
        public let place: Place
        public let reason: String
    }

    let settings: Settings
    let settlement: SettlementService
    let bank: BankStatementService
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Each candidate's size and modification time at the last poll.
    let observed = Observed()

    /// The poll's memory, shared by the copies of the service (a `Mutex` is not copyable).
    final class Observed: Sendable {
        let files = Mutex<[String: Observation]>([:])
        /// Failed attempts per claimed file (not the file's refusal: those fail it at once).
        let attempts = Mutex<[String: Int]>([:])
    }

    /// Attempts at a claimed file whose import fails for a reason that is neither the file's refusal nor a dependency
    /// away, before the file fails with it.
    static let maximumAttempts = 3

    struct Observation: Equatable {
        let size: Int64
        let modified: Date
    }

    /// The subdirectories the inbox keeps.
    static let processed = "processed"
    static let failed = "failed"
    static let working = "working"
    static let seenFile = ".ledgerd-seen"
    /// Who the ledger records as having imported a file of the inbox.
    static let actor = "inbox"

    /// Prepares the directory (``prepare(_:claim:)``): a refusal stops the daemon at start.
    public init(
        settings: Settings,
        settlement: SettlementService,
        bank: BankStatementService,
        clock: @escaping @Sendable () -> Date,
        logger: Logger
    ) throws {
        try Self.prepare(settings.directory, claim: settings.claim)
        self.settings = settings
        self.settlement = settlement
        self.bank = bank
        self.clock = clock
        self.logger = logger
    }

    /// Creates the inbox (0700) and its subdirectories when absent; refuses one that is not a directory, is owned by
    /// another user, or that others may write to (anyone who can drop a file there feeds the ledger).
    public static func prepare(_ directory: URL, claim: String) throws {
        let path = directory.path
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT else { throw ConfigurationError("LEDGERD_INBOX_DIR \(path): \(String(cString: strerror(errno)))") }
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ConfigurationError("LEDGERD_INBOX_DIR \(path) cannot be created: \(error.localizedDescription)")
            }
            guard stat(path, &info) == 0 else { throw ConfigurationError("LEDGERD_INBOX_DIR \(path): \(String(cString: strerror(errno)))") }
        }
        guard info.st_mode & 0o170000 == 0o040000 else { throw ConfigurationError("LEDGERD_INBOX_DIR \(path) is not a directory") }
        guard info.st_uid == geteuid() else {
            throw ConfigurationError(
                "LEDGERD_INBOX_DIR \(path) is owned by uid \(info.st_uid), not by the daemon's user (uid \(geteuid())): refused"
            )
        }
        guard info.st_mode & 0o002 == 0 else {
            throw ConfigurationError(
                "LEDGERD_INBOX_DIR \(path) is writable by every user (mode \(String(info.st_mode & 0o7777, radix: 8))): refused; chmod o-w it (0700 is best)"
            )
        }
        for sub in [processed, failed, working, working + "/" + claim] {
            let url = directory.appendingPathComponent(sub)
            if mkdir(url.path, 0o700) != 0 && errno != EEXIST {
                throw ConfigurationError("LEDGERD_INBOX_DIR: cannot create \(url.path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// This daemon's claim name: its host and its data directory (two daemons never share a data directory: its lock).
    public static func claim(dataDirectory: URL) -> String {
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        let name = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).filter {
            $0.isLetter || $0.isNumber || $0 == "-" || $0 == "."
        }
        let digest = SHA256.hash(data: Data(dataDirectory.standardizedFileURL.path.utf8))
        return (name.isEmpty ? "host" : name) + "-" + Hex.encode(Array(digest).prefix(8))
    }

    public func run() async throws {
        logger.info("watching the inbox", metadata: ["directory": "\(settings.directory.path)", "claim": "\(settings.claim)"])
        await PeriodicJob("inbox pass", metric: nil, wait: .afterEachPass(settings.pollInterval), jobs: JobMetrics(), logger: logger).run {
            _ = try await self.pass()
        }
    }

    var workingDirectory: URL { settings.directory.appendingPathComponent(Self.working).appendingPathComponent(settings.claim) }

    /// One poll: the files this daemon had claimed and not finished, then every file of the inbox that has stopped
    /// changing, each claimed and processed in name order. Returns what became of each file finished.
    @discardableResult
    public func pass() async throws -> [Outcome] {
        var outcomes: [Outcome] = []
        for name in try Self.regularFiles(in: workingDirectory) {
            if let outcome = try await process(name) { outcomes.append(outcome) }
        }
        var ready: [String] = []
        var now: [String: Observation] = [:]
        let current = clock()
        for name in try Self.regularFiles(in: settings.directory) {
            var info = stat()
            guard stat(settings.directory.appendingPathComponent(name).path, &info) == 0 else { continue }
            let seen = Observation(
                size: Int64(info.st_size),
                modified: Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
            )
            let previous = observed.files.withLock { $0[name] }
            now[name] = seen
            let quiet =
                current.timeIntervalSince(seen.modified) >= Double(settings.settle.components.seconds)
                + Double(settings.settle.components.attoseconds) / 1e18
            if quiet && (previous == nil || previous == seen) { ready.append(name) }
        }
        observed.files.withLock { $0 = now }
        for name in ready.sorted() {
            let from = settings.directory.appendingPathComponent(name).path
            let claimed = workingDirectory.appendingPathComponent(name).path
            // A file of that name still claimed (being retried) is not overwritten: this one waits for it.
            guard !FileManager.default.fileExists(atPath: claimed) else { continue }
            // The claim: of two daemons sharing the inbox, the rename succeeds for one; the other finds it gone.
            guard rename(from, claimed) == 0 else { continue }
            if let outcome = try await process(name) { outcomes.append(outcome) }
        }
        return outcomes
    }

    /// Processes a claimed file; nil when it stays claimed, to be tried again (a failure that is not the file's).
    func process(_ name: String) async throws -> Outcome? {
        let file = workingDirectory.appendingPathComponent(name)
        var info = stat()
        guard stat(file.path, &info) == 0 else { return nil }
        if Int(info.st_size) > settings.maximumBytes {
            // Never read: a file past the limit is refused as its upload would be (413).
            return try finish(
                name,
                .failed,
                "payload_too_large: the file is \(info.st_size) bytes, larger than \(settings.maximumBytes) (LEDGERD_REPORT_MAX_BYTES); nothing stored"
            )
        }
        let upload = try ReportUpload.existing(file)
        let digest = Hex.encode(upload.digest)
        if let earlier = try seen()[digest] {
            return try finish(
                name,
                .processed,
                "already processed: the same content (SHA-256 \(digest)) arrived before as \(earlier); nothing done"
            )
        }
        do {
            let text: String
            if try Self.isBankStatement(upload) {
                text = Self.describe(try await bank.importStatements(upload, format: nil, actor: Self.actor))
            } else {
                text = Self.describe(try await settlement.reconcileReport(upload))
            }
            try record(digest, name: name)
            return try finish(name, .processed, "SHA-256 \(digest)\n" + text)
        } catch let refusal as ServiceError where Self.isRefusal(refusal) {
            return try finish(name, .failed, "\(refusal.code): \(refusal.message)\nSHA-256 \(digest); nothing stored")
        } catch let unreadable as ReportUploadError {
            return try finish(name, .failed, "unreadable: \(unreadable.description); nothing stored")
        } catch {
            if Task.isCancelled { throw error }
            // The database or the acquirer away: tried again at each poll for as long as it takes. Anything else is
            // tried a few times, then the file fails with it (a file that breaks the import must not loop for ever).
            let transient = ServiceError.interpreting(error).map { [.unavailable, .dependencyFailed].contains($0.kind) } ?? false
            let attempt = observed.attempts.withLock { attempts in
                attempts[name, default: 0] += 1
                return attempts[name]!
            }
            if !transient && attempt >= Self.maximumAttempts {
                return try finish(name, .failed, "failed \(attempt) times: \(error)\nSHA-256 \(digest); nothing stored")
            }
            logger.warning(
                "an inbox file could not be processed now; it is tried again at the next poll",
                metadata: ["file": "\(name)", "attempt": "\(attempt)", "error": "\(error)"]
            )
            return nil
        }
    }

    /// The refusals of the file itself (an upload's 4xx): a bad file; anything else may pass on a later try.
    static func isRefusal(_ error: ServiceError) -> Bool {
        [.malformedRequest, .invalidInput, .notFound, .conflict, .gone].contains(error.kind)
    }

    /// A bank statement: a format of LedgerBank by its first bytes, or an XML document (no report of an acquirer's is
    /// XML: the bank's import refuses it naming the formats it reads).
    static func isBankStatement(_ upload: ReportUpload) throws -> Bool {
        let handle = try FileHandle(forReadingFrom: upload.file)
        defer { try? handle.close() }
        let head = Array(try handle.read(upToCount: 4096) ?? Data())
        if BankStatementFormat.detect(prefix: head) != nil { return true }
        let start = head.drop { [0xEF, 0xBB, 0xBF, 0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return start.first == UInt8(ascii: "<")
    }

    /// Moves a claimed file to `place` (a free name there) and writes its reason beside it (0600).
    func finish(_ name: String, _ place: Outcome.Place, _ reason: String) throws -> Outcome {
        let folder = settings.directory.appendingPathComponent(place.rawValue)
        var target = name
        var n = 1
        while FileManager.default.fileExists(atPath: folder.appendingPathComponent(target).path)
            || FileManager.default.fileExists(atPath: folder.appendingPathComponent(target + ".reason").path)
        {
            n += 1
            target = "\(name).\(n)"
        }
        let text = "\(place.rawValue) \(Self.timestamp(clock())): \(name)\n\(reason)\n"
        let reasonPath = folder.appendingPathComponent(target + ".reason").path
        let fd = open(reasonPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ReportUploadError("cannot create \(reasonPath): \(String(cString: strerror(errno)))") }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
        guard rename(workingDirectory.appendingPathComponent(name).path, folder.appendingPathComponent(target).path) == 0 else {
            throw ReportUploadError("cannot move \(name) to \(place.rawValue)/: \(String(cString: strerror(errno)))")
        }
        observed.attempts.withLock { $0[name] = nil }
        let level: Logger.Level = place == .processed ? .info : .warning
        logger.log(
            level: level,
            "inbox file \(place.rawValue)",
            metadata: ["file": "\(name)", "moved_to": "\(place.rawValue)/\(target)", "reason": "\(reason.prefix(300))"]
        )
        return Outcome(name: target, place: place, reason: reason)
    }

    /// The digests of the files processed before, each with the name it came as (read each time: another daemon may
    /// share the inbox).
    func seen() throws -> [String: String] {
        let url = settings.directory.appendingPathComponent(Self.seenFile)
        guard let data = FileManager.default.contents(atPath: url.path) else { return [:] }
        var digests: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, digests[String(parts[0])] == nil { digests[String(parts[0])] = String(parts[1]) }
        }
        return digests
    }

    func record(_ digest: String, name: String) throws {
        let path = settings.directory.appendingPathComponent(Self.seenFile).path
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ReportUploadError("cannot write \(path): \(String(cString: strerror(errno)))") }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        try handle.write(contentsOf: Data("\(digest) \(name)\n".utf8))
        try handle.close()
    }

    /// The names of the regular files of `directory` not starting with `.`.
    static func regularFiles(in directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { name in
            guard !name.hasPrefix(".") else { return false }
            var info = stat()
            return lstat(directory.appendingPathComponent(name).path, &info) == 0 && info.st_mode & 0o170000 == 0o100000
        }.sorted()
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    static func describe(_ summary: BankStatementService.ImportSummary) -> String {
        (["bank statement file (\(summary.format))"]
            + summary.statements.map {
                "statement \($0.statementID) sequence \($0.sequence) of account \($0.account): \($0.status.rawValue), "
                    + "\($0.entries) entries, net \($0.net.decimalString) \($0.currency.code), \($0.appended) events appended"
            }).joined(separator: "\n")
    }

    static func describe(_ view: ReconciliationView) -> String {
        let result = view.result
        return "settlement report for batch \(result.batchID): \(result.reportLines) report lines, \(result.ledgerItems) ledger items, "
            + "\(result.matched) matched, \(result.breaks.count) breaks (\(view.openBreaks) open)"
    }
}
