import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where webhooks may be delivered: the one rule against server-side request forgery (security review 3, N2).
///
/// A webhook URL is chosen by a back-office user, and the daemon POSTs signed bodies to it from inside the network,
/// so without a rule it reaches what only the daemon can reach: PostgreSQL, the acquirer's API, the ledger itself,
/// a cloud's metadata service. The rule, applied at registration (``check(url:)``) and again at connection time on
/// every address the host name resolves to (``check(address:)``, by ``HTTPWebhookTransport``, so a name that resolves
/// inward is caught):
/// - the URL is `http://` or `https://` (lower case, as the table's CHECK), has a host, and carries no user or password;
/// - its addresses are public: loopback, unspecified, private (RFC 1918), shared (100.64/10), link-local, unique-local,
///   site-local, multicast, reserved and broadcast addresses are refused, in every spelling of IPv4 (dotted, decimal,
///   hex, octal, short forms), and inside IPv6 (IPv4-mapped, -compatible, NAT64, 6to4);
/// - unless the operator's allow-list (`LEDGERD_WEBHOOK_ALLOWED_ADDRESSES`: addresses or CIDR blocks) names them.
public struct WebhookDestinations: Sendable, Hashable {
    /// An address or block the operator allows although it is internal.
    public struct Block: Sendable, Hashable {
        let bytes: [UInt8]
        let prefixLength: Int

        /// `10.1.2.3`, `10.1.0.0/16`, `::1`, `fd00::/8`; nil when it is none of these.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let bytes = WebhookDestinations.addressBytes(String(parts[0])) else { return nil }
            let length = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let length, (0...bytes.count * 8).contains(length) else { return nil }
            self.bytes = bytes
            self.prefixLength = length
        }

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            for bit in 0..<prefixLength where (address[bit / 8] ^ bytes[bit / 8]) & (0x80 >> UInt8(bit % 8)) != 0 { return false }
            return true
        }
    }

    /// Why a URL or an address is refused (its message names neither a port nor what answered there).
    public struct Refusal: Error, Sendable, Hashable {
        public let code: String
        public let message: String
    }

    public let allowed: [Block]

    public init(allowed: [Block] = []) { self.allowed = allowed }

    /// Parses `LEDGERD_WEBHOOK_ALLOWED_ADDRESSES` (comma-separated addresses or CIDR blocks); nil at the first bad entry.
    public init?(allowList: String) {
        var blocks: [Block] = []
        for entry in allowList.split(separator: ",") {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let block = Block(trimmed) else { return nil }
            blocks.append(block)
        }
        self.init(allowed: blocks)
    }

    /// The URL's host (without brackets) and port, after the registration rule: scheme, host, no credentials, and an
    /// address literal (in any spelling) or a name that is not internal.
    public func check(url: String) throws(Refusal) -> (host: String, port: Int?) {
        guard url.utf8.count <= 2_000, url.hasPrefix("http://") || url.hasPrefix("https://"), let parsed = URL(string: url),
            let rawHost = parsed.host, !rawHost.isEmpty
        else {
            throw Refusal(code: "invalid_url", message: "url must be an absolute http:// or https:// URL (scheme in lower case)")
        }
        guard parsed.user == nil, parsed.password == nil, !Self.authority(of: url).contains("@") else {
            throw Refusal(code: "invalid_url", message: "url must not carry a user name or password")
        }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        if let address = Self.addressBytes(host) {
            try check(address: address)
        } else {
            let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
            if name == "localhost" || name.hasSuffix(".localhost") { throw Self.internalRefusal }
        }
        return (host, parsed.port)
    }

    /// Refuses an internal address the allow-list does not name (4 bytes IPv4, 16 bytes IPv6).
    public func check(address: [UInt8]) throws(Refusal) {
        guard Self.isInternal(address), !allowed.contains(where: { $0.contains(address) }) else { return }
        throw Self.internalRefusal
    }

    static let internalRefusal = Refusal(
        code: "destination_refused",
        message: "webhooks are not delivered to loopback, private, link-local or other internal addresses"
    )

    /// The part of the URL between `//` and the path: a `@` there is a user name, however the URL parser reads it.
    static func authority(of url: String) -> Substring {
        guard let start = url.range(of: "//")?.upperBound else { return "" }
        let rest = url[start...]
        return rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// Whether an address is one the daemon's network neighbourhood, not the internet, answers at.
    public static func isInternal(_ address: [UInt8]) -> Bool {
        if address.count == 4 { return isInternalIPv4(address) }
        guard address.count == 16 else { return true }
        let head = Array(address[0..<12])
        // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d, and :: and ::1 themselves), NAT64 (64:ff9b::/96).
        if head == Array(repeating: 0, count: 10) + [0xFF, 0xFF] || head == Array(repeating: 0, count: 12)
            || head == [0x00, 0x64, 0xFF, 0x9B] + Array(repeating: 0, count: 8)
        {
            return isInternalIPv4(Array(address[12..<16]))
        }
        // 6to4 (2002:a.b.c.d::/48).
        if address[0] == 0x20, address[1] == 0x02 { return isInternalIPv4(Array(address[2..<6])) }
        if address[0] & 0xFE == 0xFC { return true }  // unique local fc00::/7
        if address[0] == 0xFE, address[1] & 0xC0 == 0x80 || address[1] & 0xC0 == 0xC0 { return true }  // link-local, site-local
        if address[0] == 0xFF { return true }  // multicast
        return false
    }

    static func isInternalIPv4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): true  // "this network", private, loopback
        case (100, 64...127): true  // shared address space (carrier NAT)
        case (169, 254): true  // link-local (cloud metadata services)
        case (172, 16...31), (192, 168): true  // private
        case (192, 0) where a[2] == 0, (198, 18...19): true  // IETF protocol assignments, benchmarking
        case (224...255, _): true  // multicast, reserved, broadcast
        default: false
        }
    }

    /// An address literal's bytes: IPv6 (with or without brackets, as `inet_pton` reads it), or IPv4 in any spelling
    /// `inet_aton` accepts (`169.254.169.254`, `2852039166`, `0xA9FEA9FE`, `0251.0376.0251.0376`, `169.16689662`);
    /// nil for a host name.
    public static func addressBytes(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
            return withUnsafeBytes(of: &address) { Array($0) }
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = Self.number(part) else { return nil }
            numbers.append(number)
        }
        var bytes: [UInt8] = []
        for number in numbers.dropLast() {
            guard number <= 0xFF else { return nil }
            bytes.append(UInt8(number))
        }
        let last = numbers[numbers.count - 1]
        let lastBytes = 4 - bytes.count
        guard last < (UInt64(1) << (8 * UInt64(lastBytes))) else { return nil }
        for index in (0..<lastBytes).reversed() { bytes.append(UInt8((last >> (8 * UInt64(index))) & 0xFF)) }
        return bytes
    }

    /// One part of an IPv4 literal: decimal, `0x` hex or `0`-led octal (as `inet_aton`).
    static func number(_ part: Substring) -> UInt64? {
        guard !part.isEmpty, part.utf8.count <= 34 else { return nil }
        if part.lowercased().hasPrefix("0x") { return part.count == 2 ? 0 : UInt64(part.dropFirst(2), radix: 16) }
        if part.count > 1, part.hasPrefix("0") { return UInt64(part.dropFirst(), radix: 8) }
        return part.allSatisfy(\.isASCII) ? UInt64(part, radix: 10) : nil
    }
}
