// swift-tools-version:6.1
import CompilerPluginSupport
import PackageDescription

/// OrderLedger: `ledgerd`, an event-sourced order ledger on PostgreSQL.
///
/// Module split (see ../shared/design/architecture.md): a pure core with no dependencies,
/// PostgreSQL / HTTP / wiring at the edges, and the `ledgerd` executable on top.
let package = Package(
    name: "OrderLedger",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ledgerd", targets: ["ledgerd"]),
        .executable(name: "ledgerd-applepay-bench", targets: ["LedgerApplePayBench"]),
        .library(name: "LedgerCore", targets: ["LedgerCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // One trait, so one -D define: with two (its defaults, ConfigurationSupport and FullFoundation) SwiftPM wrote them in
        // a random order per invocation, a changed command that recompiled Hummingbird (108 files, 15–20 s) on about every
        // other `swift run` (issue 34). The ledger does not use Hummingbird's swift-configuration readers.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "602.0.0"..<"604.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // The runtime of the types and client generated from the ledger API's document (Sources/LedgerAPI/Generated/,
        // deploy/openapi/generate-swift.sh), and the client's transport on AsyncHTTPClient for the CLI.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
    ],
    targets: [
        // `@MemberwiseInit`: the public memberwise initializer Swift synthesizes only internally (compile time only).
        .macro(
            name: "LedgerMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "LedgerMacros", dependencies: ["LedgerMacrosPlugin"]),
        // Pure domain: money, ids, events, the canonical event layout, the transparency log's Merkle tree, proofs and signed
        // notes. No I/O; its only dependencies are a collection, a compile-time macro and swift-crypto (SHA-256, Ed25519).
        // Persistent (structurally shared) dictionaries keep a hot product's reservation table cheap to copy.
        .target(
            name: "LedgerCore",
            dependencies: [
                "LedgerMacros", .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Bank statements in (issue 53): camt.053/054 (Foundation's XMLParser, hence a target of its own: LedgerCore links no
        // libxml2), MT940 and BAI2 read streaming into the ledger's normalized statement. Pure: bytes in, items out.
        .target(name: "LedgerBank", dependencies: ["LedgerCore"]),
        // The contract between the ledger and its acquirer, which both sides import: the wire API's paths and bodies,
        // the settlement report's CSV, the business calendar and cut-off, the fee schedules. Pure.
        .target(name: "LedgerAcquirerAPI", dependencies: ["LedgerCore", "LedgerMacros"], exclude: ["openapi.yaml"]),
        // The deterministic acquirer model (the simulator): authorization holds, settlement batches, reports. Pure.
        // Only the acquirer service, its tests and the benchmarks import it; the ledger speaks LedgerAcquirerAPI.
        .target(
            name: "LedgerAcquirer",
            dependencies: ["LedgerCore", "LedgerAcquirerAPI", "LedgerMacros", .product(name: "HeapModule", package: "swift-collections")]
        ),
        // Starting and reaping child processes (posix_spawn) for the daemon and the tests: not Foundation's Process,
        // whose run() can crash on Linux (ChildProcessHandle says why).
        .target(name: "LedgerProcess"),
        // The ledger's side of the acquirer's wire API (LedgerAcquirerAPI): the adapter (AsyncHTTPClient: timeouts,
        // retries under one idempotency key, a circuit breaker, metrics).
        .target(
            name: "LedgerAcquirerClient",
            dependencies: [
                "LedgerCore", "LedgerAcquirerAPI", "LedgerMacros",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // `ledgerd acquirer serve`: the acquirer model as its own service — its journal in PostgreSQL (schema
        // `acquirer`, sql/acquirer/), the wire API on Hummingbird, seeded wire faults. Another system than the
        // ledger, so its SQL lives here, not in LedgerPostgres.
        .target(
            name: "LedgerAcquirerService",
            dependencies: [
                "LedgerCore", "LedgerAcquirer", "LedgerAcquirerAPI", "LedgerAcquirerClient", "LedgerPostgres", "LedgerMacros",
                "LedgerHTTPServer",
                // Only for SecretFile: the secrets file is written as every secret file is.
                "LedgerServices",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The command pipeline, pure: commands and their decisions in a batch, the batch planner, append requests and
        // errors, chain links and the read-model rows an append carries, the command runner (AggregateStore) and the
        // writer's batching loop over the EventLog port. No driver: the daemon runs it on PostgreSQL
        // (LedgerPostgres), a simulator on memory. LedgerEngineTests' EngineBoundaryTests keeps PostgreSQL out.
        .target(
            name: "LedgerEngine",
            dependencies: [
                "LedgerCore", "LedgerMacros", .product(name: "Crypto", package: "swift-crypto"),
                // The writer's loop: its logs, metrics and service lifecycle (no driver).
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Everything that speaks SQL: the event store (migrator, group-commit writer, chain verifier, embedded launcher),
        // the read models and their queries, the domain committer, idempotency probes, shipping contacts and settlement's
        // items, stored reports and reconciliation lookups.
        .target(
            name: "LedgerPostgres",
            dependencies: [
                "LedgerCore", "LedgerEngine", "LedgerMacros", "LedgerProcess",
                // Only for LogThrottle: the writer's `append failed` during an outage, as the 503 warning.
                "LedgerHTTPServer",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Only to recognise the pool's ConnectionPoolError (its circuit breaker) as "database unavailable".
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                // Only for the watcher's plain TCP connect (is a silent database host down, or slow?).
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Apple Pay payment tokens: CMS signature verification and EC_v1 / RSA_v1 decryption. Pure.
        .target(
            name: "LedgerPayments",
            dependencies: [
                "LedgerMacros",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Test PKI and token factory for Apple Pay (tests and `ledgerd-applepay-bench`; never linked into `ledgerd`).
        .target(
            name: "LedgerPaymentsTesting",
            dependencies: [
                "LedgerPayments",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // The bounds every HTTP server of the project applies (ledger and acquirer service): idle, head and body
        // deadlines, connection limits in all and per client, the log throttle for repeated warnings, and 405 with
        // `Allow` for a method a path does not have.
        .target(
            name: "LedgerHTTPServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                // Only for the request timeouts' place around NIO's HTTP/1 request decoder.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Use cases: payments, holds, settlement, reconciliation, audit and as-of, catalog, privacy, checkpoints,
        // recovery, expiry, feeds (subscriptions, webhooks) and the journal. They speak the domain and throw one
        // `ServiceError`; they never serve HTTP (the webhook dispatcher is an HTTP client: AsyncHTTPClient).
        .target(
            name: "LedgerServices",
            dependencies: [
                "LedgerCore", "LedgerAcquirerAPI", "LedgerEngine", "LedgerPostgres", "LedgerPayments", "LedgerMacros", "LedgerBank",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The deterministic simulator (issue 56, `ledgerd simulate`): the real services on the engine's in-memory ports, the
        // seeded acquirer model, a simulated clock and ids, and the invariants checked after every operation. No driver.
        .target(
            name: "LedgerSimulator",
            dependencies: [
                "LedgerCore", "LedgerEngine", "LedgerServices", "LedgerAcquirer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The ledger's API contract: the Codable wire types of its replies, in the API's one JSON form, which the
        // routes encode and the CLI and the tests decode; and Generated/, the types and the client that
        // swift-openapi-generator made from openapi.yaml (committed; deploy/openapi/generate-swift.sh, checked in CI),
        // which the CLI calls the daemon through. No HTTP server: the CLI links this, not Hummingbird.
        .target(
            name: "LedgerAPI",
            dependencies: ["LedgerCore", "LedgerServices", .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")],
            exclude: ["openapi.yaml"]
        ),
        // HTTP edge: routes, the one ServiceError → HTTP mapping, auth, request metrics.
        .target(
            name: "LedgerHTTP",
            dependencies: [
                "LedgerCore", "LedgerAPI", "LedgerServices", "LedgerMacros", "LedgerHTTPServer", "LedgerBank",
                .product(name: "Hummingbird", package: "hummingbird"),
                // The back-office console's pages (Console/): templates rendered on the server.
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Wiring only: configuration, the service container, the router and the application.
        .target(
            name: "LedgerApp",
            dependencies: [
                "LedgerCore", "LedgerAcquirerAPI", "LedgerEngine", "LedgerPostgres", "LedgerServices", "LedgerHTTP", "LedgerPayments",
                "LedgerAcquirerClient", "LedgerAcquirerService", "LedgerHTTPServer", "LedgerProcess",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                // Only for the request-head timeout's place around NIO's HTTP/1 request decoder.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Benchmarks (`ledgerd bench …`): what they measure, plus the histogram and the test PKI.
        .target(
            name: "LedgerBench",
            dependencies: [
                "LedgerCore", "LedgerAcquirer", "LedgerAcquirerAPI", "LedgerEngine", "LedgerPostgres", "LedgerServices", "LedgerApp",
                "LedgerPayments", "LedgerAcquirerService",
                "LedgerMacros", "LedgerAcquirerClient",
                // Only for DayLoad, bench/day.sh's open-loop load generator.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // `ledgerd-applepay-bench`: Apple Pay tokens verified and decrypted per second, on the test PKI — which is why it
        // is not a `ledgerd bench` command: the production binary never links LedgerPaymentsTesting.
        .executableTarget(
            name: "LedgerApplePayBench",
            dependencies: [
                "LedgerPayments", "LedgerPaymentsTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The CLI; its back-office commands call the daemon through LedgerAPI's generated client, on AsyncHTTPClient
        // (no Hummingbird here).
        .executableTarget(
            name: "ledgerd",
            dependencies: [
                "LedgerApp", "LedgerServices", "LedgerAPI", "LedgerBench", "LedgerAcquirerService",
                "LedgerCore", "LedgerSimulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // Only to tell why the daemon could not be reached (a refused connection, an unknown host, TLS).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Pure test helpers: the decider given/when/then spec and the seeded property-test generator.
        .target(
            name: "LedgerCoreTestSupport",
            dependencies: ["LedgerCore", "LedgerEngine", "LedgerAcquirer", "LedgerAcquirerAPI"],
            path: "Tests/LedgerCoreTestSupport"
        ),
        // Test harness: one embedded cluster per test run, a fresh database per test, the application
        // (`TestApp`), the storefront and back-office drivers, `ledgerd` as a process, quiet logs.
        .target(
            name: "LedgerTestSupport",
            dependencies: [
                "LedgerCore", "LedgerEngine", "LedgerPostgres", "LedgerServices", "LedgerAPI", "LedgerHTTP", "LedgerApp", "LedgerAcquirer",
                "LedgerAcquirerService", "LedgerProcess",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/LedgerTestSupport"
        ),
        .testTarget(
            name: "LedgerMacrosTests",
            dependencies: [
                "LedgerMacrosPlugin",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(
            name: "LedgerCoreTests",
            dependencies: [
                "LedgerCore", "LedgerAcquirer", "LedgerAcquirerAPI", "LedgerCoreTestSupport", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Fixtures/: statement files written from the formats' specifications, read by path (and by Tests/bank_reference.py).
        .testTarget(name: "LedgerBankTests", dependencies: ["LedgerBank", "LedgerCore", "LedgerProcess"], exclude: ["Fixtures"]),
        // Golden/: report files the tests compare against, read by path.
        .testTarget(name: "LedgerAcquirerTests", dependencies: ["LedgerAcquirer", "LedgerAcquirerAPI", "LedgerCore"], exclude: ["Golden"]),
        .testTarget(
            name: "LedgerPaymentsTests",
            dependencies: [
                "LedgerPayments", "LedgerPaymentsTesting", "LedgerAcquirer", "LedgerCoreTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Use cases without a database: the periodic jobs' loop.
        .testTarget(
            name: "LedgerServicesTests",
            dependencies: [
                "LedgerServices", "LedgerCore", "LedgerEngine", "LedgerPostgres", "LedgerCoreTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The simulator: one seed, one head; seeds' sweeps; what its checks catch.
        .testTarget(
            name: "LedgerSimulatorTests",
            dependencies: ["LedgerSimulator", "LedgerCore", "LedgerEngine", "LedgerServices", "LedgerAcquirer"]
        ),
        // The command pipeline without a database, and the engine's boundary (no PostgreSQL in LedgerEngine).
        .testTarget(
            name: "LedgerEngineTests",
            dependencies: ["LedgerEngine", "LedgerCore", "LedgerCoreTestSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "LedgerPostgresTests",
            dependencies: [
                "LedgerPostgres", "LedgerEngine", "LedgerTestSupport", "LedgerCoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The HTTP edge without a database: request parsing, the error mapping and its JSON shape.
        .testTarget(
            name: "LedgerHTTPTests",
            dependencies: [
                "LedgerAPI", "LedgerHTTP", "LedgerServices", "LedgerCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "LedgerAppTests",
            dependencies: [
                "LedgerApp", "LedgerServices", "LedgerAPI", "LedgerHTTP", "LedgerTestSupport", "LedgerCoreTestSupport", "ledgerd", "LedgerPayments",
                "LedgerPaymentsTesting", "LedgerAcquirer", "LedgerAcquirerAPI", "LedgerAcquirerClient", "LedgerAcquirerService", "LedgerPostgres",
                "LedgerEngine", "LedgerHTTPServer", "LedgerProcess",
                // BankMatchingFigureTests runs `ledgerd bench bank`'s scenario (BankMatchingScenario).
                "LedgerBench",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // HTTPS tests and webhook receivers: a client that trusts the test CA, the CA and certificates, raw sockets.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Golden"]
        ),
    ]
)
