import Foundation
import LedgerAcquirerService
import PostgresNIO

/// One database for several `ledgerd` processes, set up as an operator sets up production: an owner role
/// that applies the migrations (the first daemon gets its URL as `LEDGERD_MIGRATION_DATABASE_URL`), a login
/// role in `ledger_app` for the daemons, and the acquirer's group role `acquirer_app` created by the
/// superuser (a database owner may not create roles; sql/acquirer/0001 creates it only where it is missing).
public struct SharedDatabase: Sendable {
    public let database: TestDatabase
    /// The owner's and the daemons' login roles.
    public let owner: String
    public let app: String

    /// A new empty database owned by a new role; `tag` names the roles (`owner_<tag>`, `shop_<tag>`).
    public static func make(tag: String) async throws -> SharedDatabase {
        let database = try await TestDatabase.empty()
        let (owner, app) = ("owner_\(tag)", "shop_\(tag)")
        try await TestCluster.withClient(endpoint: database.endpoint, database: "postgres", user: database.endpoint.superuser) { client in
            try await client.query("CREATE ROLE \(unescaped: owner) LOGIN")
            try await client.query(
                // Roles are the cluster's: a daemon of another test may be creating it at this moment (its migration
                // allows for the race the same way).
                """
                DO $$ BEGIN
                    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'acquirer_app') THEN CREATE ROLE acquirer_app NOLOGIN; END IF;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
                END $$
                """
            )
            try await client.query("CREATE ROLE \(unescaped: app) LOGIN IN ROLE ledger_app")
            try await client.query("ALTER DATABASE \(unescaped: quoteIdentifier(database.name)) OWNER TO \(unescaped: owner)")
        }
        return SharedDatabase(database: database, owner: owner, app: app)
    }

    /// The database's URL for `user` over the cluster's Unix socket.
    public func url(_ user: String) -> String {
        let endpoint = database.endpoint
        return "postgres://\(user)@\(endpoint.port == 5432 ? "" : ":\(endpoint.port)")/\(database.name)?host=\(endpoint.socketDirectory)"
    }

    /// The environment that points another daemon at the acquirer service the daemon with data directory
    /// `supervisor` runs as its child (as real daemons share the real acquirer): its URL, and its API key in
    /// a 0600 file at `keyFile`.
    public static func acquirerEnvironment(supervisedBy supervisor: URL, keyFile: URL) throws -> [String: String?] {
        let directory = supervisor.appendingPathComponent("acquirer")
        let endpoint = try String(contentsOf: directory.appendingPathComponent("endpoint"), encoding: .utf8)
        let secrets = try JSONDecoder().decode(AcquirerSecrets.self, from: Data(contentsOf: directory.appendingPathComponent("secrets.json")))
        guard FileManager.default.createFile(atPath: keyFile.path, contents: Data(secrets.apiKey.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        return [
            "LEDGERD_ACQUIRER_URL": endpoint.trimmingCharacters(in: .whitespacesAndNewlines),
            "LEDGERD_ACQUIRER_API_KEY_FILE": keyFile.path,
        ]
    }
}
