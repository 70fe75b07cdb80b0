import PostgresNIO

/// One server or several to try in order — libpq's multi-host URL (`postgres://u@h1:5432,h2:5432/db` or
/// `?host=/run/a,/run/b`) — and which session is acceptable (`target_session_attrs`).
///
/// ``DatabaseClient`` tries the hosts in order and keeps the first acceptable one; when it is watched, it
/// looks again whenever that host stops answering or stops being acceptable (a failover), so a multi-host URL
/// with `target_session_attrs=read-write` follows the primary.
public struct DatabaseHosts: Sendable {
    /// libpq's `target_session_attrs` (`prefer-standby` is not supported).
    public enum SessionAttributes: String, Sendable, CaseIterable {
        /// Any server that answers (libpq's default).
        case any
        /// A server whose sessions may write (`SHOW transaction_read_only` is `off`): the primary.
        case readWrite = "read-write"
        /// A server whose sessions are read-only (a standby, or a primary with `default_transaction_read_only`).
        case readOnly = "read-only"
        /// A server not in recovery (`pg_is_in_recovery()` is false).
        case primary
        /// A server in recovery: a standby.
        case standby

        /// True when a server in this state is acceptable.
        public func accepts(inRecovery: Bool, readOnly: Bool) -> Bool {
            switch self {
            case .any: true
            case .readWrite: !readOnly
            case .readOnly: readOnly
            case .primary: !inRecovery
            case .standby: inRecovery
            }
        }
    }

    /// The hosts in the order they are tried; never empty.
    public private(set) var candidates: [PostgresClient.Configuration]
    public var sessionAttributes: SessionAttributes

    /// One host, any session (a plain URL).
    public init(_ configuration: PostgresClient.Configuration) {
        self.candidates = [configuration]
        self.sessionAttributes = .any
    }

    /// `candidates` in order (at least one), accepted when `sessionAttributes` says so.
    public init(candidates: [PostgresClient.Configuration], sessionAttributes: SessionAttributes) {
        precondition(!candidates.isEmpty, "a database needs at least one host")
        self.candidates = candidates
        self.sessionAttributes = sessionAttributes
    }

    /// The first host.
    public var first: PostgresClient.Configuration { candidates[0] }

    /// True when the host must be chosen by asking the servers (several hosts, or a session attribute).
    public var needsSelection: Bool { candidates.count > 1 || sessionAttributes != .any }

    /// The same hosts with `change` applied to each one's configuration (pool size, timeouts, startup parameters).
    public func updating(_ change: (inout PostgresClient.Configuration) -> Void) -> DatabaseHosts {
        var copy = self
        for index in copy.candidates.indices { change(&copy.candidates[index]) }
        return copy
    }

    /// The statement that tells whether a server is acceptable: `(pg_is_in_recovery(), transaction_read_only)`.
    static let probeQuery: PostgresQuery = "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'"
}
