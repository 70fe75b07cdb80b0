import Foundation
import LedgerAcquirer
import LedgerCore
import Testing

/// Settling a batch page by page (what the acquirer service does, so that a day of a million captures
/// never sits in memory as arrays) gives the same bytes as settling it in one piece.
struct PagedSettlementTests {
    /// Every knob at a probability, so the seeded generator is drawn from on every line.
    static let faults = FaultConfiguration(
        dropLine: FaultKnob(probability: Rate(numerator: 1, denominator: 7)),
        duplicateLine: FaultKnob(probability: Rate(numerator: 1, denominator: 5)),
        alterAmount: FaultKnob(probability: Rate(numerator: 1, denominator: 4)),
        alterFee: FaultKnob(probability: Rate(numerator: 1, denominator: 3)),
        moveToNextBatch: FaultKnob(probability: Rate(numerator: 1, denominator: 6)),
        shortPayPayout: FaultKnob(probability: Rate(numerator: 1, denominator: 2))
    )

    /// Settles `request` at `now` in pages of `size`, the report's lines kept by the caller.
    static func inPages(
        _ state: inout AcquirerModelState,
        _ request: SettlementBatchRequest,
        size: Int,
        now: Date
    ) throws -> (receipt: SettlementReceipt, lines: [SettlementReportLine]) {
        let pages = stride(from: 0, to: request.items.count, by: size).map { Array(request.items[$0..<min(request.items.count, $0 + size)]) }
        var settlement = try state.beginSettlement(request.header, now: now)
        for page in pages { try state.check(page, in: &settlement) }
        var lines: [SettlementReportLine] = []
        switch try state.startSettling(&settlement) {
        case .settledBefore(let receipt): return (receipt, [])
        case .settling(let carried): lines = carried
        }
        for page in pages { lines += state.settlePage(page, in: &settlement) }
        let (receipt, payoutLine) = state.finishSettling(settlement, keeping: nil)
        return (receipt, lines + [payoutLine])
    }

    /// Two batches (the second takes the lines the first moved on), each in one piece and in pages
    /// of 1, 2 and 4: the same receipts, the same lines, the same faults and, once the lines are put
    /// back, the same state bytes.
    @Test(arguments: [1, 2, 4])
    func pagesEqualOnePiece(size: Int) throws {
        var whole = try SettlementScenario(seed: 9, configuration: AcquirerModelConfiguration(faults: Self.faults))
        var paged = whole
        let first = whole.batch
        let second = SettlementBatchRequest(batchReference: "batch-2", currency: .usd, items: [])
        let reports = [try whole.state.submitBatch(first, now: at("2025-01-06", 20)), try whole.state.submitBatch(second, now: at("2025-01-07", 20))]
        let results = [
            try Self.inPages(&paged.state, first, size: size, now: at("2025-01-06", 20)),
            try Self.inPages(&paged.state, second, size: size, now: at("2025-01-07", 20)),
        ]
        #expect(!whole.state.injectedFaults.isEmpty)
        #expect(paged.state.injectedFaults == whole.state.injectedFaults)
        for (report, result) in zip(reports, results) {
            #expect(result.receipt == SettlementReceipt(report))
            #expect(result.lines == report.lines)
            #expect(paged.state.reportLinesReleased(batchNumber: report.batchNumber) == true)
            #expect(throws: AcquirerError.self) { _ = try paged.state.reportLines(batchNumber: report.batchNumber, from: 0, count: 10) }
            paged.state.restoreReportLines(batchNumber: report.batchNumber, result.lines)
        }
        #expect(try paged.state.snapshot() == whole.state.snapshot())
        // The same batch again: the first receipt, nothing changes; other items under its reference: refused.
        let before = try paged.state.snapshot()
        #expect(try Self.inPages(&paged.state, first, size: size, now: at("2025-01-08", 20)).receipt == SettlementReceipt(reports[0]))
        #expect(try paged.state.snapshot() == before)
        var other = first
        other.items.removeLast()
        #expect(errorCode { try Self.inPages(&paged.state, other, size: size, now: at("2025-01-08", 20)) } == .duplicateReference)
    }

    /// A refusal found on a later page changes nothing, as in one piece: every page is checked first.
    @Test func aLaterPagesRefusalChangesNothing() throws {
        var scenario = try SettlementScenario()
        var request = scenario.batch
        request.items.append(SettlementItem(kind: .capture, authorizationReference: "order-9", modificationReference: "cap-order-9", amount: usd(1)))
        let before = try scenario.state.snapshot()
        #expect(errorCode { try Self.inPages(&scenario.state, request, size: 2, now: at("2025-01-06", 20)) } == .unknownReference)
        #expect(try scenario.state.snapshot() == before)
        let report = try scenario.settle()
        #expect(report.itemLines.count == scenario.batch.items.count)
    }
}

/// The snapshot is written and read a record at a time: parts of any size concatenate to the same
/// bytes, a decoder fed any chunking restores the same state, and a version-1 snapshot (one JSON
/// document) still restores.
struct SnapshotFormatTests {
    @Test func partsAndChunksRoundTrip() throws {
        var scenario = try SettlementScenario(configuration: AcquirerModelConfiguration(faults: PagedSettlementTests.faults))
        _ = try scenario.settle()
        _ = try scenario.state.authorize(authorization("declined-1", usd(100), token: "tok_chargeDeclined"), now: monday + 10_800)
        let state = scenario.state
        let whole = try state.snapshot()
        #expect(whole.starts(with: Data("{\"acquirerState\":2}\n".utf8)))
        var encoder = SnapshotEncoder(state)
        var parts: [Data] = []
        while let part = try encoder.next(maximumBytes: 64) { parts.append(part) }
        #expect(parts.count > 10)
        #expect(parts.reduce(Data(), +) == whole)
        for chunk in [1, 7, 4096] {
            var decoder = SnapshotDecoder()
            for start in stride(from: 0, to: whole.count, by: chunk) { try decoder.feed(whole[start..<min(whole.count, start + chunk)]) }
            #expect(try decoder.finish() == state)
        }
        let encoder1 = JSONEncoder()
        encoder1.outputFormatting = [.sortedKeys]
        #expect(try AcquirerModelState(snapshot: encoder1.encode(state)) == state)
        var cut = SnapshotDecoder()
        try cut.feed(whole.dropLast(5))
        var refused = false
        do { _ = try cut.finish() } catch is AcquirerSnapshotError { refused = true }
        #expect(refused, "a snapshot cut short must not restore")
    }
}
