import Logging
import PostgresNIO
import Synchronization

/// The plans of the statements a task runs through ``DatabaseClient/query(_:logger:file:line:)``, for the
/// tests that guard what a read costs in the database (`StatementCostTests`): a count of buffers touched
/// against the rows returned, which a "behaviour unchanged" edit of a hot query cannot blow up 1,000-fold
/// without failing, and which does not depend on how busy the machine is.
///
/// While a task runs with ``recording`` bound, every statement it sends through a `DatabaseClient` that
/// begins with `SELECT` is first run, with the same binds, under `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`
/// and its plan recorded; then the statement runs as usual. EXPLAIN ANALYZE executes the statement, so bind
/// it only around reads. Unbound (the daemon, every other test) the cost is one task-local look-up per
/// statement.
public final class StatementPlans: Sendable {
    @TaskLocal public static var recording: StatementPlans?

    /// One statement as sent and its plan (EXPLAIN's JSON).
    public struct Plan: Sendable {
        public let sql: String
        public let json: String
    }

    private let plans = Mutex<[Plan]>([])

    public init() {}

    /// The plans recorded so far, in the order their statements ran.
    public var all: [Plan] { plans.withLock { $0 } }

    func explain(_ query: PostgresQuery, on client: PostgresClient, logger: Logger?) async throws {
        guard query.sql.drop(while: \.isWhitespace).uppercased().hasPrefix("SELECT") else { return }
        var explained = query
        explained.sql = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query.sql
        var json = ""
        for try await text in try await client.query(explained, logger: logger).decode(ByteBuffer.self) {
            json += String(buffer: text)
        }
        plans.withLock { $0.append(Plan(sql: query.sql, json: json)) }
    }
}
