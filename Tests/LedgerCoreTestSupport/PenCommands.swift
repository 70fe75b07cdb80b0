import Foundation
import LedgerCore
import LedgerEngine

/// One product, the pen, and the command that reserves it: the smallest command the writer's decisions are tested with,
/// shared by the engine's tests (CommandDecisionsTests, no database) and the writer's (LedgerWriterTests, PostgreSQL).
package enum PenCommands {
    package static let pen = ProductID("pen")!
    package static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// The pen, listed with `stock` units: version 2 (listed, stock received), or 1 with none.
    package static func pen(stock: Int64) -> AggregateStates {
        var states = AggregateStates()
        let listed = ProductDecider.decide(
            .list(sku: nil, name: "Pen", description: "", imageFile: "pen.png", price: Money(minorUnits: 2500, currency: .usd), initialStock: stock),
            product: pen,
            state: nil,
            context: DecisionContext(now: t0)
        )
        for event in try! listed.get() { states.apply(.product(event)) }
        return states
    }

    /// Reserves one pen for `order` (the storefront's first step, reduced to the product).
    package static func reserve(_ order: String) -> LedgerCommand {
        LedgerCommand(reads: AggregateKeys(products: [pen]), now: t0, metadata: EventMetadata(actor: "test")) { states in
            let orderID = OrderID(order)!
            let product = states.products[pen]
            let events = try ProductDecider.decide(
                .reserve(order: orderID, quantity: 1),
                product: pen,
                state: product,
                context: DecisionContext(now: t0)
            ).get()
            return CommandPlan(
                plan: AppendPlan([
                    PlannedAppend(
                        streamID: pen.streamID,
                        expectedVersion: PlannedAppend.expectation(forVersion: product?.version ?? 0),
                        events: events.map(DomainEvent.product)
                    )
                ])
            )
        }
    }
}
