import ArgumentParser
import Foundation
import LedgerBench
import LedgerCore
import LedgerSimulator

/// `ledgerd simulate`: the deterministic simulator (docs/architecture.md, "The simulator").
struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the ledger's services on in-memory ports with one seed, checking every invariant after each operation.",
        discussion: """
            One seed gives the options (catalogue, hot products, acquirer declines, faults and latency, replays) and every \
            operation; the same seed ends on the same head hash. Prints the options, the operations by kind and outcome, \
            and last `head <64 hex digits>`. A failed check prints the operation, the check and the command that \
            reproduces it, and exits 1. No database: nothing is written to disk.
            """
    )

    @Option(help: "The seed (LEDGER_SIM_SEED; default 1).") var seed: UInt64?
    @Option(help: "Operations to run after the catalogue is listed (default 10000).") var operations: Int = 10_000

    func run() async throws {
        let seed: UInt64
        if let given = self.seed {
            seed = given
        } else if let text = ProcessInfo.processInfo.environment["LEDGER_SIM_SEED"] {
            guard let parsed = UInt64(text) else { throw ValidationError("LEDGER_SIM_SEED must be an unsigned integer") }
            seed = parsed
        } else {
            seed = 1
        }
        let simulator = Simulator(options: SimulatorOptions(seed: seed))
        print("seed \(seed): \(simulator.options)")
        let started = ContinuousClock.now
        let cpuBefore = ProcessFigures.cpuSeconds()
        let report: Simulator.Report
        do {
            report = try await simulator.run(operations: operations)
        } catch let failure as Simulator.Failure {
            print("FAILED after \(failure)")
            print("reproduce: LEDGER_SIM_SEED=\(seed) swift run ledgerd simulate --seed \(seed) --operations \(operations)")
            throw ExitCode(1)
        }
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let cpu = ProcessFigures.cpuSeconds() - cpuBefore
        for (kind, count) in report.outcomes.sorted(by: { $0.key < $1.key }) { print("  \(kind): \(count)") }
        print("acquirer calls lost by the network: \(report.unreachableCalls); answers lost after the acquirer applied them: \(report.lostAnswers)")
        print(
            String(
                format: "%d operations, %lld events, %d checks passed in %.1f s (%.0f operations/s, %.1f s CPU: %.0f µs CPU per operation)",
                report.operations,
                report.position,
                report.checks,
                seconds,
                Double(report.operations) / max(seconds, 1e-9),
                cpu,
                cpu * 1e6 / Double(max(report.operations, 1))
            )
        )
        print("load average \(ProcessFigures.loadAverage())")
        print("head \(Hex.encode(report.head))")
    }
}
