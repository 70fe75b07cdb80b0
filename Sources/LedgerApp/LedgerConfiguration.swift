import Configuration
import Foundation
import LedgerCore
import LedgerServices
import Logging

/// Everything `ledgerd` can be told, read from flags (highest priority), then environment
/// variables, then these defaults. Each key's environment variable is its upper-cased form,
/// e.g. `ledgerd.database.url` → `LEDGERD_DATABASE_URL`.
///
/// | key (environment variable) | default | meaning |
/// |---|---|---|
/// | `LEDGERD_DATABASE_URL` | — | PostgreSQL URL of the app role; unset = embedded cluster. **Secret.** |
/// | `LEDGERD_MIGRATION_DATABASE_URL` | the database URL | URL of the schema owner for migrations. **Secret.** |
/// | `LEDGERD_READ_DATABASE_URL` | — | a streaming replica for auditors' reads (history, as-of, feed and exports, verification); unset: the primary. **Secret.** |
/// | `LEDGERD_READ_WAIT_MS` | `2000` | most a read with `min_position` waits for the replica to replay it before 503 `replica_behind` |
/// | `LEDGERD_HOST` | `0.0.0.0` with TLS, else `127.0.0.1` | address the HTTP server binds |
/// | `LEDGERD_TLS_CERTIFICATE` | — | PEM certificate chain for HTTPS (with `LEDGERD_TLS_KEY`); reloaded on SIGHUP |
/// | `LEDGERD_TLS_KEY` | — | PEM private key of that certificate. **Secret file.** |
/// | `LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS` | `30` | a connection idle (or stuck in its request head) this long is closed |
/// | `LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS` | `10` | a request head not complete this long after its first byte closes the connection, however slowly it trickles in |
/// | `LEDGERD_HTTP_BODY_TIMEOUT_SECONDS` | `20` | a request body must be complete this long after its head, plus a second per `LEDGERD_HTTP_BODY_MIN_RATE` bytes received |
/// | `LEDGERD_HTTP_BODY_MIN_RATE` | `500` | bytes per second a body must keep up to earn more time than the body timeout |
/// | `LEDGERD_HTTP_MAX_CONNECTIONS` | `1024` | HTTP connections open at once; more are closed at once |
/// | `LEDGERD_HTTP_MAX_CONNECTIONS_PER_CLIENT` | `128` | HTTP connections open at once from one address (an IPv6 client: from its /64); more are closed at once |
/// | `LEDGERD_HTTP_WRITE_TIMEOUT_SECONDS` | `30` | a connection whose reply has not advanced (no byte taken by the client) this long is closed |
/// | `LEDGERD_EXPENSIVE_REQUEST_LIMIT` | `4` | authenticated chain verifications, report uploads, journal pages, exports and as-of reads running at once (an export until its last byte); more are 429 |
/// | `LEDGERD_EXPORTS_PER_KEY` | `2` | streamed exports (`/settlements/{id}/report.csv`, the console's journal and events files) one key may have running at once; one more is 429 |
/// | `LEDGERD_REPORT_MAX_BYTES` | `268435456` | the largest settlement report upload (streamed to a 0600 spool file as it arrives; larger is 413 at once) |
/// | `LEDGERD_BANK_FUNDING_WINDOW_DAYS` | `2` | business days after a payout's value date its deposit may still arrive; after them nothing received is `payout_not_received` |
/// | `LEDGERD_BANK_MATCHING_INTERVAL_SECONDS` | `3600` | how often the payout matching runs without an import (a payout past its window with nothing received becomes `payout_not_received`) |
/// | `LEDGERD_PORT` | `12345` | HTTP port (the storefront app's) |
/// | `LEDGERD_DATA_DIR` | `./.ledgerd` | embedded cluster and daemon state |
/// | `LEDGERD_PG_BINDIR` | found | PostgreSQL server binaries for the embedded cluster |
/// | `LEDGERD_PG_USER` | `postgres` | OS user that runs the embedded cluster when started as root |
/// | `LEDGERD_MIGRATIONS_DIR` | found | directory of `NNNN_*.sql` migrations |
/// | `LEDGERD_DB_POOL_SIZE` | `20` | most connections to PostgreSQL |
/// | `LEDGERD_WRITER_MAX_BATCH` | `2000` | most events committed in one transaction |
/// | `LEDGERD_STATE_CACHE_ENTRIES` | `50000` | order and hold states kept folded in memory; past it the least recently used goes, one per new one |
/// | `LEDGERD_VERSION_CACHE_ENTRIES` | `100000` | streams whose committed version the writer remembers; evicted likewise |
/// | `LEDGERD_ACQUIRER_REFERENCE_ENTRIES` | `50000` | payments whose acquirer (psp) reference the daemon remembers; evicted likewise (a forgotten one costs a status inquiry) |
/// | `LEDGERD_DB_CONNECT_TIMEOUT_SECONDS` | `2` | most seconds to open a connection to PostgreSQL |
/// | `LEDGERD_DB_STATEMENT_TIMEOUT_SECONDS` | `30` | most seconds one statement of the daemon may run (`statement_timeout`) |
/// | `LEDGERD_API_KEYRING` | `<data dir>/api-keyring.json` (embedded) | keyring file of API key verifiers (salted hashes with ids; `ledgerd keys`), reread when it changes |
/// | `LEDGERD_OPERATOR_KEYS` | — | comma-separated operator API keys, in force beside the keyring's. **Secret.** |
/// | `LEDGERD_AUDITOR_KEYS` | — | comma-separated auditor (read-only) API keys, likewise. **Secret.** |
/// | `LEDGERD_API_KEY` | — | the key the command line (`ledgerd orders`, `settle`, `tail`, …) sends. **Secret.** |
/// | `LEDGERD_SEED_DEMO_CATALOG` | `true` | list the demo catalog (and write its pictures) on the first start of an empty ledger |
/// | `LEDGERD_ACQUIRER_SEED` | `1` | seed of the acquirer model (every id it issues derives from it) |
/// | `LEDGERD_ACQUIRER_CREDIT_LIMIT` | `10000.00` | open-to-buy of each test card in the acquirer model (USD) |
/// | `LEDGERD_TAX_RATE` | `0.08` | sales tax on the goods (not shipping), a decimal fraction |
/// | `LEDGERD_TAX_ROUNDING` | `half_up` | half_up, half_even, down or up: tax is rounded once per order to the minor unit |
/// | `LEDGERD_RECOVERY_INTERVAL_SECONDS` | `30` | how often orders left pending are resolved with the acquirer |
/// | `LEDGERD_ACQUIRER_URL` | — | `http://host:port` of the acquirer service (`ledgerd acquirer serve`); unset = `serve` runs it as a supervised child on the embedded cluster |
/// | `LEDGERD_ACQUIRER_API_KEY_FILE` | — | file holding the acquirer service's API key (with `LEDGERD_ACQUIRER_URL`; must not be readable by others). **Secret file.** Unset with a child: generated |
/// | `LEDGERD_ACQUIRER_TIMEOUT_MS` | `10000` | read timeout of one acquirer call attempt (connect: 1000) |
/// | `LEDGERD_ACQUIRER_ATTEMPTS` | `3` | attempts per acquirer call, all with the same idempotency key |
/// | `LEDGERD_ACQUIRER_WIRE_FAULTS` | — | crash tests only: JSON `WireFaults` passed to the child acquirer service |
/// | `LEDGERD_CAPTURE_POLICY` | `on_shipment` | `on_shipment`: capture what is open when the order ships; `automatic`: capture at authorization |
/// | `LEDGERD_EXPIRY_INTERVAL_SECONDS` | `30` | how often the sweeper expires holds past their expiry |
/// | `LEDGERD_EXPIRY_PAGE_HOLDS` | `25` | holds the sweeper expires per append (each page holds the writer for its commit) |
/// | `LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS` | `60` | how often the daemon reads the acquirer's dispute notifications and records them; 0 = never |
/// | `LEDGERD_ACQUIRER_DISPUTE_RATE` | `0` | per mille of settled Visa/Mastercard captures on which the acquirer model raises a chargeback (seeded) |
/// | `LEDGERD_SNAPSHOT_EVERY_EVENTS` | `10000` | the fewest events between inventory snapshots (while they are small, an as-of inventory or product read folds at most this many events past the last one, plus the snapshotter's lag) |
/// | `LEDGERD_SNAPSHOT_BYTES_PER_EVENT` | `64` | the next inventory snapshot comes no sooner than the last one's bytes ÷ this many events later (0: every `LEDGERD_SNAPSHOT_EVERY_EVENTS`) |
/// | `LEDGERD_SNAPSHOT_INTERVAL_SECONDS` | `5` | how often the daemon writes the inventory snapshots the log has grown past |
/// | `LEDGERD_MEMORY_TRIM_SECONDS` | `60` | how often the daemon returns its allocator's free pages to the system (0: never) |
/// | `LEDGERD_HOLD_LIFETIMES` | network rules | acquirer model hold lifetime per network in seconds, e.g. `visa=604800,mastercard=2592000` (others keep the standard rules) |
/// | `LEDGERD_PRODUCT_IMAGES_DIR` | `<data dir>/product_images` | directory `GET /product_image/<file>` serves |
/// | `LEDGERD_LOG_LEVEL` | `info` | trace, debug, info, notice, warning, error, critical |
/// | `LEDGERD_APPLEPAY_PRIVATE_KEYS` | — | Apple Pay payment processing key PEM files, comma-separated (rotation); unset = Apple Pay tokens refused. **Secret files.** |
/// | `LEDGERD_APPLEPAY_CERTIFICATES` | — | the matching payment processing certificate PEM files (merchant identifier hash) |
/// | `LEDGERD_APPLEPAY_MERCHANT_ID` | — | merchant identifier, for keys without a certificate |
/// | `LEDGERD_APPLEPAY_ROOT` | bundled Apple Root CA - G3 | PEM file of the trusted root(s) of token signatures |
/// | `LEDGERD_APPLEPAY_MAX_SIGNATURE_AGE_SECONDS` | `300` | most seconds between a token's signing time and now |
/// | `LEDGERD_SETTLEMENT_TIME_ZONE` | `UTC` | the merchant's IANA time zone, in which the business day closes |
/// | `LEDGERD_SETTLEMENT_CUT_OFF` | `22:00` | local cut-off `HH:MM`; captures recorded before it settle with that business day |
/// | `LEDGERD_SETTLEMENT_HOLIDAYS` | — | comma-separated `YYYY-MM-DD` bank holidays (weekends: Saturday, Sunday) |
/// | `LEDGERD_SETTLEMENT_FUNDING_LAG_DAYS` | `1` | payout value date = business date + this many business days |
/// | `LEDGERD_SETTLEMENT_PAGE_SIZE` | `10000` | items per page sent to the acquirer in a settlement batch |
/// | `LEDGERD_SETTLEMENT_REPORT_PART_LINES` | `10000` | report lines per page read back, and per stored report part |
/// | `LEDGERD_SETTLEMENT_AUTO` | `false` | `serve` settles each business day itself once its cut-off has passed |
/// | `LEDGERD_FEED_POLL_MS` | `1000` | how often the live feed, subscriptions' long polls and webhooks poll the head when no NOTIFY arrives |
/// | `LEDGERD_FEED_WAKE_MS` | `50` | the live feed, subscriptions' long polls and webhooks are woken at most once per this many ms, with every commit since (0: at every commit) |
/// | `LEDGERD_FEED_STREAMS_PER_KEY` | `8` | `/events/stream` replies one API key may have open at once (catch-ups included); one more is 429 |
/// | `LEDGERD_WEBHOOK_ALLOWED_ADDRESSES` | — | internal addresses or CIDR blocks webhooks may be delivered to (`127.0.0.1`, `10.1.0.0/16`); every other loopback, private, link-local, unique-local or unspecified address is refused at registration and at connection time |
/// | `LEDGERD_WEBHOOK_SECRETS_KEY` | generated (embedded) | base64 of 32 bytes: seals webhook secrets in the database (AES-GCM); unset with a database URL: webhooks cannot be registered. **Secret.** |
/// | `LEDGERD_WEBHOOK_RETRY_BASE_MS` | `1000` | the first retry's delay (before jitter); each failure doubles it |
/// | `LEDGERD_WEBHOOK_RETRY_MAX_SECONDS` | `3600` | the longest delay between two attempts |
/// | `LEDGERD_WEBHOOK_GIVE_UP_SECONDS` | `86400` | an endpoint whose event has failed this long is paused |
/// | `LEDGERD_WEBHOOK_RETRY_SEED` | `1` | seed of the retries' jitter |
/// | `LEDGERD_WEBHOOK_CONCURRENCY` | `4` | endpoints this daemon delivers to at once |
/// | `LEDGERD_WEBHOOK_TIMEOUT_SECONDS` | `10` | a delivery's request timeout |
///
/// The Apple Pay files are read when the configuration loads; see ``ApplePaySettings``.
/// | `LEDGERD_CHECKPOINT_KEY` | — | path of the Ed25519 private key that signs checkpoints (PEM PKCS #8 or 32 raw/hex/base64 bytes); unset: no checkpoints. The file is secret. |
/// | `LEDGERD_CHECKPOINT_TIME` | `23:59` | daily checkpoint (business-day close), HH:MM |
/// | `LEDGERD_CHECKPOINT_TIME_ZONE` | `UTC` | time zone of `LEDGERD_CHECKPOINT_TIME`, e.g. `America/New_York` |
/// | `LEDGERD_LOG_ORIGIN` | `ledgerd.local/log` | the transparency log's origin: first line of its C2SP checkpoints and its key name |
/// | `LEDGERD_LOG_PUBLIC` | `false` | serve `/log/` (checkpoint, tiles, proofs) without an API key; by default an auditor or operator key |
/// | `LEDGERD_LOG_INTERVAL_MS` | `250` | how often the Merkle tree is extended to the head and a checkpoint signed when it grew |
/// | `LEDGERD_LOG_TREE` | `true` | keep the Merkle tree and serve `/log/`; `false` turns both off (the tree is built from scratch when turned on) |
/// | `LEDGERD_LOG_WITNESSES` | — | comma-separated `<add-checkpoint URL prefix> <witness verifier key>` pairs; each new checkpoint is submitted to each witness and served with their cosignatures |
///
/// For rehearsals and crash tests only (the daemon logs a warning when either is set):
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `LEDGERD_CLOCK_START` | — | RFC 3339 instant the daemon's clock starts at; it then runs at wall-clock speed (rehearse a business day) |
/// | `LEDGERD_FAULT_STUCK_STOP` | `false` | a stop test's fault: a service that never ends, so that SIGTERM is ended by the stop watchdog (status 1, 40 s after the signal) |
/// | `LEDGERD_FAULT_CRASH_AT` | — | a fault point where the daemon kills itself with SIGKILL: `settlement.opened`, `settlement.closed`, `settlement.accepted` (the acquirer answered, nothing recorded yet), `settlement.storing_report` (inside the report's transaction, part of it written), `settlement.submitted`, `settlement.cleared`, `settlement.payout_scheduled`, `settlement.reconciling`, `settlement.paid`; `hold.capture.applied`, `hold.increment.applied`, `hold.void.applied`, `hold.refund.applied` (the acquirer applied the hold operation and answered, nothing recorded yet); `webhook.delivered` (a delivery answered 200, its cursor not committed) |
public struct LedgerConfiguration: Sendable {
    public var databaseURL: String?
    public var migrationDatabaseURL: String?
    /// A streaming replica for auditors' reads; nil: they read the primary.
    public var readDatabaseURL: String?
    /// Most time a read waits for the replica to replay the position it asks for.
    public var readWait: Duration
    public var host: String
    /// PEM certificate chain and key for HTTPS; nil: plain HTTP (then bound to 127.0.0.1 unless told otherwise).
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// An idle HTTP connection (or one stuck in its request head) is closed after this long.
    public var httpIdleTimeout: Duration
    /// A request head must be complete this long after its first byte arrived, or the connection is closed.
    public var httpHeaderTimeout: Duration
    /// A request body must end this long after its head, extended by a second per `httpBodyMinimumRate` bytes received.
    public var httpBodyTimeout: Duration
    /// Bytes per second of a body that earn it time beyond `httpBodyTimeout`.
    public var httpBodyMinimumRate: Int
    /// Most HTTP connections open at once; beyond it a new connection is closed at once.
    public var httpMaxConnections: Int
    /// Most HTTP connections open at once from one client address; beyond it a new one from there is closed at once.
    public var httpMaxConnectionsPerClient: Int
    /// A reply that has not advanced (no byte taken by the client) this long closes its connection.
    public var httpWriteTimeout: Duration
    /// Most expensive requests (verify, report upload, journal, export, as-of) at once; more are refused with 429.
    public var expensiveRequestLimit: Int
    /// `LEDGERD_EXPORTS_PER_KEY`: most streamed exports one key may have running at once.
    public var exportsPerKey: Int
    /// `LEDGERD_REPORT_MAX_BYTES`: the largest settlement report upload.
    public var reportMaxBytes: Int
    /// `LEDGERD_INBOX_DIR` and its poll and settle times: the watched inbox of reports and statements (nil: none).
    public var inbox: ReportInbox.Settings?
    /// `LEDGERD_BANK_FUNDING_WINDOW_DAYS`: business days a payout's deposit may arrive after its value date.
    public var bankFundingWindowDays: Int
    /// `LEDGERD_BANK_MATCHING_INTERVAL_SECONDS`: how often the payout matching runs without an import.
    public var bankMatchingInterval: Duration
    public var port: Int
    public var dataDirectory: String
    public var postgresBinDirectory: String?
    public var postgresUser: String
    public var migrationsDirectory: String?
    public var databasePoolSize: Int
    public var writerMaximumBatchEvents: Int
    /// Bounded in-memory structures (issue 57): each evicts piece by piece past its limit.
    public var stateCacheEntries: Int
    public var versionCacheEntries: Int
    public var acquirerReferenceEntries: Int
    /// Most time to open a connection to PostgreSQL.
    public var databaseConnectTimeout: Duration
    /// Most time one statement of the daemon's pool may run (PostgreSQL's `statement_timeout`).
    public var databaseStatementTimeout: Duration
    /// Most time the daemon waits for a statement's answer, or a transaction's commit, on its side: the server's
    /// bound and 2 s for the round trip (``DatabaseClient/statementDeadline``, the writer's transaction deadline).
    public var databaseDeadline: Duration { databaseStatementTimeout + .seconds(2) }
    public var logLevel: Logger.Level
    public var productImagesDirectory: String?
    public var operatorKeys: [String]
    public var seedDemoCatalog: Bool
    public var acquirerSeed: UInt64
    public var acquirerCreditLimit: Money
    public var taxPolicy: TaxPolicy
    public var recoveryInterval: Duration
    public var auditorKeys: [String]
    /// `LEDGERD_API_KEYRING`: the keyring file of key verifiers (``APIKeys``).
    public var apiKeyringPath: String?
    /// `LEDGERD_API_KEY`: the key the command line sends to a running daemon.
    public var clientAPIKey: String?
    public var capturePolicy: CapturePolicy
    /// The acquirer service; nil: run it as a supervised child.
    public var acquirerURL: String?
    /// The file with the acquirer service's API key (external service).
    public var acquirerAPIKeyFile: String?
    public var acquirerTimeout: Duration
    public var acquirerAttempts: Int
    /// Seeded wire faults for the child acquirer (JSON `WireFaults`); nil: none.
    public var acquirerWireFaults: String?
    public var expiryInterval: Duration
    /// Holds per expiry append (``HoldService/expireDue(now:batchSize:)``).
    public var expiryPageHolds: Int
    /// How often the dispute poller reads the acquirer's notifications; nil: it does not run.
    public var disputePollInterval: Duration?
    /// Chargebacks per mille of settled Visa/Mastercard captures in the acquirer model.
    public var acquirerDisputeRatePerMille: Int
    /// The fewest events between inventory snapshots (sql/0013).
    public var snapshotEveryEvents: Int64
    /// Inventory snapshot bytes written per event at most (``InventorySnapshots/spacing(afterSnapshotOf:)``); 0: every `snapshotEveryEvents`.
    public var snapshotBytesPerEvent: Int64
    /// How often the snapshotter looks for snapshots to write.
    public var snapshotInterval: Duration
    /// How often the daemon returns its allocator's free pages to the system (``MemoryTrimmer``); nil: never.
    public var memoryTrimInterval: Duration?
    /// Hold lifetime (seconds) per network, overriding the acquirer model's standard rules.
    public var holdLifetimes: [CardNetwork: Int64]
    /// Apple Pay tokens processed by the ledger itself; nil when no processing key is configured.
    public var applePay: ApplePaySettings?
    /// End-of-day settlement: cut-off, calendar, funding lag (see ``SettlementSettings``).
    public var settlement: SettlementSettings
    /// Path of the checkpoint signing key; nil: checkpoints are off.
    public var checkpointKeyPath: String?
    /// When the daily checkpoint is signed, in ``checkpointTimeZone``.
    public var checkpointTime: (hour: Int, minute: Int)
    public var checkpointTimeZone: TimeZone
    /// The transparency log's origin line and key name.
    public var logOrigin: String
    /// Whether `/log/` is served without an API key.
    public var logPublic: Bool
    /// How often the tree is extended and a checkpoint signed.
    public var logInterval: Duration
    /// Whether the Merkle tree is kept at all.
    public var logTree: Bool
    /// Witnesses to submit checkpoints to: their URL prefix and verifier key.
    public var logWitnesses: [(url: String, key: String)]
    /// The instant the daemon's clock starts at (rehearsals and tests); nil: the wall clock.
    public var clockStart: Date?
    /// A fault point where the daemon kills itself (crash tests); nil: none.
    public var faultCrashAt: FaultPoint?
    /// A stop test's fault (`LEDGERD_FAULT_STUCK_STOP`): a service that ignores both the graceful stop and the
    /// cancellation after it, so that only the stop watchdog (``Daemon/stopWatchdog(logger:cleanUp:)``) ends the daemon.
    public var faultStuckStop: Bool
    /// How often the feeds poll the head without a notification.
    public var feedPollInterval: Duration
    /// The feeds' followers are woken at most once per this interval (`HeadWatcher`'s notes).
    public var feedWakeInterval: Duration
    /// Seals webhook secrets (32 bytes); nil: the embedded daemon's generated key, or none.
    public var webhookSecretsKey: [UInt8]?
    /// The webhook dispatcher's retries, concurrency and timeout.
    public var webhooks: WebhookDispatcher.Settings
    /// Most `/events/stream` replies one API key has open at once; one more is 429 `busy`.
    public var feedStreamsPerKey: Int
    /// Where webhooks may be delivered: public addresses, and the internal ones `LEDGERD_WEBHOOK_ALLOWED_ADDRESSES` names.
    public var webhookDestinations: WebhookDestinations

