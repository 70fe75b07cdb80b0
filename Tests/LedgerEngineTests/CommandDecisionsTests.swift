import Foundation
import LedgerCore
import LedgerCoreTestSupport
import LedgerEngine
import Testing

/// The writer's command decisions for one batch, without PostgreSQL: commands decided in queue order on the
/// states the batch has built, refusals on remembered states sent back for a fresh read, and what is remembered.
@Suite struct CommandDecisionsTests {
    static let pen = PenCommands.pen
    static let t0 = PenCommands.t0
    static func pen(stock: Int64) -> AggregateStates { PenCommands.pen(stock: stock) }
    static func reserve(_ order: String) -> LedgerCommand { PenCommands.reserve(order) }

    /// A source that must not be asked: the tests hand the decisions their states themselves.
    struct NoSource: CommandStateSource {
        func states(_ keys: AggregateKeys, fresh: Set<StreamID>) async throws -> AggregateStates {
            Issue.record("the decisions loaded by themselves")
            return AggregateStates()
        }
        func remember(_ states: AggregateStates) {}
    }

    static func appended(_ request: AppendRequest, at position: Int64) -> Result<AppendResult, AppendError> {
        .success(AppendResult(firstPosition: position, lastPosition: position, streams: []))
    }

    @Test func reservationsOfOneProductInOneBatchAreDecidedOnSuccessiveStatesUntilTheStockRunsOut() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        #expect(decisions.unknown(keys) == keys)
        decisions.loaded(Self.pen(stock: 3), for: keys, fresh: [Self.pen.streamID])
        #expect(decisions.unknown(keys) == AggregateKeys())
        for i in 1...5 { #expect(decisions.decide(Self.reserve("order-\(i)"), source: NoSource()) == nil) }

        // Three requests, each expecting the version the one before left; the pen is at version 2 after listing.
        #expect(decisions.requests.map { $0.streams.map(\.expectedVersion) } == [[.exact(2)], [.exact(3)], [.exact(4)]])
        #expect(decisions.requests.allSatisfy { $0.projections.map(\.key) == ["pen"] })
        let (answers, remember) = decisions.answers(decisions.requests.enumerated().map { Self.appended($1, at: Int64($0 + 1)) })
        #expect(answers.count == 5)
        #expect(answers.prefix(3).allSatisfy { if case .success(.decided(let outcome)) = $0 { outcome.result != nil } else { false } })
        for answer in answers.suffix(2) {
            guard case .failure(let error) = answer else {
                Issue.record("the fourth and fifth pens were sold: \(answer)")
                continue
            }
            guard case .insufficientStock(_, requested: 1, available: 0) = error as? ProductRejection else {
                Issue.record("refused for another reason: \(error)")
                continue
            }
        }
        // The states remembered are the pen after each sale, in order: the last one has all three reserved.
        #expect(remember.count == 3)
        #expect(remember.last?.1.products[Self.pen]?.available == 0)
        #expect(remember.last?.1.products[Self.pen]?.version == 5)
    }

