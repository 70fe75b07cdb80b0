import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import Testing

/// The command runner and the writer's batching loop, built without PostgreSQL (issue 56: they live in the engine, over
/// the `EventLog` and `StreamReads` ports): on the in-memory log, with a manual clock and seeded ids, the caller decides
/// where a batch ends (`commitQueued()`), as a simulation does.
@Suite struct EngineWriterTests {
    static let pen = PenCommands.pen
    static let t0 = PenCommands.t0

    /// Lists the pen with `stock` units.
    static func list(stock: Int64) -> LedgerCommand {
        LedgerCommand(reads: AggregateKeys(products: [pen]), now: t0, metadata: EventMetadata()) { states in
            let listed = ProductListed(
                productID: pen,
                sku: "pen",
                name: "Pen",
                description: "",
                imageFile: "pen.png",
                price: Money(minorUnits: 2500, currency: .usd)
            )
            let events: [DomainEvent] = [.product(.listed(listed)), .product(.stockReceived(StockReceived(productID: pen, quantity: stock)))]
            return CommandPlan(plan: AppendPlan([PlannedAppend(streamID: pen.streamID, expectedVersion: .noStream, events: events)]))
        }
    }

    /// Waits (bounded) until `count` requests are queued, then commits them as one batch.
    static func commit(_ count: Int, on writer: LedgerWriter) async throws {
        for _ in 0..<100_000 where writer.queuedCount < count { await Task.yield() }
        #expect(writer.queuedCount == count)
        #expect(await writer.commitQueued())
    }

    @Test func fiveSalesOfThreePensAreOneBatchOnTheInMemoryLogAndTheirDecisionsReachTheCallersAsValues() async throws {
        let log = InMemoryEventLog()
        let writer = LedgerWriter(log: log, clock: ManualClock(Self.t0), ids: SeededIDs(seed: 56))
        let runner = AggregateStore(writer: writer, store: log)

        async let listed = runner.run(Self.list(stock: 3))
        try await Self.commit(1, on: writer)
        #expect(try await listed.result != nil)
        let listedHead = await log.head().position
        #expect(listedHead == 2)

        // Five sales queued before the batch ends: decided one after the other on the stock the ones before left.
        let sales = Task {
            try await withThrowingTaskGroup(of: String.self) { group in
                for i in 1...5 {
                    group.addTask {
                        let sale = Signalled<String>(reads: AggregateKeys(products: [Self.pen]), now: Self.t0, metadata: EventMetadata()) {
                            states in
                            guard let pen = states.products[Self.pen], pen.available > 0 else { return .refuse("sold out") }
                            guard case .append(let plan, _) = try PenCommands.reserve("order-\(i)").decide(states) else {
                                return .nothing("no plan")
                            }
                            return .append(plan, "sold")
                        }
                        return try await runner.run(sale).signal
                    }
                }
                var signals: [String] = []
                for try await signal in group { signals.append(signal) }
                return signals.sorted()
            }
        }
        try await Self.commit(5, on: writer)
        #expect(try await sales.value == ["sold", "sold", "sold", "sold out", "sold out"])
        #expect(await log.head().position == listedHead + 3)
        #expect(try await runner.product(Self.pen)?.available == 0)
        #expect(writer.queuedCount == 0)
    }
}
