import AsyncHTTPClient
import Foundation
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerTestSupport
import NIOCore
import Testing

/// Security review 3, N4: a report upload in the ledger's own layout was read into memory whole (`upload.text()`):
/// one 250 MB upload took the daemon from 94 MB to 1.21 GB resident. Now every format is read from the spool file a
/// chunk at a time. The daemon (a real process) takes the probe's upload — 250 MB with the ledger's header and a bad
/// second row — and its peak resident memory (`VmHWM`) grows by far less than the upload.
@Suite(.machine(.alone)) struct UploadMemoryTests {
    /// `VmRSS` or `VmHWM` of `pid` in KiB (/proc/pid/status).
    static func memory(_ field: String, of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
        return line.flatMap { Int($0.split(separator: " ").dropFirst().first { !$0.isEmpty } ?? "") }
    }

    @Test(.timeLimit(.minutes(30))) func a250MBLedgerLayoutUploadKeepsThePeakMemoryFlat() async throws {
        let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-upmem-\(UUID().uuidString.prefix(8))")
        let log = URL(fileURLWithPath: "\(dataDirectory.path).log")
        defer {
            for url in [dataDirectory, log] { try? FileManager.default.removeItem(at: url) }
        }
        let daemon = try await DaemonProcess.start(dataDirectory: dataDirectory, port: TestPorts.free(), logFile: log)
        guard daemon.health != nil, let key = daemon.operatorKey else {
            daemon.process.terminate()
            Issue.record("no /health answer:\n\(daemon.output())")
            return
        }
        let pid = daemon.process.processIdentifier
        let before = try #require(Self.memory("VmHWM", of: pid))
        // The header, then 1 MiB chunks of rows that are not the layout's (the import stops at row 2).
        let header = SettlementReportCSV.columns.joined(separator: ",") + "\r\n"
        let row = Array(String(repeating: "x,", count: 22).appending("x\r\n").utf8)
        let chunk = ByteBuffer(bytes: Array((0..<(1_048_576 / row.count)).flatMap { _ in row }))
        let chunks = 250
        let length = header.utf8.count + chunk.readableBytes * chunks
        let body = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(string: header))
            for _ in 0..<chunks { continuation.yield(chunk) }
            continuation.finish()
        }
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(daemon.port)/reconciliation/reports")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        request.headers.add(name: "Content-Type", value: "text/csv")
        request.body = .stream(body, length: .known(Int64(length)))
        let (status, text) = try await HTTPClient.withHTTPClient { client in
            let response = try await client.execute(request, timeout: .seconds(240))
            return (response.status.code, String(buffer: try await response.body.collect(upTo: 1 << 20)))
        }
        let after = try #require(Self.memory("VmHWM", of: pid))
        let resident = Self.memory("VmRSS", of: pid) ?? 0
        print(
            "ledger-layout upload of \(length / 1_048_576) MiB: peak resident \(before / 1_024) → \(after / 1_024) MiB, now \(resident / 1_024) MiB"
        )
        #expect(status == 422 && text.contains("invalid_report"), "\(status) \(text)")
        // Before the fix the peak grew by more than the upload (its bytes and its text); now by a few chunks.
        #expect(after - before < 100 * 1_024, "peak resident memory grew by \((after - before) / 1_024) MiB")
        try await daemon.stop()
    }
}