    /// Reads the configuration from a reader (see the table above for keys and defaults).
    public init(reader: ConfigReader) throws {
        databaseURL = reader.string(forKey: "ledgerd.database.url", isSecret: true)
        migrationDatabaseURL = reader.string(forKey: "ledgerd.migration.database.url", isSecret: true)
        readDatabaseURL = reader.string(forKey: "ledgerd.read.database.url", isSecret: true).flatMap { $0.isEmpty ? nil : $0 }
        let readWaitMilliseconds = try reader.integer(forKey: "ledgerd.read.wait.ms", default: 2_000)
        guard (0...60_000).contains(readWaitMilliseconds) else { throw ConfigurationError("LEDGERD_READ_WAIT_MS must be 0…60000") }
        readWait = .milliseconds(readWaitMilliseconds)
        tlsCertificatePath = reader.string(forKey: "ledgerd.tls.certificate").flatMap { $0.isEmpty ? nil : $0 }
        tlsKeyPath = reader.string(forKey: "ledgerd.tls.key").flatMap { $0.isEmpty ? nil : $0 }
        guard (tlsCertificatePath == nil) == (tlsKeyPath == nil) else {
            throw ConfigurationError("LEDGERD_TLS_CERTIFICATE and LEDGERD_TLS_KEY go together: set both or neither")
        }
        // Plain HTTP carries bearer keys and shipping contacts in clear: only on the loopback unless asked.
        host = reader.string(forKey: "ledgerd.host", default: tlsCertificatePath == nil ? "127.0.0.1" : "0.0.0.0")
        let idleSeconds = try reader.integer(forKey: "ledgerd.http.idle.timeout.seconds", default: 30)
        guard idleSeconds >= 1 else { throw ConfigurationError("LEDGERD_HTTP_IDLE_TIMEOUT_SECONDS must be at least 1") }
        httpIdleTimeout = .seconds(idleSeconds)
        let headerSeconds = try reader.integer(forKey: "ledgerd.http.header.timeout.seconds", default: 10)
        guard headerSeconds >= 1 else { throw ConfigurationError("LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS must be at least 1") }
        httpHeaderTimeout = .seconds(headerSeconds)
        httpMaxConnections = try reader.integer(forKey: "ledgerd.http.max.connections", default: 1024)
        guard httpMaxConnections >= 1 else { throw ConfigurationError("LEDGERD_HTTP_MAX_CONNECTIONS must be at least 1") }
        httpMaxConnectionsPerClient = try reader.integer(forKey: "ledgerd.http.max.connections.per.client", default: 128)
        guard httpMaxConnectionsPerClient >= 1 else { throw ConfigurationError("LEDGERD_HTTP_MAX_CONNECTIONS_PER_CLIENT must be at least 1") }
        let bodySeconds = try reader.integer(forKey: "ledgerd.http.body.timeout.seconds", default: 20)
        guard bodySeconds >= 1 else { throw ConfigurationError("LEDGERD_HTTP_BODY_TIMEOUT_SECONDS must be at least 1") }
        httpBodyTimeout = .seconds(bodySeconds)
        httpBodyMinimumRate = try reader.integer(forKey: "ledgerd.http.body.min.rate", default: 500)
        guard httpBodyMinimumRate >= 1 else { throw ConfigurationError("LEDGERD_HTTP_BODY_MIN_RATE must be at least 1") }
        let writeSeconds = try reader.integer(forKey: "ledgerd.http.write.timeout.seconds", default: 30)
        guard writeSeconds >= 1 else { throw ConfigurationError("LEDGERD_HTTP_WRITE_TIMEOUT_SECONDS must be at least 1") }
        httpWriteTimeout = .seconds(writeSeconds)
        expensiveRequestLimit = try reader.integer(forKey: "ledgerd.expensive.request.limit", default: 4)
        exportsPerKey = try reader.integer(forKey: "ledgerd.exports.per.key", default: 2)
        guard exportsPerKey >= 1 else { throw ConfigurationError("LEDGERD_EXPORTS_PER_KEY must be at least 1") }
        reportMaxBytes = try reader.integer(forKey: "ledgerd.report.max.bytes", default: 256 * 1024 * 1024)
        guard reportMaxBytes >= 1024 else { throw ConfigurationError("LEDGERD_REPORT_MAX_BYTES must be at least 1024") }
        let inboxPollMilliseconds = try reader.integer(forKey: "ledgerd.inbox.poll.ms", default: 5_000)
        guard inboxPollMilliseconds >= 10 else { throw ConfigurationError("LEDGERD_INBOX_POLL_MS must be at least 10") }
        let inboxSettleMilliseconds = try reader.integer(forKey: "ledgerd.inbox.settle.ms", default: 5_000)
        guard inboxSettleMilliseconds >= 0 else { throw ConfigurationError("LEDGERD_INBOX_SETTLE_MS must be 0 or more") }
        let dataDirectoryForClaim = reader.string(forKey: "ledgerd.data.dir", default: "./.ledgerd")
        if let path = reader.string(forKey: "ledgerd.inbox.dir"), !path.isEmpty {
            let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            inbox = ReportInbox.Settings(
                directory: URL(fileURLWithPath: path, relativeTo: cwd).standardizedFileURL,
                pollInterval: .milliseconds(inboxPollMilliseconds),
                settle: .milliseconds(inboxSettleMilliseconds),
                maximumBytes: reportMaxBytes,
                claim: ReportInbox.claim(dataDirectory: URL(fileURLWithPath: dataDirectoryForClaim, relativeTo: cwd))
            )
        } else {
            inbox = nil
        }
        bankFundingWindowDays = try reader.integer(forKey: "ledgerd.bank.funding.window.days", default: 2)
        guard (0...30).contains(bankFundingWindowDays) else { throw ConfigurationError("LEDGERD_BANK_FUNDING_WINDOW_DAYS must be 0…30") }
        let bankMatchingSeconds = try reader.integer(forKey: "ledgerd.bank.matching.interval.seconds", default: 3600)
        guard bankMatchingSeconds >= 1 else { throw ConfigurationError("LEDGERD_BANK_MATCHING_INTERVAL_SECONDS must be at least 1") }
        bankMatchingInterval = .seconds(bankMatchingSeconds)
        guard expensiveRequestLimit >= 1 else { throw ConfigurationError("LEDGERD_EXPENSIVE_REQUEST_LIMIT must be at least 1") }
        port = try reader.integer(forKey: "ledgerd.port", default: 12345)
        dataDirectory = reader.string(forKey: "ledgerd.data.dir", default: "./.ledgerd")
        postgresBinDirectory = reader.string(forKey: "ledgerd.pg.bindir")
        postgresUser = reader.string(forKey: "ledgerd.pg.user", default: "postgres")
        migrationsDirectory = reader.string(forKey: "ledgerd.migrations.dir")
        databasePoolSize = try reader.integer(forKey: "ledgerd.db.pool.size", default: 20)
        writerMaximumBatchEvents = try reader.integer(forKey: "ledgerd.writer.max.batch", default: 2_000)
        stateCacheEntries = try reader.integer(forKey: "ledgerd.state.cache.entries", default: 50_000)
        versionCacheEntries = try reader.integer(forKey: "ledgerd.version.cache.entries", default: 100_000)
        acquirerReferenceEntries = try reader.integer(forKey: "ledgerd.acquirer.reference.entries", default: 50_000)
        let connectSeconds = try reader.integer(forKey: "ledgerd.db.connect.timeout.seconds", default: 2)
        guard connectSeconds >= 1 else { throw ConfigurationError("LEDGERD_DB_CONNECT_TIMEOUT_SECONDS must be at least 1") }
        databaseConnectTimeout = .seconds(connectSeconds)
        let statementSeconds = try reader.integer(forKey: "ledgerd.db.statement.timeout.seconds", default: 30)
        guard statementSeconds >= 1 else { throw ConfigurationError("LEDGERD_DB_STATEMENT_TIMEOUT_SECONDS must be at least 1") }
        databaseStatementTimeout = .seconds(statementSeconds)
        productImagesDirectory = reader.string(forKey: "ledgerd.product.images.dir")
        seedDemoCatalog = try reader.boolean(forKey: "ledgerd.seed.demo.catalog", default: true)
        guard let seed = UInt64(reader.string(forKey: "ledgerd.acquirer.seed", default: "1")) else {
            throw ConfigurationError("LEDGERD_ACQUIRER_SEED must be an unsigned integer")
        }
        acquirerSeed = seed
        let limitText = reader.string(forKey: "ledgerd.acquirer.credit.limit", default: "10000.00")
        guard let limit = try? Money(decimal: limitText, currency: .usd), !limit.isNegative else {
            throw ConfigurationError("LEDGERD_ACQUIRER_CREDIT_LIMIT must be a decimal amount such as 10000.00")
        }
        acquirerCreditLimit = limit
        let rateText = reader.string(forKey: "ledgerd.tax.rate", default: "0.08")
        guard let rate = try? Rate(decimal: rateText) else {
            throw ConfigurationError("LEDGERD_TAX_RATE must be a decimal fraction such as 0.08, got \(rateText)")
        }
        let roundingText = reader.string(forKey: "ledgerd.tax.rounding", default: "half_up")
        guard let rounding = RoundingRule(rawValue: roundingText) else {
            throw ConfigurationError("LEDGERD_TAX_ROUNDING must be one of \(RoundingRule.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        taxPolicy = TaxPolicy(rate: rate, rounding: rounding)
        let recoverySeconds = try reader.integer(forKey: "ledgerd.recovery.interval.seconds", default: 30)
        guard recoverySeconds >= 1 else { throw ConfigurationError("LEDGERD_RECOVERY_INTERVAL_SECONDS must be at least 1") }
        recoveryInterval = .seconds(recoverySeconds)
        let policyText = reader.string(forKey: "ledgerd.capture.policy", default: CapturePolicy.onShipment.rawValue)
        guard let policy = CapturePolicy(rawValue: policyText) else {
            throw ConfigurationError("LEDGERD_CAPTURE_POLICY must be one of \(CapturePolicy.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        capturePolicy = policy
        acquirerURL = reader.string(forKey: "ledgerd.acquirer.url").flatMap { $0.isEmpty ? nil : $0 }
        if let url = acquirerURL, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ConfigurationError("LEDGERD_ACQUIRER_URL must be an http:// or https:// URL, got \(url)")
        }
        acquirerAPIKeyFile = reader.string(forKey: "ledgerd.acquirer.api.key.file").flatMap { $0.isEmpty ? nil : $0 }
        if acquirerURL != nil && acquirerAPIKeyFile == nil {
            throw ConfigurationError("LEDGERD_ACQUIRER_URL needs LEDGERD_ACQUIRER_API_KEY_FILE (the service's API key)")
        }
        let timeoutMilliseconds = try reader.integer(forKey: "ledgerd.acquirer.timeout.ms", default: 10_000)
        guard timeoutMilliseconds >= 10 else { throw ConfigurationError("LEDGERD_ACQUIRER_TIMEOUT_MS must be at least 10") }
        acquirerTimeout = .milliseconds(timeoutMilliseconds)
        acquirerAttempts = try reader.integer(forKey: "ledgerd.acquirer.attempts", default: 3)
        guard (1...10).contains(acquirerAttempts) else { throw ConfigurationError("LEDGERD_ACQUIRER_ATTEMPTS must be 1…10") }
        acquirerWireFaults = reader.string(forKey: "ledgerd.acquirer.wire.faults").flatMap { $0.isEmpty ? nil : $0 }
        let expirySeconds = try reader.integer(forKey: "ledgerd.expiry.interval.seconds", default: 30)
        guard expirySeconds >= 1 else { throw ConfigurationError("LEDGERD_EXPIRY_INTERVAL_SECONDS must be at least 1") }
        expiryInterval = .seconds(expirySeconds)
        expiryPageHolds = try reader.integer(forKey: "ledgerd.expiry.page.holds", default: 25)
        guard (1...10_000).contains(expiryPageHolds) else { throw ConfigurationError("LEDGERD_EXPIRY_PAGE_HOLDS must be 1…10000") }
        let disputePollSeconds = try reader.integer(forKey: "ledgerd.dispute.poll.interval.seconds", default: 60)
        guard disputePollSeconds >= 0 else { throw ConfigurationError("LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS must be 0 (off) or more") }
        disputePollInterval = disputePollSeconds == 0 ? nil : .seconds(disputePollSeconds)
        acquirerDisputeRatePerMille = try reader.integer(forKey: "ledgerd.acquirer.dispute.rate", default: 0)
        guard (0...1_000).contains(acquirerDisputeRatePerMille) else {
            throw ConfigurationError("LEDGERD_ACQUIRER_DISPUTE_RATE must be 0…1000 (per mille)")
        }
        snapshotEveryEvents = Int64(try reader.integer(forKey: "ledgerd.snapshot.every.events", default: 10_000))
        guard snapshotEveryEvents >= 1 else { throw ConfigurationError("LEDGERD_SNAPSHOT_EVERY_EVENTS must be at least 1") }
        snapshotBytesPerEvent = Int64(
            try reader.integer(forKey: "ledgerd.snapshot.bytes.per.event", default: Int(InventorySnapshots.defaultBytesPerEvent))
        )
        guard snapshotBytesPerEvent >= 0 else {
            throw ConfigurationError("LEDGERD_SNAPSHOT_BYTES_PER_EVENT must be 0 (a fixed stride) or more")
        }
        let snapshotSeconds = try reader.integer(forKey: "ledgerd.snapshot.interval.seconds", default: 5)
        guard snapshotSeconds >= 1 else { throw ConfigurationError("LEDGERD_SNAPSHOT_INTERVAL_SECONDS must be at least 1") }
        snapshotInterval = .seconds(snapshotSeconds)
        let trimSeconds = try reader.integer(forKey: "ledgerd.memory.trim.seconds", default: 60)
        guard trimSeconds >= 0 else { throw ConfigurationError("LEDGERD_MEMORY_TRIM_SECONDS must be 0 (never) or more") }
        memoryTrimInterval = trimSeconds == 0 ? nil : .seconds(trimSeconds)
        holdLifetimes = [:]
        for rule in reader.stringArray(forKey: "ledgerd.hold.lifetimes", default: []) {
            let parts = rule.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let network = CardNetwork(rawValue: parts[0].lowercased()), let seconds = Int64(parts[1]), seconds >= 60 else {
                throw ConfigurationError(
                    "LEDGERD_HOLD_LIFETIMES: \(rule) is not network=seconds (networks \(CardNetwork.allCases.map(\.rawValue).joined(separator: ", ")), at least 60 s)"
                )
            }
            holdLifetimes[network] = seconds
        }
        operatorKeys = reader.stringArray(forKey: "ledgerd.operator.keys", isSecret: true, default: [])
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        auditorKeys = reader.stringArray(forKey: "ledgerd.auditor.keys", isSecret: true, default: [])
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        apiKeyringPath = reader.string(forKey: "ledgerd.api.keyring").flatMap { $0.isEmpty ? nil : $0 }
        clientAPIKey = reader.string(forKey: "ledgerd.api.key", isSecret: true).flatMap { $0.isEmpty ? nil : $0 }
        checkpointKeyPath = reader.string(forKey: "ledgerd.checkpoint.key")
        if checkpointKeyPath?.isEmpty == true { checkpointKeyPath = nil }
        let timeText = reader.string(forKey: "ledgerd.checkpoint.time", default: "23:59")
        let timeParts = timeText.split(separator: ":").map { Int($0) }
        guard timeParts.count == 2, let hour = timeParts[0], let minute = timeParts[1], (0..<24).contains(hour), (0..<60).contains(minute) else {
            throw ConfigurationError("LEDGERD_CHECKPOINT_TIME must be HH:MM, e.g. 23:59, got \(timeText)")
        }
        checkpointTime = (hour, minute)
        let zoneText = reader.string(forKey: "ledgerd.checkpoint.time.zone", default: "UTC")
        guard let zone = TimeZone(identifier: zoneText) else {
            throw ConfigurationError("LEDGERD_CHECKPOINT_TIME_ZONE: unknown time zone \(zoneText)")
        }
        checkpointTimeZone = zone
        logOrigin = reader.string(forKey: "ledgerd.log.origin", default: "ledgerd.local/log")
        logPublic = try reader.boolean(forKey: "ledgerd.log.public", default: false)
        logTree = try reader.boolean(forKey: "ledgerd.log.tree", default: true)
        let logMillis = try reader.integer(forKey: "ledgerd.log.interval.ms", default: 250)
        guard logMillis >= 10 else { throw ConfigurationError("LEDGERD_LOG_INTERVAL_MS must be at least 10") }
        logInterval = .milliseconds(logMillis)
        logWitnesses = try reader.stringArray(forKey: "ledgerd.log.witnesses", default: []).compactMap { entry in
            let parts = entry.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            if parts.isEmpty { return nil }
            guard parts.count == 2 else { throw ConfigurationError("LEDGERD_LOG_WITNESSES: \(entry) is not \"<URL> <verifier key>\"") }
            return (String(parts[0]), String(parts[1]))
        }
        if let text = reader.string(forKey: "ledgerd.clock.start") {
            guard let micros = RFC3339.micros(text) else {
                throw ConfigurationError("LEDGERD_CLOCK_START must be an RFC 3339 instant such as 2026-06-17T22:00:05Z, got \(text)")
            }
            clockStart = Date(epochMicroseconds: micros)
        } else {
            clockStart = nil
        }
        if let text = reader.string(forKey: "ledgerd.fault.crash.at") {
            guard let point = FaultPoint(rawValue: text) else {
                throw ConfigurationError("LEDGERD_FAULT_CRASH_AT must be one of \(FaultPoint.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            faultCrashAt = point
        } else {
            faultCrashAt = nil
        }
        faultStuckStop = try reader.boolean(forKey: "ledgerd.fault.stuck.stop", default: false)
        let pollMilliseconds = try reader.integer(forKey: "ledgerd.feed.poll.ms", default: 1_000)
        guard pollMilliseconds >= 10 else { throw ConfigurationError("LEDGERD_FEED_POLL_MS must be at least 10") }
        feedPollInterval = .milliseconds(pollMilliseconds)
        let wakeMilliseconds = try reader.integer(forKey: "ledgerd.feed.wake.ms", default: 50)
        guard (0...1_000).contains(wakeMilliseconds) else { throw ConfigurationError("LEDGERD_FEED_WAKE_MS must be from 0 to 1000") }
        feedWakeInterval = .milliseconds(wakeMilliseconds)
        if let text = reader.string(forKey: "ledgerd.webhook.secrets.key", isSecret: true), !text.isEmpty {
            guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
                throw ConfigurationError("LEDGERD_WEBHOOK_SECRETS_KEY must be the base64 of 32 bytes")
            }
            webhookSecretsKey = Array(bytes)
        } else {
            webhookSecretsKey = nil
        }
        let retryBase = try reader.integer(forKey: "ledgerd.webhook.retry.base.ms", default: 1_000)
        let retryMaximum = try reader.integer(forKey: "ledgerd.webhook.retry.max.seconds", default: 3_600)
        let giveUp = try reader.integer(forKey: "ledgerd.webhook.give.up.seconds", default: 86_400)
        guard retryBase >= 1, retryMaximum >= 1, giveUp >= 1 else {
            throw ConfigurationError("LEDGERD_WEBHOOK_RETRY_BASE_MS, _RETRY_MAX_SECONDS and _GIVE_UP_SECONDS must be at least 1")
        }
        guard let retrySeed = UInt64(reader.string(forKey: "ledgerd.webhook.retry.seed", default: "1")) else {
            throw ConfigurationError("LEDGERD_WEBHOOK_RETRY_SEED must be an unsigned integer")
        }
        let concurrency = try reader.integer(forKey: "ledgerd.webhook.concurrency", default: 4)
        let timeout = try reader.integer(forKey: "ledgerd.webhook.timeout.seconds", default: 10)
        guard (1...64).contains(concurrency), (1...300).contains(timeout) else {
            throw ConfigurationError("LEDGERD_WEBHOOK_CONCURRENCY must be 1…64 and LEDGERD_WEBHOOK_TIMEOUT_SECONDS 1…300")
        }
        webhooks = WebhookDispatcher.Settings(
            policy: WebhookRetryPolicy(
                baseDelayMicros: Int64(retryBase) * 1_000,
                maximumDelayMicros: Int64(retryMaximum) * 1_000_000,
                giveUpAfterMicros: Int64(giveUp) * 1_000_000,
                seed: retrySeed
            ),
            concurrency: concurrency,
            requestTimeout: .seconds(timeout),
            pollInterval: .milliseconds(pollMilliseconds)
        )
        feedStreamsPerKey = try reader.integer(forKey: "ledgerd.feed.streams.per.key", default: 8)
        guard feedStreamsPerKey >= 1 else { throw ConfigurationError("LEDGERD_FEED_STREAMS_PER_KEY must be at least 1") }
        let allowList = reader.string(forKey: "ledgerd.webhook.allowed.addresses", default: "")
        guard let destinations = WebhookDestinations(allowList: allowList) else {
            throw ConfigurationError("LEDGERD_WEBHOOK_ALLOWED_ADDRESSES must be comma-separated IP addresses or CIDR blocks")
        }
        webhookDestinations = destinations
        let level = reader.string(forKey: "ledgerd.log.level", default: "info")
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw ConfigurationError("LEDGERD_LOG_LEVEL: unknown level \(level)")
        }
        logLevel = parsed
        guard (1...65_535).contains(port) else { throw ConfigurationError("LEDGERD_PORT must be 1…65535, got \(port)") }
        guard databasePoolSize >= 2 else { throw ConfigurationError("LEDGERD_DB_POOL_SIZE must be at least 2") }
        guard writerMaximumBatchEvents >= 1 else { throw ConfigurationError("LEDGERD_WRITER_MAX_BATCH must be at least 1") }
        guard stateCacheEntries >= 1 else { throw ConfigurationError("LEDGERD_STATE_CACHE_ENTRIES must be at least 1") }
        guard versionCacheEntries >= 1 else { throw ConfigurationError("LEDGERD_VERSION_CACHE_ENTRIES must be at least 1") }
        guard acquirerReferenceEntries >= 1 else { throw ConfigurationError("LEDGERD_ACQUIRER_REFERENCE_ENTRIES must be at least 1") }
        applePay = try ApplePaySettings.read(from: reader)
        settlement = try SettlementSettings.read(from: reader)
        if databaseURL?.isEmpty == true { databaseURL = nil }
        if usesEmbeddedDatabase, let problem = Self.unusableDataDirectory(dataDirectoryURL.path) {
            throw ConfigurationError("LEDGERD_DATA_DIR \(problem)")
        }
        if migrationDatabaseURL?.isEmpty == true { migrationDatabaseURL = nil }
    }

    /// Flags override the environment, which overrides the defaults.
    public static func load(
        flags: [AbsoluteConfigKey: ConfigValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> LedgerConfiguration {
        let reader = ConfigReader(providers: [
            InMemoryProvider(values: flags),
            EnvironmentVariablesProvider(
                environmentVariables: environment,
                secretsSpecifier: .specific([
                    "LEDGERD_DATABASE_URL", "LEDGERD_MIGRATION_DATABASE_URL", "LEDGERD_READ_DATABASE_URL", "LEDGERD_OPERATOR_KEYS",
                    "LEDGERD_AUDITOR_KEYS", "LEDGERD_API_KEY",
                ])
            ),
        ])
        return try LedgerConfiguration(reader: reader)
    }

    /// True when the daemon runs its own PostgreSQL cluster.
    public var usesEmbeddedDatabase: Bool { databaseURL == nil }

    /// Why the embedded cluster could not live at `path`, or nil. `pg_ctl` runs its data directory through `/bin/sh` in
    /// double quotes (a `"`, `` ` ``, `$` or `\\` there breaks out of them: a path with `$(…)` ran as the postgres
    /// user), libpq's host list splits the socket directory at a `,`, a control character is no one's intent, and a
    /// Unix socket's path (`<data>/run/.s.PGSQL.5432`) holds at most 107 bytes. Refused at start, naming the character,
    /// rather than failing later inside PostgreSQL (security review 4, careless operator).
    static func unusableDataDirectory(_ path: String) -> String? {
        if let bad = path.unicodeScalars.first(where: { "\"`$\\,".unicodeScalars.contains($0) || $0.value < 0x20 || $0.value == 0x7F }) {
            let shown = bad.value < 0x20 || bad.value == 0x7F ? String(format: "U+%04X", bad.value) : "'\(Character(bad))'"
            return "\(path) holds \(shown), which the embedded PostgreSQL cannot take in its path: choose another directory"
        }
        let socket = path + "/run/.s.PGSQL.5432"
        guard socket.utf8.count <= 107 else {
            return "\(path) is too long: its cluster's socket \(socket) would be \(socket.utf8.count) bytes, and a Unix socket's path holds 107"
        }
        return nil
    }

    public var dataDirectoryURL: URL {
        URL(fileURLWithPath: dataDirectory, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL
    }

    /// Where signed checkpoint files are written.
    public var checkpointsDirectoryURL: URL { dataDirectoryURL.appendingPathComponent("checkpoints") }

    /// Where product pictures are served from.
    public var productImagesDirectoryURL: URL {
        productImagesDirectory.map { URL(fileURLWithPath: $0) } ?? dataDirectoryURL.appendingPathComponent("product_images")
    }

    /// The migrations: `LEDGERD_MIGRATIONS_DIR`, else `./sql`, else `<prefix>/share/ledgerd/sql` beside the running
    /// binary's `<prefix>/bin` (where `make install` puts them), else the source tree this binary was built from.
    public func resolvedMigrationsDirectory() throws -> URL {
        let fm = FileManager.default
        if let migrationsDirectory { return URL(fileURLWithPath: migrationsDirectory) }
        let candidates = [
            URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent("sql"),
            RunningExecutable.url.deletingLastPathComponent().appendingPathComponent("../share/ledgerd/sql").standardizedFileURL,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../sql").standardizedFileURL,
        ]
        for candidate in candidates where fm.fileExists(atPath: candidate.appendingPathComponent("0001_create_event_log.sql").path) {
            return candidate
        }
        throw ConfigurationError("migrations not found; set LEDGERD_MIGRATIONS_DIR to the project's sql/ directory")
    }
}
