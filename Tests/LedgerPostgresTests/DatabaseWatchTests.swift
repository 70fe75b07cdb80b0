import Foundation
import LedgerTestSupport
import PostgresNIO
import Testing

@testable import LedgerPostgres

#if canImport(Glibc)
import Glibc
#endif

/// The watcher's question when a probe fails: is the server down (its address refuses connections: an outage at
/// once), or only slow (a loaded host: probes in a row decide)?
@Suite(.machine(.shared)) struct DatabaseWatchTests {
    @Test func aRunningServerIsNotRefusedAndAClosedAddressIs() async throws {
        let endpoint = try await TestCluster.shared.endpoint()
        let running = TestCluster.configuration(endpoint: endpoint, database: "postgres", user: endpoint.superuser)
        #expect(await !DatabaseClient.refuses(running, timeout: .seconds(2)))

        let missingSocket = PostgresClient.Configuration(
            unixSocketPath: endpoint.socketPath + ".gone",
            username: "nobody",
            password: nil,
            database: nil
        )
        #expect(await DatabaseClient.refuses(missingSocket, timeout: .seconds(2)))

        // A TCP port nothing listens on: bind one (port 0: the kernel picks), note it, close it.
        let closed = PostgresClient.Configuration(
            host: "127.0.0.1",
            port: try Self.closedPort(),
            username: "nobody",
            password: nil,
            database: nil,
            tls: .disable
        )
        #expect(await DatabaseClient.refuses(closed, timeout: .seconds(2)))
    }

    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
