// swift-tools-version:6.1
import PackageDescription

/// Pins the OpenAPI generator that `deploy/openapi/generate.sh` runs to regenerate `Sources/LedgerAPI/Generated/` from
/// `Sources/LedgerAPI/openapi.yaml`. A package of its own so the ledger's package does not depend on the generator (nor
/// build it, OpenAPIKit and Yams on every clean build): the generated sources are committed, and CI checks that
/// regeneration changes nothing (`generate.sh --check`).
let package = Package(
    name: "LedgerOpenAPIGenerator",
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", exact: "1.14.3")
    ],
    targets: []
)
