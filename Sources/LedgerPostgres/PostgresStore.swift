import LedgerMacros
import Logging
import PostgresNIO

/// What every store of this module runs on: the pool its statements use and the logger they log to.
public struct StoreConnection: Sendable {
    public let client: DatabaseClient
    public let logger: Logger

    public init(client: DatabaseClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }
}

/// A store: a type whose methods are SQL statements (one each), in the style of swift-jobs-postgres'
/// queue driver. The use cases call stores; they never write SQL themselves.
public protocol PostgresStore: Sendable {
    var connection: StoreConnection { get }
    init(connection: StoreConnection)
}

extension PostgresStore {
    public init(client: DatabaseClient, logger: Logger) {
        self.init(connection: StoreConnection(client: client, logger: logger))
    }

    var client: DatabaseClient { connection.client }
    var logger: Logger { connection.logger }
}
