import Logging
import PostgresNIO

/// Runs `body` with a connection pool that is running; the pool shuts down when `body` returns.
/// For commands and tests; the daemon runs its pool as a service instead.
///
/// `body` starts only once the pool's `run()` has begun (see ``DatabaseClient``), so its first query
/// does not race the pool's start.
public func withPostgresClient<T: Sendable>(
    configuration: PostgresClient.Configuration,
    logger: Logger,
    _ body: @Sendable (DatabaseClient) async throws -> T
) async throws -> T {
    try await withPostgresClient(hosts: DatabaseHosts(configuration), logger: logger, body)
}

/// ``withPostgresClient(configuration:logger:_:)`` on the first acceptable host of `hosts`.
public func withPostgresClient<T: Sendable>(
    hosts: DatabaseHosts,
    logger: Logger,
    _ body: @Sendable (DatabaseClient) async throws -> T
) async throws -> T {
    let pool = DatabaseClient(hosts: hosts, backgroundLogger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await pool.run() }
        defer { group.cancelAll() }
        await pool.running()
        return try await body(pool)
    }
}
