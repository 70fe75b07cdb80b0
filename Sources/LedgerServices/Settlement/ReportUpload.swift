import Crypto
import Foundation
import LedgerCore

#if canImport(Glibc)
import Glibc
#endif

/// A settlement report as it arrived: spooled to its own file while it streamed in (``spool(_:limit:directory:)``),
/// never held whole in memory on the way, its size bounded as it came, its SHA-256 taken on the way. The
/// reconciliation reads it back in chunks (``forEachChunk(_:)``); the model's own layout, parsed at once,
/// reads it whole (``text()``), which the limit bounds.
public struct ReportUpload: Sendable {
    public let file: URL
    public let digest: [UInt8]
    public let byteCount: Int

    public static let chunkSize = 64 * 1024

    /// More bytes arrived than the limit allows; the spool file is gone.
    public struct TooLarge: Error, Sendable {
        public let limit: Int
    }

    /// Writes `chunks` to a new file in `directory` (mode 0600 from creation, a name no one else has),
    /// counting and hashing them; throws ``TooLarge`` as soon as more than `limit` bytes came.
    public static func spool<Chunks: AsyncSequence>(
        _ chunks: Chunks,
        limit: Int,
        directory: URL = FileManager.default.temporaryDirectory
    ) async throws -> ReportUpload where Chunks.Element: Collection<UInt8> {
        let file = directory.appendingPathComponent("ledgerd-report-\(UUID.newRandom().uuidString).csv")
        let fd = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ReportUploadError("cannot create \(file.path): \(String(cString: strerror(errno)))") }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var hasher = SHA256()
        var count = 0
        do {
            for try await chunk in chunks {
                count += chunk.count
                if count > limit { throw TooLarge(limit: limit) }
                let bytes = Array(chunk)
                hasher.update(data: bytes)
                try handle.write(contentsOf: bytes)
            }
            try handle.close()
        } catch {
            try? handle.close()
            unlink(file.path)
            throw error
        }
        return ReportUpload(file: file, digest: Array(hasher.finalize()), byteCount: count)
    }

    /// A report already in a file (the command line's): hashed in chunks.
    public static func existing(_ file: URL) throws -> ReportUpload {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hasher = SHA256()
        var count = 0
        while let data = try handle.read(upToCount: chunkSize), !data.isEmpty {
            hasher.update(data: data)
            count += data.count
        }
        return ReportUpload(file: file, digest: Array(hasher.finalize()), byteCount: count)
    }

    public init(file: URL, digest: [UInt8], byteCount: Int) {
        self.file = file
        self.digest = digest
        self.byteCount = byteCount
    }

    /// Calls `body` with each chunk of the report, in order.
    public func forEachChunk(_ body: ([UInt8]) async throws -> Void) async throws {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        while let data = try handle.read(upToCount: Self.chunkSize), !data.isEmpty { try await body(Array(data)) }
    }

    /// The first line that is not blank (of the first chunk), without a byte order mark: exports may start
    /// with blank lines before the header.
    public func firstLine() throws -> [UInt8] {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var head = (try handle.read(upToCount: Self.chunkSize) ?? Data())[...]
        if head.starts(with: [0xEF, 0xBB, 0xBF]) { head = head.dropFirst(3) }
        return Array(head.drop { $0 == 0x0A || $0 == 0x0D }.prefix { $0 != 0x0A && $0 != 0x0D })
    }

    /// Removes the spool file.
    public func remove() { unlink(file.path) }
}

public struct ReportUploadError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
