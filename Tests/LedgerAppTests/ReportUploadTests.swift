import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerCore
import LedgerServices
import LedgerTestSupport
import NIOCore
import Testing

/// Report uploads are streamed to a spool file (0600, hashed on the way) and bounded while they stream
/// (issue 15): a larger one is 413 and appends nothing; bytes that are not UTF-8 are 400.
@Suite(.machine(.shared)) struct ReportUploadTests {
    static func chunks(_ bytes: [UInt8], size: Int) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            var start = 0
            while start < bytes.count {
                continuation.yield(Array(bytes[start..<min(start + size, bytes.count)]))
                start += size
            }
            continuation.finish()
        }
    }

    @Test func aSpooledUploadIsItsBytesHashedAndPrivateAndAnOversizedOneLeavesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledgerd-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let upload = try await ReportUpload.spool(Self.chunks(bytes, size: 7_001), limit: 200_000, directory: directory)
        #expect(upload.byteCount == bytes.count && upload.digest == Array(SHA256.hash(data: bytes)))
        #expect(try Array(Data(contentsOf: upload.file)) == bytes)
        #expect((try FileManager.default.attributesOfItem(atPath: upload.file.path)[.posixPermissions] as? Int) == 0o600)
        var read: [UInt8] = []
        try await upload.forEachChunk { read += $0 }
        #expect(read == bytes)
        upload.remove()
        await #expect(throws: ReportUpload.TooLarge.self) {
            _ = try await ReportUpload.spool(Self.chunks(bytes, size: 7_001), limit: 199_999, directory: directory)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func anUploadPastTheLimitIs413AndBytesThatAreNotUTF8Are400AndNeitherAppends() async throws {
        try await TestApp.withApp(seed: true, environment: ["LEDGERD_REPORT_MAX_BYTES": "4096"]) { client, services in
            let before = try await services.store.head().position
            func post(_ bytes: [UInt8]) async throws -> (HTTPResponse.Status, String) {
                try await client.execute(
                    uri: "/reconciliation/reports",
                    method: .post,
                    headers: [.authorization: "Bearer \(TestApp.operatorKey)", .contentType: "text/csv"],
                    body: ByteBuffer(bytes: bytes)
                ) { ($0.status, String(buffer: $0.body)) }
            }
            let large = try await post(Array(repeating: UInt8(ascii: "a"), count: 4097))
            #expect(large.0 == .contentTooLarge && large.1.contains("payload_too_large"), "\(large.1)")
            // The model's layout and an Adyen SDR (both read in chunks), each with a Latin-1 byte.
            let ledger = try await post(Array((SettlementReportCSV.columns.joined(separator: ",") + "\r\n").utf8) + [0xE9, 0x0D, 0x0A])
            #expect(ledger.0 == .unprocessableContent && ledger.1.contains("UTF-8"), "\(ledger.1)")
            let sdrHeader = (SettlementReportCSV.columns + SettlementRunTests.reserved).joined(separator: ",") + "\r\n"
            let sdr = try await post(Array(sdrHeader.utf8) + Array("x,".utf8) + [0xE9, 0x0D, 0x0A])
            #expect(sdr.0 == .unprocessableContent && sdr.1.contains("UTF-8"), "\(sdr.1)")
            let header = try await post([0xFF, 0xFE] + Array(",Merchant Account\r\n".utf8))
            #expect(header.0 == .unprocessableContent && header.1.contains("UTF-8"), "\(header.1)")
            #expect(try await services.store.head().position == before)
        }
    }
}
