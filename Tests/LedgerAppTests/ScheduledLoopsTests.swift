import Foundation
import HTTPTypes
import HummingbirdTesting
import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerApp
import LedgerCore
import LedgerHTTP
import LedgerPostgres
import LedgerTestSupport
import Testing

@testable import LedgerServices

/// The daemon's own loops, as `serve` wires them: the automatic settlement (`LEDGERD_SETTLEMENT_AUTO`)
/// and the daily checkpoint (`LEDGERD_CHECKPOINT_TIME` with a key). Each is observed through the API
/// until it has done its work (polled without a deadline of its own; the time limit fails a loop that
/// never runs: 3 minutes, because a whole suite on two cores made a 1-minute limit fail a loop that ran,
/// slowly, behind the others' load).
@Suite(.machine(.shared)) struct ScheduledLoopsTests {
    let storefront = StorefrontDriver()
    let backOffice = BackOfficeDriver()

    /// Polls `condition` (yielding 50 ms between tries) until it holds; after 60 s, a failure at the caller's line that
    /// says so (not the suite's time limit, without a word of what was awaited).
    static func eventually(sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await !condition() {
            try #require(ContinuousClock.now < deadline, "the condition did not hold within 60 s", sourceLocation: sourceLocation)
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `LEDGERD_MEMORY_TRIM_SECONDS`: the daemon returns its allocator's free pages every interval (``MemoryTrimmer``),
    /// each pass a `memory_trim` job on /metrics; 0 turns it off, a negative value is refused.
    @Test(.timeLimit(.minutes(3))) func theMemoryTrimRunsEveryInterval() async throws {
        #expect(try LedgerConfiguration.load(environment: [:]).memoryTrimInterval == .seconds(60))
        #expect(try LedgerConfiguration.load(environment: ["LEDGERD_MEMORY_TRIM_SECONDS": "0"]).memoryTrimInterval == nil)
        #expect(throws: ConfigurationError.self) { try LedgerConfiguration.load(environment: ["LEDGERD_MEMORY_TRIM_SECONDS": "-1"]) }
        try await TestApp.withApp(environment: ["LEDGERD_MEMORY_TRIM_SECONDS": "1"]) { _, services in
            let before = MemoryReturn.trimCount
            let runs = #"ledger_job_runs_total{name="memory_trim",outcome="success"} "#
            try await Self.eventually {
                guard let line = services.metrics.exposition().split(separator: "\n").first(where: { $0.hasPrefix(runs) }) else { return false }
                return (Int(line.dropFirst(runs.count)) ?? 0) >= 2 && MemoryReturn.trimCount >= before + 2
            }
        }
    }

    @Test(.timeLimit(.minutes(3))) func theAutomaticSettlementSettlesADayOnceItsCutOffPassed() async throws {
        let clock = SimulatedClock(TestApp.instant("2026-06-19T10:00:00Z"))  // a Friday
        let model = AcquirerModel(seed: 6, clock: clock.reading)
        let database = try await TestDatabase.fresh()
        // Friday's captures, by a daemon without the loop.
        let orders = OrderList()
        try await TestApp.withApp(seed: true, database: database, acquirer: model, clock: { clock.now }) { client, _ in
            for _ in 0..<2 { orders.append(try await storefront.placeOrder(client)) }
            for id in orders.all { expectReply(try await backOffice.capture(client, id, #"{"amount": "7.00"}"#)) }
        }
        let ids = orders.all
        // Monday morning a daemon with the loop starts: it settles Friday by itself (the weekend has no batch).
        clock.set(TestApp.instant("2026-06-22T08:00:00Z"))
        try await TestApp.withApp(
            database: database,
            acquirer: model,
            clock: { clock.now },
            environment: ["LEDGERD_SETTLEMENT_AUTO": "true"]
        ) { client, services in
            let batch = "OrderLedgerStore-USD-2026-06-19"
            try await Self.eventually {
                let (status, text) = try await backOffice.get(client, "/settlements/\(batch)")
                // Its payout's value date (Monday, T+1) is today: the same run records it paid.
                return status == .ok && JSONValue.parse(text)?["stage"] == .string("paid")
            }
            let (_, text) = try await backOffice.get(client, "/settlements/\(batch)")
            #expect(JSONValue.parse(text)?["gross"] == .string("14.00"), "\(text)")
            #expect(try await services.eventCount(type: "SettlementBatchOpened") == 1)
            let reconciliation = try await backOffice.reconciliation(client, batch)
            #expect(reconciliation.matched == ids.count && reconciliation.breaks.isEmpty)
            // The loop's due days: Friday only (Saturday and Sunday are no business days; Monday's cut-off is ahead).
            let scheduler = SettlementScheduler(settlement: services.settlement, logger: TestCluster.logger)
            #expect(scheduler.dueDates(now: clock.now).last?.description == "2026-06-19")
            #expect(!scheduler.dueDates(now: clock.now).contains { $0.description == "2026-06-20" || $0.description == "2026-06-22" })
            // Its runs (one per due business date) are on the metrics page.
            try await Self.eventually { services.metrics.exposition().contains(#"ledger_job_runs_total{name="settlement",outcome="success"} "#) }
        }
    }

    @Test(.timeLimit(.minutes(3))) func theDailyCheckpointIsSignedAtItsTime() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-checkpoint-loop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Half a second of wall time before the checkpoint's minute: the loop sleeps until then and signs.
        let clock = SimulatedClock(TestApp.instant("2026-06-19T23:58:59Z").addingTimeInterval(0.5))
        let key = CheckpointKey.generate()
        try await TestApp.withApp(
            seed: true,
            clock: { clock.now },
            environment: ["LEDGERD_DATA_DIR": directory.path, "LEDGERD_CHECKPOINT_TIME": "23:59", "LEDGERD_CHECKPOINT_TIME_ZONE": "UTC"],
            checkpointKey: key
        ) { client, services in
            // With this clock standing still the loop passes every half second. It signs the head once the seeded
            // catalogue is in (a pass during the seeding may sign an earlier head too); its file is written after the
            // event is appended, atomically (until then the directory holds the write's temporary file).
            let checkpoints = directory.appendingPathComponent("checkpoints")
            func checkpointFile(_ position: Int64) -> URL {
                let digits = String(position)
                return checkpoints.appendingPathComponent("checkpoint-\(String(repeating: "0", count: max(0, 12 - digits.count)))\(digits).json")
            }
            try await Self.eventually {
                let head = try await services.store.head().position
                guard head > 1, try await services.store.event(at: head)?.type == "CheckpointSigned" else { return false }
                return FileManager.default.fileExists(atPath: checkpointFile(head - 1).path)
            }
            let (status, list) = try await backOffice.get(client, "/audit/checkpoints")
            #expect(status == .ok, "\(list)")
            let head = try await services.store.head().position
            let file = try JSONDecoder().decode(CheckpointFile.self, from: Data(contentsOf: checkpointFile(head - 1)))
            #expect(file.checkpoint.position == head - 1 && file.checkpoint.publicKey == key.publicKeyHex)
            // One file per checkpoint signed, each named for its position.
            let signed = try await services.eventCount(type: "CheckpointSigned")
            let files = try FileManager.default.contentsOfDirectory(atPath: checkpoints.path)
            #expect(files.count == signed && files.allSatisfy { $0.hasPrefix("checkpoint-") && $0.hasSuffix(".json") }, "\(files)")
            // Two more passes (its runs are on the metrics page) sign nothing: the head is signed already.
            func runs() -> Int {
                let line = services.metrics.exposition().split(separator: "\n").first {
                    $0.hasPrefix(#"ledger_job_runs_total{name="checkpoint",outcome="success"} "#)
                }
                return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            }
            let passes = runs()
            try await Self.eventually { runs() >= passes + 2 }
            #expect(try await services.eventCount(type: "CheckpointSigned") == signed)
            #expect(try await services.store.head().position == head)
        }
    }
}
