import Foundation
import LedgerTestSupport
import Synchronization
import Testing

/// The test suite's machine gate (LedgerTestSupport/MachineShare.swift) on its own, with limits of seconds: a hung
/// shared test is named, and it no longer holds the `.alone` tests (and, through them, every slot of Swift Testing's
/// width limit) for the rest of the run.
@Suite struct MachineGateTests {
    @Test func aloneTestsRunOnceTheSharedOnesStandStillAndAHungTestIsNamed() async throws {
        let gate = MachineGate(label: "MachineGateTests", hangLimit: .seconds(1), stallLimit: .seconds(2), watchEvery: .milliseconds(100))
        let release = Barrier(parties: 2)
        let admitted = Barrier(parties: 2)
        let aloneRan = Recorder()
        let stuck = Task {
            await withKnownIssue("the gate's alarm names the hung test") {
                try await gate.with(.shared, name: "stuck") {
                    await admitted.arrive()
                    await release.arrive()
                }
            }
        }
        await admitted.arrive()
        let alone = Task {
            try await gate.with(.alone, name: "alone") { aloneRan.note("alone") }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(aloneRan.notes.isEmpty, "an alone test waits while a shared one runs (and moves)")
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while aloneRan.notes.isEmpty, clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(aloneRan.notes == ["alone"], "the alone test ran once no test had finished for the stall limit")
        await release.arrive()
        await stuck.value
        try await alone.value
        #expect(await gate.describe() == "gate: 0 admitted, sharing 0, alone false, waiting: 0 shared, 0 alone")
    }

    @Test func anAloneTestWaitsForSharedOnesThatFinish() async throws {
        let gate = MachineGate(label: "MachineGateTests", hangLimit: .seconds(60), stallLimit: .seconds(60), watchEvery: .milliseconds(100))
        let release = Barrier(parties: 2)
        let admitted = Barrier(parties: 2)
        let order = Recorder()
        let shared = Task {
            try await gate.with(.shared, name: "shared") {
                await admitted.arrive()
                await release.arrive()
                order.note("shared")
            }
        }
        await admitted.arrive()
        let alone = Task { try await gate.with(.alone, name: "alone") { order.note("alone") } }
        try await Task.sleep(for: .milliseconds(300))
        await release.arrive()
        try await shared.value
        try await alone.value
        #expect(order.notes == ["shared", "alone"])
    }
}

/// What the tests' bodies did, in order.
private final class Recorder: Sendable {
    private let lines = Mutex<[String]>([])
    func note(_ line: String) { lines.withLock { $0.append(line) } }
    var notes: [String] { lines.withLock { $0 } }
}

/// The tests' barrier: a party that never comes ends the wait at its limit, with an issue saying how many arrived.
@Suite struct BarrierTests {
    @Test func aWaitForAPartyThatNeverComesEndsAtItsLimitWithAnIssue() async {
        let barrier = Barrier(parties: 2)
        let clock = ContinuousClock()
        let started = clock.now
        await withKnownIssue("one of two arrived") {
            await barrier.arrive(within: .milliseconds(300))
        }
        #expect(clock.now - started >= .milliseconds(300))
        #expect(barrier.arrivals == 1)
    }

    @Test func partiesThatAllComePassTogetherWithoutAnIssue() async {
        let barrier = Barrier(parties: 3)
        await withTaskGroup { group in
            for _ in 0..<3 { group.addTask { await barrier.arrive(within: .seconds(60)) } }
        }
        #expect(barrier.arrivals == 3)
        await barrier.arrive(within: .seconds(60))  // after the meeting, at once
    }
}
