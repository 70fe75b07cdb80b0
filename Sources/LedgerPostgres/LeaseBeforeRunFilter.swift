import Logging

/// The log handler of the pools ``DatabaseClient`` runs: everything passes through to `inner` except PostgresNIO's
/// warning that a connection was leased before `PostgresClient.run()` began.
///
/// ``DatabaseClient`` lets its waiting statements go in the same task, a few instructions before it calls the
/// pool's `run()`; a statement on another thread can ask for its lease in between. The pool queues such a lease
/// and serves it once it runs, so nothing is wrong — but the warning reached a command's output (a CSV export's
/// first line, seen in CI). Every other message, at every level, is the inner handler's.
struct LeaseBeforeRunFilter: LogHandler {
    /// PostgresNIO's words (`PostgresClient.leaseConnection`), matched by their prefix.
    static let dropped = "Trying to lease connection from `PostgresClient`, but `PostgresClient.run()`"

    var inner: any LogHandler

    /// `logger` with its handler wrapped.
    static func wrapping(_ logger: Logger) -> Logger {
        Logger(label: logger.label, factory: { _ in LeaseBeforeRunFilter(inner: logger.handler) })
    }

    func log(event: LogEvent) {
        if event.level == .warning && event.message.description.hasPrefix(Self.dropped) { return }
        inner.log(event: event)
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }
}
