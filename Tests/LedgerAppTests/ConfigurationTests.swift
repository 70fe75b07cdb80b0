import Configuration
import LedgerApp
import LedgerServices
import Testing

@Suite struct ConfigurationTests {
    @Test func defaultsApplyWithAnEmptyEnvironment() throws {
        let configuration = try LedgerConfiguration.load(environment: [:])
        #expect(configuration.port == 12345)
        #expect(configuration.dataDirectory == "./.ledgerd")
        #expect(configuration.usesEmbeddedDatabase)
        #expect(configuration.databasePoolSize == 20)
        // Plain HTTP binds the loopback only; with a certificate, every interface.
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.httpIdleTimeout == .seconds(30) && configuration.httpMaxConnections == 1024)
        #expect(configuration.httpHeaderTimeout == .seconds(10))
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_HTTP_HEADER_TIMEOUT_SECONDS": "0"]) }
        let tls = try LedgerConfiguration.load(environment: ["LEDGERD_TLS_CERTIFICATE": "/c.pem", "LEDGERD_TLS_KEY": "/k.pem"])
        #expect(tls.host == "0.0.0.0")
        #expect(try LedgerConfiguration.load(environment: ["LEDGERD_HOST": "0.0.0.0"]).host == "0.0.0.0")
        // The feeds' followers are woken at most every 50 ms (HeadWatcher); 0 wakes them at every commit.
        #expect(configuration.feedWakeInterval == .milliseconds(50))
        #expect(try LedgerConfiguration.load(environment: ["LEDGERD_FEED_WAKE_MS": "0"]).feedWakeInterval == .zero)
        // The sweeper expires 25 holds per append (a page's commit holds the writer).
        #expect(configuration.expiryPageHolds == 25)
        #expect(try LedgerConfiguration.load(environment: ["LEDGERD_EXPIRY_PAGE_HOLDS": "500"]).expiryPageHolds == 500)
        for bad in ["0", "10001"] {
            #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_EXPIRY_PAGE_HOLDS": bad]) }
        }
        for bad in ["-1", "1001"] {
            #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_FEED_WAKE_MS": bad]) }
        }
    }

    @Test func environmentVariablesAreRead() throws {
        let configuration = try LedgerConfiguration.load(environment: [
            "LEDGERD_PORT": "8080", "LEDGERD_DATA_DIR": "/var/lib/ledgerd",
            "LEDGERD_DATABASE_URL": "postgres://app:pw@db:5432/ledger", "LEDGERD_LOG_LEVEL": "debug",
            "LEDGERD_WRITER_MAX_BATCH": "500",
        ])
        #expect(configuration.port == 8080)
        #expect(configuration.dataDirectory == "/var/lib/ledgerd")
        #expect(configuration.databaseURL == "postgres://app:pw@db:5432/ledger")
        #expect(!configuration.usesEmbeddedDatabase)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.writerMaximumBatchEvents == 500)
    }

    @Test func flagsWinOverTheEnvironment() throws {
        let configuration = try LedgerConfiguration.load(
            flags: ["ledgerd.port": .init(.int(9000), isSecret: false)],
            environment: ["LEDGERD_PORT": "8080"]
        )
        #expect(configuration.port == 9000)
    }

    @Test func badValuesAreRefusedWithTheKeyNamed() throws {
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_PORT": "70000"]) }
        // A data directory the embedded cluster cannot live in is refused at start, naming why (security review 4's
        // probe: `"` and `$(…)` reached pg_ctl's shell, `,` split libpq's host list, a long path overflowed the socket's).
        for bad in ["/tmp/a\"b", "/tmp/$(touch x)", "/tmp/a`id`", "/tmp/a,b", "/tmp/a\\b", "/tmp/a\nb", "/tmp/" + String(repeating: "d", count: 90)] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try LedgerConfiguration.load(environment: ["LEDGERD_DATA_DIR": bad]) }
        }
        #expect(try LedgerConfiguration.load(environment: ["LEDGERD_DATA_DIR": "/tmp/o'brien & co"]).dataDirectory == "/tmp/o'brien & co")
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_LOG_LEVEL": "loud"]) }
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_TLS_CERTIFICATE": "/c.pem"]) }
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_HTTP_MAX_CONNECTIONS": "0"]) }
        // A value that is set but not an integer or a boolean is refused, naming its variable, not read as the default
        // (the configuration library's own reads answered the default: 8O80 served on 12345, ture settled nothing).
        let garbled = [
            "LEDGERD_PORT": "8O80", "LEDGERD_WRITER_MAX_BATCH": "500 events", "LEDGERD_FEED_WAKE_MS": "soon",
            "LEDGERD_SETTLEMENT_PAGE_SIZE": "1e4", "LEDGERD_SETTLEMENT_AUTO": "ture", "LEDGERD_SEED_DEMO_CATALOG": "maybe",
        ]
        for (variable, value) in garbled {
            do {
                _ = try LedgerConfiguration.load(environment: [variable: value])
                Issue.record("\(variable)=\(value) was taken")
            } catch let error as ConfigurationError {
                #expect(error.message.contains(variable) && error.message.contains(value), "\(error.message)")
            }
        }
        // Set to nothing is unset, as before: the default.
        #expect(try LedgerConfiguration.load(environment: ["LEDGERD_PORT": "", "LEDGERD_SETTLEMENT_AUTO": ""]).port == 12345)
        for (variable, value) in ["LEDGERD_SETTLEMENT_AUTO": "yes", "LEDGERD_SEED_DEMO_CATALOG": "0", "LEDGERD_PORT": "8080"] {
            #expect(throws: Never.self, "\(variable)=\(value)") { try LedgerConfiguration.load(environment: [variable: value]) }
        }
    }
}
