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
/// a ChaCha20 stream in user space, reseeded from the kernel, safe across `fork`), and time-ordered version-7 ones with
/// the same random bits for the ids an index keys (``newTimeOrdered(now:)``).
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

    /// A new time-ordered (version 7, RFC 9562 §5.7) UUID: the Unix time in milliseconds in its first 48 bits, then
    /// 74 random bits from the same generator. For the ids the ledger indexes — event ids, order ids (its streams,
    /// read-model rows and contacts are keyed by them) and correlation ids: each B-tree over them then grows at its
    /// right edge, so a payment's index inserts touch the few pages the previous payments touched, instead of a random
    /// leaf of an index as large as the ledger — which after every checkpoint cost a full-page image per insert (8 KB
    /// of WAL each; issue 57). The random bits keep them unguessable; the time they reveal is the order's own.
    public static func newTimeOrdered(now: Date = Date()) -> UUID {
        var id = newRandom().uuid
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        id.0 = UInt8(truncatingIfNeeded: milliseconds >> 40)
        id.1 = UInt8(truncatingIfNeeded: milliseconds >> 32)
        id.2 = UInt8(truncatingIfNeeded: milliseconds >> 24)
        id.3 = UInt8(truncatingIfNeeded: milliseconds >> 16)
        id.4 = UInt8(truncatingIfNeeded: milliseconds >> 8)
        id.5 = UInt8(truncatingIfNeeded: milliseconds)
        id.6 = (id.6 & 0x0F) | 0x70  // version 7
        return UUID(uuid: id)
    }

    /// A new time-ordered UUID as the ledger writes ids (lowercase text).
    public static func newTimeOrderedString() -> String { newTimeOrdered().lowercasedString }

    /// The UUID in lowercase, as the ledger writes ids. Foundation's text lowercased: 0.4 µs, no system call, so no
    /// formatter of our own (the cost of `UUID()` was its `/dev/urandom`, not its text).
    public var lowercasedString: String { uuidString.lowercased() }
}
