import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerApp
import LedgerCore
import LedgerServices
import LedgerTestSupport
import Testing

/// An independent reference: Go's golang.org/x/mod/sumdb/note and sumdb/tlog (Debian's golang-golang-x-mod-dev,
/// installed by .ci/run) verify the served checkpoint's signature, read the tree through every served tile (which
/// they check against the signed root), and accept the served inclusion and consistency proofs, equal to the ones
/// they build themselves (Tests/GoReference/verify.go).
@Suite(.machine(.shared)) struct TransparencyGoReferenceTests {
    static let goPath = "/usr/share/gocode"
    static var goAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/go")
            && FileManager.default.fileExists(atPath: "\(goPath)/src/golang.org/x/mod/sumdb/tlog/tlog.go")
    }

    @Test(.enabled(if: goAvailable, "needs go and golang-golang-x-mod-dev (apt-get install golang-go golang-golang-x-mod-dev)"))
    func goSumdbVerifiesOurCheckpointTilesAndProofs() async throws {
        let key = CheckpointKey.generate()
        try await TestApp.withApp(environment: ["LEDGERD_LOG_ORIGIN": "ledger.test/go-reference"], checkpointKey: key) { client, services in
            try await TransparencyLogTests.append(services, count: 700)
            let older = try SignedNote(parsing: try await TransparencyLogTests.text(client, "/log/checkpoint"))
            try await TransparencyLogTests.append(services, count: 66_000 - 700, tag: "more")
            // The builder signs on its own interval: wait (a readiness condition, generously bounded) until its
            // checkpoint covers every appended event, as a slow run may read it before the last tiles are built.
            let deadline = ContinuousClock.now + .seconds(120)
            var checkpointText: String
            var size: UInt64
            while true {
                checkpointText = try await TransparencyLogTests.text(client, "/log/checkpoint")
                size = try LogCheckpoint(text: try SignedNote(parsing: checkpointText).text).size
                guard size < 66_000, ContinuousClock.now < deadline else { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(size == 66_000)
            // Every tile of the tree, as served.
            var tiles: [String: String] = [:]
            for level in 0..<3 {
                let atLevel = size >> (8 * UInt64(level))
                for index in 0...(atLevel / 256) {
                    let width = LogTile.width(level: level, index: index, treeSize: size)
                    guard width > 0 else { continue }
                    let tile = LogTile(level: level, index: index, width: width)
                    let (status, _, bytes) = try await TransparencyLogTests.get(client, "/log/\(tile.path)")
                    #expect(status == 200, "\(tile.path)")
                    tiles[tile.path] = Data(bytes).base64EncodedString()
                }
            }
            var inclusion: [InclusionProofFile] = []
            for position in [1, 2, 256, 257, 700, 65_536, 65_537, 65_999, 66_000] {
                inclusion.append(
                    try JSONDecoder().decode(
                        InclusionProofFile.self,
                        from: Data(try await TransparencyLogTests.text(client, "/log/proof/inclusion?position=\(position)").utf8)
                    )
                )
            }
            var consistency: [ConsistencyProofFile] = []
            for from in [1, 255, 700, 65_536, 65_999] {
                consistency.append(
                    try JSONDecoder().decode(
                        ConsistencyProofFile.self,
                        from: Data(try await TransparencyLogTests.text(client, "/log/proof/consistency?from=\(from)&to=\(size)").utf8)
                    )
                )
            }
            #expect(consistency[2].fromRoot == Data(try LogCheckpoint(text: older.text).rootHash).base64EncodedString())
            struct Fixture: Encodable {
                let verifier_key: String
                let checkpoint: String
                let tiles: [String: String]
                let inclusion: [InclusionProofFile]
                let consistency: [ConsistencyProofFile]
            }
            let fixture = Fixture(
                verifier_key: try await TransparencyLogTests.text(client, "/log/key").trimmingCharacters(in: .newlines),
                checkpoint: checkpointText,
                tiles: tiles,
                inclusion: inclusion,
                consistency: consistency
            )
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("go-reference-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try JSONEncoder().encode(fixture).write(to: file)
            let program = TestCluster.repositoryRoot.appendingPathComponent("Tests/GoReference/verify.go")
            var environment = ProcessInfo.processInfo.environment
            environment["GO111MODULE"] = "off"
            environment["GOPATH"] = Self.goPath
            environment["GOCACHE"] = FileManager.default.temporaryDirectory.appendingPathComponent("ledgerd-go-cache").path
            environment["GOFLAGS"] = "-buildvcs=false"
            let (status, output) = try await ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/go"),
                ["run", program.path, file.path],
                environment: environment
            )
            #expect(status == 0 && output.hasSuffix("ok\n"), "\(output)")

            // And it notices a forged tile: one byte of a served level-0 tile changed.
            var forged = fixture.tiles
            var bytes = Array(Data(base64Encoded: forged["tile/0/000"]!)!)
            bytes[100] ^= 1
            forged["tile/0/000"] = Data(bytes).base64EncodedString()
            try JSONEncoder().encode(
                Fixture(verifier_key: fixture.verifier_key, checkpoint: checkpointText, tiles: forged, inclusion: [inclusion[1]], consistency: [])
            ).write(to: file)
            let refused = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/go"), ["run", program.path, file.path], environment: environment)
            #expect(refused.status != 0, "\(refused.output)")
        }
    }
}
