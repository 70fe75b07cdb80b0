import Foundation
import LedgerCore

#if canImport(Glibc)
import Glibc
#endif

/// How `ledgerd` writes and reads a secret file (API keys and their keyring, private keys, the webhook secrets key).
///
/// Written: created with mode 0600 from its first byte — never readable by another user, whatever the umask — written
/// and synced under a temporary name in the same directory, then moved into place, so the name only ever shows a
/// complete file. Read: refused when group or others may read or write it (sshd's `StrictModes`): such a file may
/// have been read, or planted (an operator key's verifier in the keyring), by another local user.
public enum SecretFile {
    /// Reads the secret file at `path` (following a symbolic link: the mode checked is the file's own).
    public static func read(_ path: String) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SecretFileError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw SecretFileError("cannot read \(path): \(String(cString: strerror(errno)))") }
        guard status.st_mode & 0o077 == 0 else {
            throw SecretFileError("\(path) must not be readable or writable by group or others (chmod 600)")
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1_024)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw SecretFileError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { return data }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    /// Writes `data` to `url`. Without `overwrite`, an existing file is kept and the write throws.
    public static func write(_ data: Data, to url: URL, overwrite: Bool = false) throws {
        let directory = url.deletingLastPathComponent().path
        let temporary = "\(directory)/.\(url.lastPathComponent).\(UUID.newRandom().uuidString).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SecretFileError("cannot create a file in \(directory): \(String(cString: strerror(errno)))") }
        var written = 0
        let complete = data.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                written += n
            }
            return true
        }
        let synced = fchmod(fd, 0o600) == 0 && fsync(fd) == 0
        close(fd)
        guard complete && synced else {
            unlink(temporary)
            throw SecretFileError("cannot write \(url.path)")
        }
        if overwrite {
            guard rename(temporary, url.path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw SecretFileError("cannot write \(url.path): \(reason)")
            }
        } else {
            // link(2) refuses an existing name: nothing is ever replaced.
            let linked = link(temporary, url.path) == 0
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            guard linked else { throw SecretFileError("cannot write \(url.path): \(reason)") }
        }
    }
}

public struct SecretFileError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
