import Foundation
import LedgerAcquirer
import LedgerApp
import LedgerCore
import LedgerServices
import LedgerTestSupport
import Testing

/// The inbox's passes in process (issue 53; `BankArrivalProcessTests` runs it in the real daemon): an acquirer's report
/// dropped there is reconciled against the batch it names, as its upload is; a file no format recognizes fails with
/// the refusal, nothing stored; a name still claimed is not overwritten.
@Suite(.machine(.shared)) struct ReportInboxTests {
    let storefront = StorefrontDriver()

    static func inbox(_ services: ServiceContainer, _ directory: URL, clock: @escaping @Sendable () -> Date) throws -> ReportInbox {
        try ReportInbox(
            settings: .init(directory: directory, pollInterval: .seconds(1), settle: .zero, maximumBytes: 1 << 20, claim: "test"),
            settlement: services.settlement,
            bank: services.bank,
            clock: clock,
            logger: TestCluster.logger
        )
    }

    @Test func anAcquirersReportInTheInboxIsReconciledAndAnUnknownFileFails() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-17T10:00:00Z"))
        let acquirer = AcquirerModel(seed: 7, configuration: AcquirerModelConfiguration(), clock: clock.reading)
        let directory = URL(fileURLWithPath: "/tmp/ledgerd-inbox-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestApp.withApp(seed: true, acquirer: acquirer, clock: { clock.now }) { client, services in
            let id = try await storefront.placeOrder(client)
            #expect(try await BackOfficeDriver().capture(client, id).0 == .ok)
            clock.set(TestApp.instant("2026-06-17T22:00:01Z"))
            let batchID = try #require(try await BackOfficeDriver().settle(client, "2026-06-17").batches.first?.batchId)
            let (_, csv) = try await BackOfficeDriver().get(client, "/settlements/\(batchID)/report.csv")
            let inbox = try Self.inbox(services, directory, clock: { Date() })
            let mode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o700, "the inbox is created 0700")

            let head = try await services.store.head().position
            try "Merchant Account,Nothing Known\n1,2\n".write(to: directory.appendingPathComponent("unknown.csv"), atomically: false, encoding: .utf8)
            var outcomes = try await inbox.pass()
            #expect(outcomes.map(\.place) == [.failed] && outcomes.first?.reason.contains("invalid_report") == true, "\(outcomes)")
            #expect(try await services.store.head().position == head, "a failed file stores nothing")

            try csv.write(to: directory.appendingPathComponent("acquirer-report.csv"), atomically: false, encoding: .utf8)
            outcomes = try await inbox.pass()
            #expect(outcomes.map(\.place) == [.processed], "\(outcomes)")
            #expect(outcomes.first?.reason.contains("settlement report for batch \(batchID)") == true, "\(outcomes)")
            let view = try #require(try await services.settlement.reconciliation(id: batchID))
            #expect(view.reports.contains { $0.report != nil }, "the report's reconciliation is recorded as an upload's")
            let reason = try String(contentsOf: directory.appendingPathComponent("processed/acquirer-report.csv.reason"), encoding: .utf8)
            #expect(reason.contains("0 breaks"), "\(reason)")
        }
    }
}
