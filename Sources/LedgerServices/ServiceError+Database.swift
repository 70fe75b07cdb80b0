import LedgerPostgres

extension ServiceError {
    /// What a failure the use cases let through means to a caller, when it has a meaning: a ``ServiceError``
    /// itself, or "the database is unavailable" (``databaseUnavailable``, see `DatabaseFailure`). Nil: our own
    /// failure (an opaque 500, detail logged).
    public static func interpreting(_ error: any Error) -> ServiceError? {
        if let error = error as? ServiceError { return error }
        if DatabaseFailure.isUnavailable(error) { return .databaseUnavailable }
        return nil
    }
}
