import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The ledger's identifiers (event ids, order ids, correlation ids, temporary file names): random version-4 UUIDs
/// (RFC 9562 §5.4) from the C library's cryptographically secure generator, `arc4random_buf` (glibc ≥ 2.36 and Darwin:
/// a ChaCha20 stream in user space, reseeded from the kernel, safe across `fork`).
///
/// Why not Foundation's `UUID()`: on Linux it opens, reads and closes `/dev/urandom` for every identifier, three system
/// calls and about 4.8 µs each; a payment mints about ten identifiers, most of them on the writer's single loop
/// (its events' ids), and a profile of `ledgerd serve` under the payments load found 9–10 % of the daemon's CPU there
/// (issue 28). These take 0.7 µs and no system call. Every identifier the daemon mints comes from here
/// (`RandomUUIDTests` keeps `UUID()` out of `Sources/`).
extension UUID {
    /// A new random (version 4, variant 10) UUID.
    public static func newRandom() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { arc4random_buf($0.baseAddress!, 16) }
        bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4
        bytes.8 = (bytes.8 & 0x3F) | 0x80  // variant 10 (RFC 9562)
        return UUID(uuid: bytes)
    }

    /// A new random UUID as the ledger writes ids: 36 lowercase characters, `8-4-4-4-12` hex digits.
    public static func newRandomString() -> String { newRandom().lowercasedString }

    /// The UUID in lowercase, as the ledger writes ids. Foundation's text lowercased: 0.4 µs, no system call, so no
    /// formatter of our own (the cost of `UUID()` was its `/dev/urandom`, not its text).
    public var lowercasedString: String { uuidString.lowercased() }
}
