// swift-tools-version:6.1
import PackageDescription

/// What swift-openapi-hummingbird costs per request over plain Hummingbird routes (issue 31): one server, two modes,
/// serving the same two operations of `Sources/LedgerAPI/openapi.yaml` (`listDisputes`, `captureOrder`) with the same
/// generated `Components.Schemas` types. `bench/openapi-overhead.sh` builds it, drives both modes with wrk and prints
/// CPU per request and throughput; `docs/performance.md` has the result. A package of its own so the ledger's does
/// not depend on swift-openapi-hummingbird. The generated sources are committed (`generate.sh` rewrites them with
/// the generator pinned in `deploy/openapi/generator/`); no build plugin.
let package = Package(
    name: "openapi-overhead",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", exact: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", exact: "2.1.0"),
    ],
    targets: [
        .executableTarget(
            name: "openapi-overhead",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
            ],
            path: "Sources/OpenAPIOverhead"
        )
    ]
)
