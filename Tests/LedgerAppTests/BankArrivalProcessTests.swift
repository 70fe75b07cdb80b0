import Foundation
import LedgerTestSupport
import Testing

/// Bank statements and reports that arrive without a person (issue 53), with the real `ledgerd` binary: `ledgerd bank
/// import FILE` through the running daemon, and the watched inbox (`LEDGERD_INBOX_DIR`) — files dropped while the daemon
/// was down processed at start, several per pass, the same content twice a no-op, a file still being written left
/// alone until complete, each bad file (a wrong closing balance, malformed XML, an XML bomb, a 2 GB file) in `failed/`
/// with its reason and nothing stored.
@Suite(.machine(.shared)) struct BankArrivalProcessTests {
    static func fixture(_ name: String) throws -> String {
        String(decoding: try BankStatementImportTests.fixture(name), as: UTF8.self)
    }

    /// The daemon's last position (`/health`): what a refusal must leave unchanged.
    static func lastPosition(_ daemon: DaemonProcess) async throws -> Int64? {
        let (_, body) = try await daemon.request("GET", "/health")
        let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return ((json?["database"] as? [String: Any])?["last_position"] as? NSNumber)?.int64Value
    }

    /// How many events of `type` the daemon's feed holds.
    static func count(_ daemon: DaemonProcess, type: String) async throws -> Int {
        let (_, body) = try await daemon.request("GET", "/events?type=\(type)&limit=1000")
        let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (json?["events"] as? [Any])?.count ?? -1
    }

    @Test(.timeLimit(.minutes(4))) func bankImportStoresAStatementThroughTheDaemonAndPrintsWhatItStored() async throws {
        let root = URL(fileURLWithPath: "/tmp/ledgerd-bank-cli-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let data = root.appendingPathComponent("d")
        let daemon = try await DaemonProcess.start(dataDirectory: data, port: TestPorts.free(), logFile: root.appendingPathComponent("daemon.log"))
        defer { daemon.process.terminate() }
        try #require(daemon.health != nil, "\(daemon.output())")
        let base = ["--url", "http://127.0.0.1:\(daemon.port)", "--data-dir", data.path]
        func write(_ name: String, _ text: String) throws -> String {
            let url = root.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let mt940 = try Self.fixture("mt940-statement.sta")
        let before = try await Self.lastPosition(daemon)
        // Refused, nothing stored: a statement that does not add up (exit 1, the daemon's error printed), a format
        // that is not one of the four (refused before asking), a file that is not there.
        let wrong = try write("wrong.sta", mt940.replacingOccurrences(of: ":62F:C261205EUR13650,07", with: ":62F:C261205EUR13650,00"))
        let refused = try await DaemonProcess.run(["bank", "import", wrong] + base)
        #expect(
            refused.status == 1 && refused.output.contains("invalid_statement") && refused.output.contains("a difference of 0.07 EUR"),
            "\(refused.output)"
        )
        let badFormat = try await DaemonProcess.run(["bank", "import", wrong, "--format", "csv"] + base)
        #expect(badFormat.status != 0 && badFormat.output.contains("--format is one of camt.053"), "\(badFormat.output)")
        let missing = try await DaemonProcess.run(["bank", "import", root.appendingPathComponent("none.sta").path] + base)
        #expect(missing.status != 0 && missing.output.contains("cannot read"), "\(missing.output)")
        #expect(try await Self.lastPosition(daemon) == before)
        // Stored: both statements of the MT940 file, then the camt.053 file named in camt053 spelling; again: nothing new.
        let statement = try write("statement.sta", mt940)
        let imported = try await DaemonProcess.run(["bank", "import", statement] + base)
        #expect(imported.status == 0, "\(imported.output)")
        #expect(imported.output.contains("mt940") && imported.output.contains("2 statements"), "\(imported.output)")
        #expect(imported.output.contains("imported, 5 entries, net 1650.07 EUR, 6 events appended"), "\(imported.output)")
        let camt = try write("camt.xml", try Self.fixture("camt053-001-02.xml"))
        let named = try await DaemonProcess.run(["bank", "import", camt, "--format", "camt053", "--json"] + base)
        #expect(named.status == 0 && named.output.contains(#""format":"camt.053""#), "\(named.output)")
        let again = try await DaemonProcess.run(["bank", "import", statement] + base)
        #expect(again.status == 0 && again.output.contains("already_imported, 5 entries"), "\(again.output)")
        #expect(!again.output.contains(": imported"), "\(again.output)")
        #expect(try await Self.count(daemon, type: "BankStatementReceived") == 3)
        try await daemon.stop()
    }

    @Test(.timeLimit(.minutes(5))) func theInboxProcessesWhatArrivesAndRefusesBadFilesStoringNothing() async throws {
        let root = URL(fileURLWithPath: "/tmp/ledgerd-inbox-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let data = root.appendingPathComponent("d")
        let inbox = root.appendingPathComponent("inbox")
        let environment: [String: String?] = [
            "LEDGERD_INBOX_DIR": inbox.path, "LEDGERD_INBOX_POLL_MS": "200", "LEDGERD_INBOX_SETTLE_MS": "1000",
        ]

        // A world-writable inbox is refused at start, before anything runs.
        try FileManager.default.createDirectory(at: inbox, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: inbox.path)
        let open = try await DaemonProcess.run(
            ["serve", "--port", "\(TestPorts.free())", "--data-dir", data.path],
            environment: DaemonProcess.environment(environment)
        )
        #expect(open.status != 0 && open.output.contains("is writable by every user"), "\(open.output)")
        try FileManager.default.removeItem(at: inbox)

        // Files dropped while the daemon is down (the inbox created 0700 for them by hand here, as an operator would).
        try FileManager.default.createDirectory(at: inbox, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let mt940 = try Self.fixture("mt940-statement.sta")
        let camt = try Self.fixture("camt053-001-02.xml")
        func drop(_ name: String, _ text: String) throws { try text.write(to: inbox.appendingPathComponent(name), atomically: true, encoding: .utf8) }
        try drop("a-statement.sta", mt940)
        try drop("b-statement.xml", camt)
        try drop("c-same-again.sta", mt940)
        try drop("d-wrong-balance.sta", mt940.replacingOccurrences(of: ":62F:C261205EUR13650,07", with: ":62F:C261205EUR13650,00"))
        try drop("e-malformed.xml", String(camt.prefix(camt.count - 40)))
        var bomb = "<?xml version=\"1.0\"?><!DOCTYPE Document [<!ENTITY a \"aaaaaaaaaa\">"
        for level in 1...9 { bomb += "<!ENTITY a\(level) \"" + String(repeating: "&a\(level == 1 ? "" : String(level - 1));", count: 10) + "\">" }
        bomb += "]><Document><BkToCstmrStmt><GrpHdr><MsgId>&a9;</MsgId></GrpHdr></BkToCstmrStmt></Document>"
        try drop("f-bomb.xml", bomb)
        // 2 GB, sparse: larger than LEDGERD_REPORT_MAX_BYTES (256 MB by default), so never read.
        let huge = inbox.appendingPathComponent("g-huge.sta")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: Data(":20:HUGE\n".utf8)))
        let handle = try FileHandle(forWritingTo: huge)
        try handle.truncate(atOffset: 2 * 1024 * 1024 * 1024)
        try handle.close()
        try drop(".partial-upload.sta", mt940)  // a name starting with "." is someone's file still arriving

        let daemon = try await DaemonProcess.start(
            dataDirectory: data,
            port: TestPorts.free(),
            logFile: root.appendingPathComponent("daemon.log"),
            environment: environment
        )
        defer { daemon.process.terminate() }
        try #require(daemon.health != nil, "\(daemon.output())")
        // Waiting: in the inbox, or claimed and not finished yet (in working/<claim>/).
        func waiting() throws -> [String] {
            let working = inbox.appendingPathComponent("working")
            let claimed = try FileManager.default.contentsOfDirectory(atPath: working.path).flatMap {
                try FileManager.default.contentsOfDirectory(atPath: working.appendingPathComponent($0).path)
            }
            return try FileManager.default.contentsOfDirectory(atPath: inbox.path).filter {
                !$0.hasPrefix(".") && !["processed", "failed", "working"].contains($0)
            } + claimed
        }
        for _ in 0..<240 where try !waiting().isEmpty { try await Task.sleep(for: .milliseconds(250)) }
        let left = try waiting()
        #expect(left.isEmpty, "still in the inbox: \(left); \(daemon.output().suffix(3000))")
        func reason(_ place: String, _ name: String) -> String {
            (try? String(contentsOf: inbox.appendingPathComponent("\(place)/\(name).reason"), encoding: .utf8)) ?? "(no reason file)"
        }
        func listing(_ place: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: inbox.appendingPathComponent(place).path)) ?? []).sorted()
        }
        #expect(
            listing("processed") == [
                "a-statement.sta", "a-statement.sta.reason", "b-statement.xml", "b-statement.xml.reason", "c-same-again.sta",
                "c-same-again.sta.reason",
            ],
            "\(listing("processed")) \(daemon.output().suffix(3000))"
        )
        #expect(reason("processed", "a-statement.sta").contains("imported, 5 entries"), "\(reason("processed", "a-statement.sta"))")
        #expect(reason("processed", "b-statement.xml").contains("bank statement file (camt.053)"), "\(reason("processed", "b-statement.xml"))")
        let same = reason("processed", "c-same-again.sta")
        #expect(same.contains("already processed") && same.contains("a-statement.sta"), "\(same)")
        #expect(
            listing("failed") == [
                "d-wrong-balance.sta", "d-wrong-balance.sta.reason", "e-malformed.xml", "e-malformed.xml.reason", "f-bomb.xml",
                "f-bomb.xml.reason", "g-huge.sta", "g-huge.sta.reason",
            ],
            "\(listing("failed"))"
        )
        #expect(reason("failed", "d-wrong-balance.sta").contains("a difference of 0.07 EUR"), "\(reason("failed", "d-wrong-balance.sta"))")
        #expect(reason("failed", "e-malformed.xml").contains("invalid_statement"), "\(reason("failed", "e-malformed.xml"))")
        #expect(reason("failed", "f-bomb.xml").contains("document type"), "\(reason("failed", "f-bomb.xml"))")
        #expect(reason("failed", "g-huge.sta").contains("payload_too_large"), "\(reason("failed", "g-huge.sta"))")
        let attributes = try FileManager.default.attributesOfItem(atPath: inbox.appendingPathComponent("failed/f-bomb.xml.reason").path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(FileManager.default.fileExists(atPath: inbox.appendingPathComponent(".partial-upload.sta").path))
        // Stored: the MT940 file's 2 statements (6 entries) and the camt.053's 1 (4 entries), once; nothing of the rest.
        #expect(try await Self.count(daemon, type: "BankStatementReceived") == 3)
        #expect(try await Self.count(daemon, type: "BankEntryBooked") == 10)

        // A file still being written (a line every 300 ms, more often than the settle time of 1 s) is left alone until
        // it is complete, then read whole: a statement of 12 entries.
        let before = try await Self.lastPosition(daemon)
        let growing = inbox.appendingPathComponent("h-growing.sta")
        _ = FileManager.default.createFile(
            atPath: growing.path,
            contents: Data(":20:GROWING\n:25:NL91ABNA0417164300\n:28C:7/1\n:60F:C261204EUR0,\n".utf8)
        )
        let writer = try FileHandle(forWritingTo: growing)
        for i in 1...12 {
            try writer.seekToEnd()
            try writer.write(contentsOf: Data(":61:2612041204C1,00NTRFREF-\(i)//B-\(i)\n:86:/EREF/E-\(i)/REMI/payout \(i)\n".utf8))
            try await Task.sleep(for: .milliseconds(300))
            #expect(FileManager.default.fileExists(atPath: growing.path), "read while still growing, after \(i) entries")
        }
        try writer.write(contentsOf: Data(":62F:C261204EUR12,00\n".utf8))
        try writer.close()
        #expect(try await Self.lastPosition(daemon) == before, "nothing stored while the file grew")
        for _ in 0..<120 where try !waiting().isEmpty { try await Task.sleep(for: .milliseconds(250)) }
        #expect(reason("processed", "h-growing.sta").contains("imported, 12 entries"), "\(reason("processed", "h-growing.sta")) \(listing("failed"))")
        #expect(try await Self.count(daemon, type: "BankEntryBooked") == 22)
        try await daemon.stop()
    }
}