    @Test func aRefusalOnARememberedStateIsDecidedAgainOnAFreshOne() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        decisions.loaded(Self.pen(stock: 0), for: keys, fresh: [])
        // Sold out as remembered: not trusted yet — another process may have received stock.
        #expect(decisions.decide(Self.reserve("order-1"), source: NoSource()) == keys)
        #expect(decisions.requests.isEmpty)
        var restocked = Self.pen(stock: 0)
        restocked.apply(.product(.stockReceived(StockReceived(productID: Self.pen, quantity: 1))))
        decisions.loaded(restocked, for: keys, fresh: [Self.pen.streamID])
        decisions.decideAgain(Self.reserve("order-1"), source: NoSource())
        #expect(decisions.requests.map { $0.streams.map(\.expectedVersion) } == [[.exact(2)]])
        // The next refusal is on a state read fresh in this batch: it stands.
        #expect(decisions.decide(Self.reserve("order-2"), source: NoSource()) == nil)
        let (answers, _) = decisions.answers([Self.appended(decisions.requests[0], at: 9)])
        #expect(answers.count == 2)
        if case .failure = answers[1] {} else { Issue.record("a second pen was sold: \(answers[1])") }
    }

    @Test func aRefusalAfterThisBatchMovedTheStreamStandsWithoutARead() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        decisions.loaded(Self.pen(stock: 1), for: keys, fresh: [])  // remembered, not read
        #expect(decisions.decide(Self.reserve("order-1"), source: NoSource()) == nil)
        // The batch sold the last one: its own decision is the newest truth this writer can have until it commits
        // (the commit's version check covers what the remembered state missed).
        #expect(decisions.decide(Self.reserve("order-2"), source: NoSource()) == nil)
        #expect(decisions.requests.count == 1)
    }

    @Test func aCommandThatDecidesNothingAppendsNothingAndIsAnsweredWithItsStates() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        decisions.loaded(Self.pen(stock: 1), for: keys, fresh: [])
        let nothing = LedgerCommand(reads: keys, now: Self.t0, metadata: EventMetadata()) { _ in CommandPlan(plan: AppendPlan([])) }
        #expect(decisions.decide(nothing, source: NoSource()) == nil)
        #expect(decisions.requests.isEmpty)
        let (answers, remember) = decisions.answers([])
        guard case .success(.decided(let outcome)) = answers.first else {
            Issue.record("\(answers)")
            return
        }
        #expect(outcome.result == nil)
        #expect(outcome.states?.products[Self.pen]?.version == 2)
        #expect(remember.isEmpty)
    }

    @Test func onlyTheStreamsACommandAppendedAreRememberedAndARefusedRequestRemembersNothing() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        decisions.loaded(Self.pen(stock: 2), for: keys, fresh: [Self.pen.streamID])
        #expect(decisions.decide(Self.reserve("order-1"), source: NoSource()) == nil)
        // Reads the pen (as order-1 left it) but appends only to another product's stream.
        let cup = ProductID("cup")!
        let note = LedgerCommand(reads: keys, now: Self.t0, metadata: EventMetadata()) { states in
            #expect(states.products[Self.pen]?.version == 3)
            let listed = try ProductDecider.decide(
                .list(sku: nil, name: "Cup", description: "", imageFile: "cup.png", price: Money(minorUnits: 2000, currency: .usd), initialStock: 1),
                product: cup,
                state: nil,
                context: DecisionContext(now: Self.t0)
            ).get()
            return CommandPlan(
                plan: AppendPlan([PlannedAppend(streamID: cup.streamID, expectedVersion: .noStream, events: listed.map(DomainEvent.product))])
            )
        }
        #expect(decisions.decide(note, source: NoSource()) == nil)
        #expect(decisions.requests.count == 2)
        // The planner refused the pen's sale (a process moved the pen first) and appended the cup.
        let (answers, remember) = decisions.answers([
            .failure(.versionConflict(stream: Self.pen.streamID, expected: .exact(2), actual: 3)),
            Self.appended(decisions.requests[1], at: 7),
        ])
        if case .failure(let error as AppendError) = answers[0] { #expect(error == .versionConflict) } else { Issue.record("\(answers[0])") }
        #expect(remember.count == 1)
        #expect(remember.first?.1.products[Self.pen] == nil, "the pen as the refused sale left it must not be remembered")
        #expect(remember.first?.1.products[cup]?.version == 2)
    }

    /// Sells one pen, or tells why not as a value (``Decision``): a refusal when none is left, nothing for a closed shop.
    static func sell(_ order: String, shopClosed: Bool = false) -> Signalled<String> {
        Signalled(reads: AggregateKeys(products: [pen]), now: t0, metadata: EventMetadata(actor: "test")) { states in
            if shopClosed { return .nothing("closed") }
            guard let product = states.products[pen], product.available > 0 else { return .refuse("sold out") }
            guard case .append(let plan, _) = try reserve(order).decide(states) else { return .nothing("no plan") }
            return .append(plan, "sold to \(order)")
        }
    }

    @Test func aRefusalDecidedAsAValueOnARememberedStateIsDecidedAgainOnAFreshOneAndReachesTheCallerAsAValue() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        decisions.loaded(Self.pen(stock: 0), for: keys, fresh: [])
        // Sold out as remembered: a `.refuse` is not trusted yet, exactly like a thrown refusal.
        #expect(decisions.decide(Self.sell("order-1").command, source: NoSource()) == keys)
        #expect(decisions.requests.isEmpty)
        var restocked = Self.pen(stock: 0)
        restocked.apply(.product(.stockReceived(StockReceived(productID: Self.pen, quantity: 1))))
        decisions.loaded(restocked, for: keys, fresh: [Self.pen.streamID])
        decisions.decideAgain(Self.sell("order-1").command, source: NoSource())
        #expect(decisions.requests.map { $0.streams.map(\.expectedVersion) } == [[.exact(2)]])
        // Now sold out on a state this batch moved: the refusal stands, and is answered as a value, not an error.
        #expect(decisions.decide(Self.sell("order-2").command, source: NoSource()) == nil)
        let (answers, _) = decisions.answers([Self.appended(decisions.requests[0], at: 9)])
        #expect(answers.count == 2)
        guard case .success(.decided(let sold)) = answers[0], case .success(.decided(let refused)) = answers[1] else {
            Issue.record("a decision reached its caller as an error: \(answers)")
            return
        }
        #expect(sold.signal as? String == "sold to order-1")
        #expect(!sold.refused)
        #expect(refused.signal as? String == "sold out")
        #expect(refused.refused)
        #expect(refused.result == nil)
    }

    @Test func nothingDecidedAsAValueIsFinalEvenOnARememberedState() throws {
        var decisions = CommandDecisions()
        let keys = AggregateKeys(products: [Self.pen])
        decisions.loaded(Self.pen(stock: 1), for: keys, fresh: [])  // remembered, not read
        #expect(decisions.decide(Self.sell("order-1", shopClosed: true).command, source: NoSource()) == nil)
        #expect(decisions.requests.isEmpty)
        let (answers, remember) = decisions.answers([])
        guard case .success(.decided(let outcome)) = answers.first else {
            Issue.record("\(answers)")
            return
        }
        #expect(outcome.signal as? String == "closed")
        #expect(!outcome.refused)
        #expect(outcome.result == nil)
        #expect(remember.isEmpty)
    }
}
