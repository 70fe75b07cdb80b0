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
    // The pool's own log (PostgresNIO's background logger) at notice or above: it opens connections ahead of need, and
    // one still opening when `body` is done fails as the scope closes — PostgresNIO logs that at info as "Connection
    // creation failed" (clientClosedConnection), which a successful `ledgerd audit verify` printed (issue 34). A
    // connection the body needed and could not get is its error, thrown, not this log.
    var background = logger
    background.logLevel = max(logger.logLevel, .notice)
    let pool = DatabaseClient(hosts: hosts, backgroundLogger: background)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await pool.run() }
        defer { group.cancelAll() }
        await pool.running()
        return try await body(pool)
    }
}
