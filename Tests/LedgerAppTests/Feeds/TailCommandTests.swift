import Foundation
import LedgerCore
import LedgerHTTP
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ledgerd tail` against the real daemon: the feed from position 1, one JSON event per line; the daemon
/// still stops cleanly (SIGTERM, exit 0) while a stream is open; the webhook secrets key is generated 0600.
@Suite(.machine(.shared)) struct TailCommandTests {
    @Test(.timeLimit(.minutes(3))) func tailPrintsTheFeedAndTheDaemonStopsWithAStreamOpen() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-tail-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let port = TestPorts.free()
        let log = dataDirectory.appendingPathComponent("daemon.log")
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory.appendingPathComponent("d"), port: port, logFile: log)
        guard daemon.health != nil else {
            daemon.process.terminate()
            Issue.record("no /health answer:\n\(daemon.output())")
            return
        }
        let keyFile = dataDirectory.appendingPathComponent("d/webhook-secrets.key")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)

        let base = ["--url", "http://127.0.0.1:\(port)", "--data-dir", dataDirectory.appendingPathComponent("d").path]
        let tail = try await DaemonProcess.run(["tail", "--after", "0", "--count", "5"] + base)
        #expect(tail.status == 0, "\(tail.output)")
        let lines = tail.output.split(separator: "\n").filter { $0.hasPrefix("{") }
        let positions = try lines.map { line -> Int in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return try #require(object["position"] as? Int)
        }
        #expect(positions == [1, 2, 3, 4, 5], "\(tail.output)")
        let typed = try await DaemonProcess.run(["tail", "--from-start", "--type", "ShippingMethodListed", "--count", "2"] + base)
        #expect(typed.output.split(separator: "\n").filter { $0.contains(#""type":"ShippingMethodListed""#) }.count == 2, "\(typed.output)")
        let both = try await DaemonProcess.run(["tail", "--from-start", "--after", "3", "--count", "1"] + base)
        #expect(both.status != 0 && both.output.contains("give one"), "\(both.output)")

        // Without a start, like tail -f: only what is recorded after it started. Payments go on until it has printed
        // one (however long it takes to connect), and that one is past the head it found.
        let (_, page) = try await daemon.request("GET", "/events?limit=1000")
        let recorded = try #require(try JSONSerialization.jsonObject(with: Data(page.utf8)) as? [String: Any])["events"] as? [[String: Any]]
        let headBefore = try #require(recorded?.compactMap { ($0["position"] as? NSNumber)?.int64Value }.max())
        let done = Barrier(parties: 1)
        let fromNow = Task {
            defer { Task { await done.arrive() } }
            return try await DaemonProcess.run(["tail", "--count", "1"] + base)
        }
        var payments = 0
        while done.arrivals == 0 {
            _ = try await daemon.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self))
            payments += 1
            try await Task.sleep(for: .milliseconds(300))
        }
        let now = try await fromNow.value
        let printed = try now.output.split(separator: "\n").filter { $0.hasPrefix("{") }.map { line -> Int64 in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return try #require((object["position"] as? NSNumber)?.int64Value)
        }
        #expect(now.status == 0 && printed.count == 1 && printed.allSatisfy { $0 > headBefore }, "after \(payments) payments: \(now.output)")

        // A follower that stays connected, then SIGTERM: the daemon ends the stream and exits 0. The follower has
        // printed an event first (payments go on until it does), so the stream is open when the signal comes.
        let followed = dataDirectory.appendingPathComponent("follower.out")
        let follower = try ChildProcessHandle.launch(
            DaemonProcess.binary.path,
            ["tail"] + base,
            environment: DaemonProcess.environment(),
            standardOutput: .appending(followed.path),
            standardError: .appending(dataDirectory.appendingPathComponent("follower.err").path)
        )
        defer { if follower.isRunning { follower.terminate() } }
        let started = ContinuousClock.now
        var streamed = false
        while !streamed, follower.isRunning, ContinuousClock.now - started < .seconds(60) {
            _ = try await daemon.request("POST", "/payment", String(decoding: StorefrontDriver.paymentBody(), as: UTF8.self))
            try await Task.sleep(for: .milliseconds(300))
            streamed = ((try? String(contentsOf: followed, encoding: .utf8)) ?? "").contains("{")
        }
        let errors = (try? String(contentsOf: dataDirectory.appendingPathComponent("follower.err"), encoding: .utf8)) ?? ""
        #expect(streamed, "the follower printed no event within 60 s (running: \(follower.isRunning)): \(errors)")
        try await daemon.stop()
    }
}
