import Logging
import PostgresNIO

/// Runs `body` with a connection pool that is running; the pool shuts down when `body` returns.
/// For commands and tests; the daemon runs its pool as a service instead.
public func withPostgresClient<T: Sendable>(
    configuration: PostgresClient.Configuration, logger: Logger,
    _ body: @Sendable (PostgresClient) async throws -> T
) async throws -> T {
    let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}
