import LedgerCore

/// Why the ledger refused or could not complete an append.
///
/// Compare with the static members (`error == .versionConflict`); details such as the stream and
/// versions are extra information and do not take part in equality.
public struct AppendError: Error, Hashable, CustomStringConvertible, Sendable {
    private enum Code: Hashable, Sendable {
        case versionConflict, idempotencyConflict, invalidAppend, settlementItemsMismatch, writerStopped, storageFailure
        case databaseUnavailable
    }

    private let code: Code
    /// A message safe to show to a client (never a database error's text).
    public let message: String
    public let streamID: StreamID?
    public let expectedVersion: ExpectedVersion?
    public let actualVersion: Int64?

    private init(
        _ code: Code,
        _ message: String,
        streamID: StreamID? = nil,
        expectedVersion: ExpectedVersion? = nil,
        actualVersion: Int64? = nil
    ) {
        self.code = code
        self.message = message
        self.streamID = streamID
        self.expectedVersion = expectedVersion
        self.actualVersion = actualVersion
    }

    /// Another command wrote the stream first. Reload the stream, decide again, and retry.
    public static let versionConflict = AppendError(.versionConflict, "version conflict")
    /// The idempotency key was already used for a different request.
    public static let idempotencyConflict = AppendError(.idempotencyConflict, "idempotency key reused")
    /// The request itself is malformed; retrying it unchanged will fail again.
    public static let invalidAppend = AppendError(.invalidAppend, "invalid append")
    /// A settlement batch's closed event disagrees with the items the ledger's membership rule
    /// assigns to it (sql/0008 refused it with SQLSTATE LDG10), or it closes a batch never opened.
    /// Not contention: the Swift tally and the SQL rule disagree, and deciding again from the same
    /// items gives the same event. Report it; do not retry.
    public static let settlementItemsMismatch = AppendError(
        .settlementItemsMismatch,
        "the settlement batch's closing counts or totals differ from the items the ledger assigns to it"
    )
    /// The writer is shutting down and takes no more appends.
    public static let writerStopped = AppendError(.writerStopped, "the ledger writer has stopped")
    /// The database failed; the append did not happen (its transaction rolled back).
    public static let storageFailure = AppendError(.storageFailure, "the ledger database failed")
    /// The database could not be reached or went away. Nothing was appended — unless the connection broke
    /// while the transaction committed, when the outcome is unknown: retry with the same idempotency key.
    public static let databaseUnavailable = AppendError(
        .databaseUnavailable,
        "the ledger database is unavailable; retry (with the same idempotency key)"
    )

    public static func versionConflict(stream: StreamID, expected: ExpectedVersion, actual: Int64) -> AppendError {
        AppendError(
            .versionConflict,
            "stream \(stream) is at version \(actual), expected \(expected)",
            streamID: stream,
            expectedVersion: expected,
            actualVersion: actual
        )
    }

    /// Other writers kept winning: the batch was refused `attempts` times in a row, nothing of it appended. A version
    /// conflict for every request in it (it compares equal to ``versionConflict``): each caller decides again on
    /// fresh state in a later batch, with its own attempt budget — busy, never a failure of the database.
    public static func contended(attempts: Int) -> AppendError {
        AppendError(.versionConflict, "the ledger is too contended: \(attempts) attempts found other writers first")
    }

    public static func idempotencyConflict(key: String) -> AppendError {
        AppendError(.idempotencyConflict, "idempotency key \"\(key)\" was already used with a different request")
    }

    public static func invalidAppend(_ message: String) -> AppendError {
        AppendError(.invalidAppend, message)
    }

    package static func storageFailure(_ message: String) -> AppendError {
        AppendError(.storageFailure, message)
    }

    /// True for a version conflict: the caller may reload, re-decide and retry.
    public var isRetryable: Bool { code == .versionConflict }

    public var description: String { message }

    public static func == (lhs: AppendError, rhs: AppendError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
