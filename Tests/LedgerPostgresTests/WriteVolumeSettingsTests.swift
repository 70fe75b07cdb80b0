import Foundation
import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The embedded cluster's settings for a day's write volume (issue 57): room for a quarter of an hour of payments
/// between checkpoints, so a busy day requests none, and full-page images compressed. Read back from the running
/// cluster (the tests' cluster is launched by the same code as `ledgerd serve`'s), so a setting the server refused or
/// a configuration file that no longer reaches it fails here.
struct WriteVolumeSettingsTests {
    @Test func checkpointsAreAQuarterHourOrEightGigabytesApartAndPageImagesAreCompressed() async throws {
        let db = try await TestDatabase.fresh()
        try await db.withOwner { client in
            let rows = try await column(
                client,
                """
                SELECT name || '=' || setting || coalesce(unit, '') FROM pg_settings
                WHERE name IN ('max_wal_size', 'min_wal_size', 'checkpoint_timeout', 'wal_compression') ORDER BY name
                """,
                as: String.self
            )
            let version = try await column(client, "SELECT current_setting('server_version_num')::int", as: Int32.self).first ?? 0
            #expect(
                rows == [
                    "checkpoint_timeout=900s", "max_wal_size=8192MB", "min_wal_size=1024MB",
                    "wal_compression=\(version >= 150_000 ? "lz4" : "on")",
                ]
            )
        }
    }
}
