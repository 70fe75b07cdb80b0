import Foundation
import LedgerAcquirer
import LedgerCore
import Testing

/// Each knob, aimed at one line, against the same scenario settled without faults.
struct FaultInjectionTests {
    static let target = "cap-order-3"

    func settle(_ faults: FaultConfiguration) throws -> (report: SettlementReport, scenario: SettlementScenario) {
        var scenario = try SettlementScenario(configuration: AcquirerModelConfiguration(faults: faults))
        return (try scenario.settle(), scenario)
    }

    func clean() throws -> SettlementReport { try settle(.none).report }

    func others(_ report: SettlementReport) -> [SettlementReportLine] {
        report.itemLines.filter { $0.modificationMerchantReference != Self.target }
    }

    func targeted(_ report: SettlementReport) -> [SettlementReportLine] {
        report.itemLines.filter { $0.modificationMerchantReference == Self.target }
    }

    @Test("no knob on: no faults recorded")
    func noFaults() throws {
        let (report, scenario) = try settle(.none)
        #expect(scenario.state.injectedFaults.isEmpty)
        #expect(report.sumOfNets == report.payout.amount.minorUnits)
    }

    @Test("drop a line: only that line is missing; the payout still equals the nets; it can be resubmitted")
    func drop() throws {
        let baseline = try clean()
        var (report, scenario) = try settle(FaultConfiguration(dropLine: FaultKnob(targets: [Self.target])))
        #expect(targeted(report).isEmpty && others(report) == others(baseline))
        #expect(report.sumOfNets == report.payout.amount.minorUnits)
        #expect(report.payout.amount.minorUnits == baseline.payout.amount.minorUnits - targeted(baseline)[0].signedNetMinorUnits)
        #expect(scenario.state.injectedFaults == [InjectedFault(kind: .dropLine, batchNumber: report.batchNumber, reference: Self.target)])
        let item = try #require(scenario.batch.items.first { $0.modificationReference == Self.target })
        let retry = try scenario.state.submitBatch(
            SettlementBatchRequest(batchReference: "retry", currency: .usd, items: [item]),
            now: monday + 86_400
        )
        // Accepted (the item was never settled) — and, the knob still aiming at it, dropped again.
        #expect(retry.itemLines.isEmpty)
        #expect(scenario.state.injectedFaults.map(\.kind) == [.dropLine, .dropLine])
    }

    @Test("duplicate a line: that line appears twice and is paid twice")
    func duplicate() throws {
        let baseline = try clean()
        let (report, _) = try settle(FaultConfiguration(duplicateLine: FaultKnob(targets: [Self.target])))
        #expect(targeted(report) == targeted(baseline) + targeted(baseline))
        #expect(others(report) == others(baseline))
        #expect(report.sumOfNets == report.payout.amount.minorUnits)
    }

    @Test("alter an amount: gross and net one minor unit higher, fees unchanged, nothing else touched")
    func alterAmount() throws {
        let baseline = try clean()
        let (report, _) = try settle(FaultConfiguration(alterAmount: FaultKnob(targets: [Self.target])))
        let before = targeted(baseline)[0]
        let after = try #require(targeted(report).first)
        #expect(after.signedGrossMinorUnits == before.signedGrossMinorUnits + 1)
        #expect(after.signedNetMinorUnits == before.signedNetMinorUnits + 1)
        #expect(after.totalFeesMinorUnits == before.totalFeesMinorUnits)
        var restored = after
        restored.grossCredit = before.grossCredit
        restored.netCredit = before.netCredit
        #expect(restored == before)
        #expect(others(report) == others(baseline))
    }

    @Test("alter a fee: interchange one minor unit higher, net one lower, gross unchanged")
    func alterFee() throws {
        let baseline = try clean()
        let (report, _) = try settle(FaultConfiguration(alterFee: FaultKnob(targets: [Self.target])))
        let before = targeted(baseline)[0]
        let after = try #require(targeted(report).first)
        #expect(after.interchange?.minorUnits == (before.interchange?.minorUnits ?? 0) + 1)
        #expect(after.schemeFees == before.schemeFees && after.markup == before.markup)
        #expect(after.grossCredit == before.grossCredit)
        #expect(after.signedNetMinorUnits == before.signedNetMinorUnits - 1)
        #expect(after.signedNetMinorUnits == after.signedGrossMinorUnits - after.totalFeesMinorUnits)
        #expect(others(report) == others(baseline))
    }

    @Test("move a line to the next batch: absent here, present (renumbered) in the next batch and its payout")
    func moveToNextBatch() throws {
        let baseline = try clean()
        var (report, scenario) = try settle(FaultConfiguration(moveToNextBatch: FaultKnob(targets: [Self.target])))
        #expect(targeted(report).isEmpty && others(report) == others(baseline))
        #expect(report.sumOfNets == report.payout.amount.minorUnits)
        // The item is in flight: it cannot be submitted again.
        let item = try #require(scenario.batch.items.first { $0.modificationReference == Self.target })
        #expect(
            errorCode { try scenario.state.submitBatch(SettlementBatchRequest(batchReference: "again", currency: .usd, items: [item]), now: monday) }
                == .alreadySettled
        )
        let next = try scenario.state.submitBatch(
            SettlementBatchRequest(batchReference: "next", currency: .usd, items: []),
            now: at("2025-01-07", 20)
        )
        #expect(next.batchNumber == report.batchNumber + 1)
        var moved = targeted(baseline)[0]
        moved.batchNumber = next.batchNumber
        #expect(next.itemLines == [moved])
        #expect(next.payout.amount.minorUnits == moved.signedNetMinorUnits)
    }

    @Test("short-pay the payout: lines unchanged, payout and deposit below the sum of nets")
    func shortPay() throws {
        let baseline = try clean()
        let faults = FaultConfiguration(shortPayPayout: FaultKnob(targets: ["batch-2025-01-06"]), shortPaymentMinorUnits: 250)
        let (report, scenario) = try settle(faults)
        #expect(report.itemLines == baseline.itemLines)
        #expect(report.payout.amount.minorUnits == report.sumOfNets - 250)
        #expect(report.payoutLine?.netDebit == report.payout.amount)
        #expect(try scenario.state.payout(batchNumber: report.batchNumber).amount == report.payout.amount)
    }

    @Test("probability knobs are deterministic under the seed and vary with it")
    func probabilistic() throws {
        let half = Rate(numerator: 1, denominator: 2)
        let faults = FaultConfiguration(
            dropLine: FaultKnob(probability: half),
            duplicateLine: FaultKnob(probability: half),
            alterAmount: FaultKnob(probability: half),
            alterFee: FaultKnob(probability: half)
        )
        func run(seed: UInt64) throws -> (SettlementReport, [InjectedFault]) {
            var scenario = try SettlementScenario(seed: seed, configuration: AcquirerModelConfiguration(faults: faults))
            let report = try scenario.settle()
            return (report, scenario.state.injectedFaults)
        }
        let (a, faultsA) = try run(seed: 5)
        let (b, faultsB) = try run(seed: 5)
        #expect(a == b && faultsA == faultsB)
        #expect(!faultsA.isEmpty)
        var kindsBySeed: Set<[FaultKind]> = []
        for seed in UInt64(1)...8 {
            let (report, injected) = try run(seed: seed)
            kindsBySeed.insert(injected.map(\.kind))
            #expect(report.sumOfNets == report.payout.amount.minorUnits)
        }
        #expect(kindsBySeed.count > 1)
    }
}
