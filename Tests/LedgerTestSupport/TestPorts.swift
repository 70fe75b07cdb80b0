import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// TCP ports for daemons the tests start: distinct within a run, below Linux's ephemeral range (32768–60999, where
/// the suite's own outgoing connections get their local ports: a random pick there met `bind: Address already in
/// use`), and free when handed out (a listening socket was bound to it and closed).
public enum TestPorts {
    /// Where this run starts handing out ports: random, so two runs on one machine rarely meet.
    private static let next = Mutex(Int.random(in: 0..<10_000))
    private static let range = 20_000..<32_000

    /// A port no other test of this run was given, that nothing listens on now.
    public static func free() -> Int {
        for _ in 0..<range.count {
            let port = next.withLock { offset in
                defer { offset = (offset + 1) % range.count }
                return range.lowerBound + offset
            }
            if bindable(port) { return port }
        }
        fatalError("no free port in \(range)")
    }

    private static func bindable(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
