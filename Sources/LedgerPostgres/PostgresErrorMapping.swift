import LedgerEngine
import PostgresNIO

/// The one place where database errors are interpreted. Never forward their text to a client.
enum PostgresErrorMapping {
    /// The server's error, unwrapped from a transaction error if needed.
    static func serverError(in error: any Error) -> PSQLError? {
        if let transaction = error as? PostgresTransactionError {
            for inner in [transaction.closureError, transaction.commitError, transaction.beginError] {
                if let inner, let psql = serverError(in: inner) { return psql }
            }
            return nil
        }
        if let psql = error as? PSQLError, psql.code == .server { return psql }
        return nil
    }

    static func sqlState(of error: any Error) -> String? {
        serverError(in: error)?.serverInfo?[.sqlState]
    }

    /// True when the server rejected a statement (as opposed to the connection failing).
    static func isStatementRejected(_ error: any Error) -> Bool {
        serverError(in: error) != nil && !DatabaseFailure.isUnavailable(error)
    }

    /// Maps a failed append transaction to the error its caller sees.
    static func appendError(from error: any Error) -> AppendError {
        if let appendError = error as? AppendError { return appendError }
        if DatabaseFailure.isUnavailable(error) { return .databaseUnavailable }
        guard let psql = serverError(in: error), let state = psql.serverInfo?[.sqlState] else {
            return .storageFailure("the ledger database failed")
        }
        let constraint = psql.serverInfo?[.constraintName]
        switch state {
        case "23505" where constraint == "events_stream_version_key":
            return .versionConflict
        case "LDG10":
            // sql/0008's membership rule took other items than the closed event states. Its own code, not a version
            // conflict: callers retry those, and a Swift/SQL disagreement would fail the same way every time.
            return .settlementItemsMismatch
        case "23505" where constraint == "events_event_id_key":
            return .invalidAppend("an event with this event id already exists")
        case "22P02", "22023", "23514", "22001", "54000":
            return .invalidAppend("an event was rejected by the ledger (invalid JSON or field out of range)")
        default:
            return .storageFailure("the ledger database failed (SQLSTATE \(state))")
        }
    }
}
