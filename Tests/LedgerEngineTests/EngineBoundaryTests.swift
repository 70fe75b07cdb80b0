import Foundation
import Testing

/// LedgerEngine stays free of the database: no source file imports a driver or LedgerPostgres, and the package
/// declares no such dependency for it. SwiftPM lets a target import any module built beside it, so the compiler
/// alone would not notice; this test does (issue 56: the engine runs on PostgreSQL and in a simulator alike).
@Suite struct EngineBoundaryTests {
    /// Modules the engine must never import: the driver, its pool and event loops, and the SQL module.
    static let forbidden: Set<String> = [
        "PostgresNIO", "_ConnectionPoolModule", "LedgerPostgres", "NIOCore", "NIOPosix", "LedgerServices", "LedgerHTTP",
        "Hummingbird",
    ]

    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The modules `source` imports (any attribute or access level before `import`), by name.
    static func imports(in source: String) -> [String] {
        source.split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let index = words.firstIndex(of: "import"),
                words[..<index].allSatisfy({ $0.hasPrefix("@") || $0 == "public" || $0 == "package" || $0 == "internal" })
            else { return nil }
            // `import struct Module.Type` names the module after the kind.
            let rest = words[(index + 1)...].drop(while: {
                ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains(String($0))
            })
            return rest.first.map { String($0.split(separator: ".")[0]) }
        }
    }

    @Test func theScannerSeesEveryFormOfImport() {
        let source =
            "import Foundation\n@preconcurrency import PostgresNIO\npackage import LedgerPostgres\nimport struct NIOCore.ByteBuffer\n// import Hummingbird\n"
        #expect(Self.imports(in: source) == ["Foundation", "PostgresNIO", "LedgerPostgres", "NIOCore"])
    }

    @Test func noEngineSourceImportsTheDatabase() throws {
        let directory = Self.root.appendingPathComponent("Sources/LedgerEngine")
        let files = try #require(FileManager.default.enumerator(atPath: directory.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 10, "the engine's sources were not found at \(directory.path)")
        for file in files {
            let source = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let bad = Self.imports(in: source).filter(Self.forbidden.contains)
            #expect(bad.isEmpty, "Sources/LedgerEngine/\(file) imports \(bad)")
        }
    }

    @Test func thePackageGivesTheEngineNoDatabaseDependency() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let start = try #require(manifest.range(of: #"name: "LedgerEngine","#), "no LedgerEngine target in Package.swift")
        let rest = manifest[start.upperBound...]
        let end = try #require(rest.range(of: "\n        ),"), "the LedgerEngine target does not close as the others do")
        let target = rest[..<end.lowerBound]
        for module in Self.forbidden.union(["postgres-nio", "swift-nio"]) {
            #expect(!target.contains("\"\(module)\""), "LedgerEngine depends on \(module) in Package.swift")
        }
    }
}
