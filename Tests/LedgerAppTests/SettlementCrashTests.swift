import Foundation
import LedgerAPI
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerServices
import LedgerTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `kill -9` during settlement, on the real daemon and its embedded database: for every step of a
/// batch, a `ledgerd serve` armed to SIGKILL itself right there runs the day's settlement and dies;
/// the next daemon on the same data directory settles the day again. Each day's batch then ends
/// payout-scheduled with exactly that day's captures, every capture is in exactly one batch and
/// one report line, every batch reconciles with zero breaks, and the chain verifies.
///
/// Time is rehearsed (`LEDGERD_CLOCK_START`): each daemon starts at the instant the test needs.
@Suite(.serialized, .machine(.shared)) struct SettlementCrashTests {
    static let points = [
        "settlement.opened", "settlement.closed", "settlement.accepted", "settlement.storing_report",
        "settlement.submitted", "settlement.cleared", "settlement.payout_scheduled",
        // Reached on a day whose run also records the previous day's deposit (T+1), so not on the first.
        "settlement.reconciling", "settlement.paid",
    ]
    /// One business day per fault point (Monday 2026-06-15 onwards, weekends skipped), and one more.
    static let days = [
        "2026-06-15", "2026-06-16", "2026-06-17", "2026-06-18", "2026-06-19", "2026-06-22", "2026-06-23", "2026-06-24", "2026-06-25",
        "2026-06-26",
    ]

    let dataDirectory = URL(fileURLWithPath: "/tmp/ledgerd-crash-\(UUID().uuidString.prefix(8))")
    let port = TestPorts.free()

    func start(clock: String, crashAt: String? = nil) async throws -> DaemonProcess {
        let daemon = try await DaemonProcess.start(
            dataDirectory: dataDirectory,
            port: port,
            logFile: dataDirectory.appendingPathComponent("daemon.log"),
            environment: [
                "LEDGERD_CLOCK_START": clock, "LEDGERD_FAULT_CRASH_AT": crashAt, "LEDGERD_LOG_LEVEL": "warning",
                "LEDGERD_EXPIRY_INTERVAL_SECONDS": "3600",
            ],
            attempts: 480
        )
        try #require(daemon.process.isRunning, "ledgerd did not come up:\n\(daemon.output())")
        _ = try #require(daemon.operatorKey, "ledgerd wrote no operator key")
        return daemon
    }

    /// Pays and captures `count` orders (one of them refunded in part); returns our modification references' count.
    func captureOrders(_ daemon: DaemonProcess, count: Int) async throws -> Int {
        var modifications = 0
        for n in 0..<count {
            var payment = URLRequest(url: URL(string: "http://127.0.0.1:\(daemon.port)/payment")!)
            payment.httpMethod = "POST"
            payment.setValue("application/json", forHTTPHeaderField: "Content-Type")
            payment.httpBody = StorefrontDriver.paymentBody(amount: 3200, product: "Pen")
            let (paid, _) = try await TestHTTP.data(for: payment)
            let order = try JSONDecoder().decode(PaymentReply.self, from: paid).orderId
            let (status, text) = try await daemon.request("POST", "/orders/\(order)/capture", "{}", idempotencyKey: "capture-\(order)")
            #expect(status == 200, "\(text)")
            modifications += 1
            if n == 0 {
                let (refunded, refundText) = try await daemon.request(
                    "POST",
                    "/orders/\(order)/refund",
                    #"{"amount": "1.00", "reason": "crash test"}"#,
                    idempotencyKey: "refund-\(order)"
                )
                #expect(refunded == 200, "\(refundText)")
                modifications += 1
            }
        }
        return modifications
    }

    @Test(.timeLimit(.minutes(10))) func aDaemonKilledAtAnyStepOfSettlementIsCompletedByTheNextOne() async throws {
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        defer {
            try? EmbeddedPostgres(configuration: .init(dataDirectory: dataDirectory), logger: TestCluster.logger).stop()
            try? FileManager.default.removeItem(at: dataDirectory)
        }
        // The first day's captures.
        var daemon = try await start(clock: "\(Self.days[0])T10:00:00Z")
        var expected = [try await captureOrders(daemon, count: 3)]
        try await daemon.stop()  // the acquirer model is saved at shutdown

        for (index, point) in Self.points.enumerated() {
            let day = Self.days[index]
            // A daemon armed to die at `point` runs the day's settlement: the request never gets an answer.
            let doomed = try await start(clock: "\(day)T22:00:05Z", crashAt: point)
            _ = try? await doomed.request("POST", "/settlements/run", #"{"business_date": "\#(day)"}"#)
            for _ in 0..<240 where doomed.process.isRunning { try await Task.sleep(for: .milliseconds(250)) }
            #expect(
                !doomed.process.isRunning && doomed.process.terminationReason == .uncaughtSignal
                    && doomed.process.terminationStatus == SIGKILL,
                "\(point): the daemon was not killed"
            )

            // The next daemon completes the batch with exactly the day's items.
            daemon = try await start(clock: "\(day)T22:01:00Z")
            let (status, text) = try await daemon.request("POST", "/settlements/run", #"{"business_date": "\#(day)"}"#)
            #expect(status == 200, "\(point): \(text)")
            let summary = try JSONDecoder().decode(SettlementRunReply.self, from: Data(text.utf8))
            #expect(summary.batches.map(\.stage) == [.payoutScheduled], "\(point): \(text)")
            #expect(summary.batches.map { $0.captures + $0.refunds } == [expected[index]], "\(point): \(text)")
            // Items for the next day: recorded after this day's cut-off.
            expected.append(try await captureOrders(daemon, count: 2))
            try await daemon.stop()
        }

        // The last day settles the last captures and closes every earlier batch's reconciliation window.
        let last = Self.days[Self.points.count]
        daemon = try await start(clock: "\(last)T22:01:00Z")
        // Through the CLI: progress as the run goes, then the summary table.
        let settle = try await DaemonProcess.run(
            ["settle", "--business-date", last, "--url", "http://127.0.0.1:\(port)", "--data-dir", dataDirectory.path])
        #expect(settle.status == 0, "\(settle.output)")
        for expected in [
            "settling \(last)", "OrderLedgerStore-USD-\(last)  selected 3 items", "recorded SettlementBatchClosed",
            "submitting 3 items", "reconciled", "batch  ", "payout_scheduled",
        ] {
            #expect(settle.output.contains(expected), "missing \(expected) in:\n\(settle.output)")
        }
        // Without a date the daemon picks the day by its own clock and cut-off (here the last day's 22:01), not the
        // CLI's: the run answers about that day's batch, already settled.
        let again = try await DaemonProcess.run(["settle", "--url", "http://127.0.0.1:\(port)", "--data-dir", dataDirectory.path])
        #expect(again.status == 0 && again.output.contains("OrderLedgerStore-USD-\(last)"), "\(again.output)")
        var references: [String] = []
        for (index, day) in Self.days.enumerated() {
            let batch = "OrderLedgerStore-USD-\(day)"
            let (csvStatus, csv) = try await daemon.request("GET", "/settlements/\(batch)/report.csv")
            #expect(csvStatus == 200, "\(batch): \(csv)")
            let lines = try SettlementReportCSV().parse(csv).filter { $0.type != .merchantPayout }
            #expect(lines.count == expected[index], "\(batch)")
            references += lines.map(\.modificationMerchantReference)
            let (_, reconciliation) = try await daemon.request("GET", "/settlements/\(batch)/reconciliation")
            #expect(reconciliation.contains(#""breaks":[]"#), "\(batch): \(reconciliation)")
            // Every payout whose value date came (T+1: all but the last day's) is recorded as paid.
            let (viewStatus, view) = try await daemon.request("GET", "/settlements/\(batch)")
            let stage = index < Self.days.count - 1 ? "paid" : "payout_scheduled"
            #expect(viewStatus == 200 && JSONValue.parse(view)?["stage"] == .string(stage), "\(batch): \(view)")
        }
        // Every capture and refund in exactly one batch and one report line.
        #expect(references.count == expected.reduce(0, +) && Set(references).count == references.count)
        let (_, verify) = try await daemon.request("GET", "/audit/verify")
        #expect(verify.contains("\"ok\":true"), "\(verify)")
        try await daemon.stop()
        // The auditor's offline check: the chain, and every batch's items against its closed event.
        let audit = try await DaemonProcess.run(["audit", "verify", "--settlements", "--data-dir", dataDirectory.path])
        #expect(
            audit.status == 0 && audit.output.contains("settlements:    10 closed batches")
                && audit.output.contains("every batch's items agree"),
            "\(audit.output)"
        )
    }
}
