import LedgerEngine
import PostgresNIO
import Synchronization
import _ConnectionPoolModule

/// The database could not be reached, or did not answer in time: nothing was done, or — for a statement in
/// flight when the connection broke — its outcome is unknown (an append made with an idempotency key is safe
/// to retry with the same key).
public struct DatabaseUnavailableError: Error, Sendable, CustomStringConvertible {
    public let description: String

    /// The watcher found the database unreachable; the statement was not sent.
    public static let unreachable = DatabaseUnavailableError(description: "the ledger database is unreachable")
    /// The database did not answer within the deadline.
    public static let timedOut = DatabaseUnavailableError(description: "the ledger database did not answer in time")
}

/// The one reading of "the database is unavailable" (as opposed to "the database refused this statement").
public enum DatabaseFailure {
    /// What a transaction's body threw, unwrapped from the transaction's error (itself when it is not one): a caller
    /// that refuses with its own errors inside a transaction sees them as thrown.
    public static func thrownInside(_ error: any Error) -> any Error {
        var inner = error
        while let transaction = inner as? PostgresTransactionError, let thrown = transaction.closureError { inner = thrown }
        return inner
    }

    /// True when `error` says the database could not be reached or went away (connection refused or lost, pool
    /// shut down, server shutting down or starting up, too many connections, statement timeout, a read-only
    /// server) — a 503, not a 500.
    public static func isUnavailable(_ error: any Error) -> Bool {
        if error is DatabaseUnavailableError { return true }
        if let append = error as? AppendError { return append == .databaseUnavailable }
        if let transaction = error as? PostgresTransactionError {
            return [transaction.closureError, transaction.commitError, transaction.beginError].contains { inner in
                inner.map(isUnavailable) ?? false
            }
        }
        if error is ConnectionPoolError { return true }
        if let psql = error as? PSQLError {
            switch psql.code {
            case .server:
                let state = psql.serverInfo?[.sqlState] ?? ""
                // 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect now;
                // 53300: too many connections; 57014: canceled (statement_timeout); 25006: read-only transaction —
                // the server is a standby (a primary demoted, or a failover under way), never the request's fault.
                return state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300" || state == "57014"
                    || state == "25006"
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
                .queryCancelled, .sslUnsupported, .failedToAddSSLHandler:
                return true
            default:
                return false
            }
        }
        return false
    }
}

/// `operation`'s result, or ``DatabaseUnavailableError/timedOut`` once `timeout` has passed — then without
/// waiting for `operation` (it is cancelled, and a statement stuck on a dead connection ends when the pool
/// retires that connection). Cancelling the caller cancels `operation`. (The engine's rule, with this error.)
public func withDeadline<T: Sendable>(
    _ timeout: Duration,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withDeadline(timeout, timedOut: DatabaseUnavailableError.timedOut, operation)
}
