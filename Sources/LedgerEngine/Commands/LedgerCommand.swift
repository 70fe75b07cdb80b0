import Foundation
import LedgerCore
import LedgerMacros

/// The aggregates a command decides on: the writer gives it their states as the batch has left them.
@MemberwiseInit
package struct AggregateKeys: Sendable, Hashable {
    package var products: [ProductID] = []
    package var shippingMethods: [ShippingMethodID] = []
    package var orders: [OrderID] = []
    package var holds: [OrderID] = []

    /// The keys whose streams are in `streams`.
    package func filtered(_ streams: Set<StreamID>) -> AggregateKeys {
        AggregateKeys(
            products: products.filter { streams.contains($0.streamID) },
            shippingMethods: shippingMethods.filter { streams.contains($0.streamID) },
            orders: orders.filter { streams.contains($0.streamID) },
            holds: holds.filter { streams.contains($0.holdStreamID) }
        )
    }

    /// Every stream named, once each, in a fixed order (products, methods, orders, holds).
    package var streams: [StreamID] {
        products.map(\.streamID) + shippingMethods.map(\.streamID) + orders.map(\.streamID) + holds.map(\.holdStreamID)
    }
}

/// What a command decided: the plan to append, streams outside the domain's aggregates committed with it
/// (an Apple Pay token's marker), and the shipping contacts of the orders it opens (stored in the same
/// transaction). A plan with no events, and no stream beside it, appends nothing and answers with the states it was
/// decided on; a stream beside an empty plan is appended alone (a dispute's events that leave its order as it is).
@MemberwiseInit
package struct CommandPlan: Sendable {
    package var plan: AppendPlan
    package var alsoAppending: [StreamAppend] = []
    package var contacts: [ContactRow] = []
}

/// What a command decided, as a value its caller switches on (issue 56: decisions no longer leave commands as thrown
/// errors). `Signal` is what the caller learns besides the append: which way the decision went.
package enum Decision<Signal: Sendable>: Sendable {
    /// Append the plan (an empty plan appends nothing), and tell the caller `signal`.
    case append(CommandPlan, Signal)
    /// Append nothing, whatever the states it was decided on: the decision is final.
    case nothing(Signal)
    /// Append nothing because of what the states say (too young to judge, behind the acquirer, a refused expiry).
    /// Decided on a state the writer remembered and nothing in its batch moved, it is not trusted yet: the writer
    /// reads the streams fresh and decides again first, exactly as for a refusal thrown by `decide`.
    case refuse(Signal)

    /// The same decision with its signal type-erased, as the writer carries it.
    package var erased: Decision<any Sendable> {
        switch self {
        case .append(let plan, let signal): .append(plan, signal)
        case .nothing(let signal): .nothing(signal)
        case .refuse(let signal): .refuse(signal)
        }
    }
}

/// A domain decision the writer makes inside its batch, in queue order, against the states of ``reads`` as the
/// batch has built them so far: ten payments for one product in one batch are ten decisions on ten successive
/// states and one commit. `decide` is pure and quick (it runs on the writer's loop); it returns a ``Decision`` (the
/// caller's signal travels with it), or throws to reject the request itself (the error reaches the caller as it
/// is, and nothing is appended). Streams the plan appends to but the command does not read (a new order:
/// `.noStream`) are checked by the database as any append is.
package struct LedgerCommand: Sendable {
    package var reads: AggregateKeys
    /// Those of ``reads`` the plan may not append to but depends on (the shipping method whose price an order
    /// takes): the append is refused when one of them moved since it was read, and the command decided again.
    package var checked: AggregateKeys = .init()
    /// The decision's time (the caller's injected clock): events' effective time, and the context of rules.
    package var now: Date
    package var metadata: EventMetadata
    package var idempotency: IdempotencyKey? = nil
    /// States of some of ``reads`` the caller holds already: used instead of loading them when the batch does not
    /// know them yet and their versions are the ones this writer last saw committed (or it saw none).
    package var given: AggregateStates = .init()
    /// The decision, its signal type-erased (``Signalled`` keeps the type for the caller).
    package var decide: @Sendable (AggregateStates) throws -> Decision<any Sendable>

    /// A command whose decision is a plan and nothing more to tell (an empty plan: nothing to append).
    package init(
        reads: AggregateKeys,
        checked: AggregateKeys = .init(),
        now: Date,
        metadata: EventMetadata,
        idempotency: IdempotencyKey? = nil,
        given: AggregateStates = .init(),
        decide: @escaping @Sendable (AggregateStates) throws -> CommandPlan
    ) {
        self.init(
            reads: reads,
            checked: checked,
            now: now,
            metadata: metadata,
            idempotency: idempotency,
            given: given,
            deciding: { states in .append(try decide(states), ()) }
        )
    }

    /// A command deciding a ``Decision`` with any signal (``Signalled`` builds these, typed).
    fileprivate init(
        reads: AggregateKeys,
        checked: AggregateKeys,
        now: Date,
        metadata: EventMetadata,
        idempotency: IdempotencyKey?,
        given: AggregateStates,
        deciding: @escaping @Sendable (AggregateStates) throws -> Decision<any Sendable>
    ) {
        self.reads = reads
        self.checked = checked
        self.now = now
        self.metadata = metadata
        self.idempotency = idempotency
        self.given = given
        self.decide = deciding
    }
}

/// A command whose decision tells its caller a `Signal` (``Decision``): the runner answers with the signal typed, so
/// the caller switches on it instead of following `catch` clauses.
package struct Signalled<Signal: Sendable>: Sendable {
    package var command: LedgerCommand

    package init(
        reads: AggregateKeys,
        checked: AggregateKeys = .init(),
        now: Date,
        metadata: EventMetadata,
        idempotency: IdempotencyKey? = nil,
        given: AggregateStates = .init(),
        decide: @escaping @Sendable (AggregateStates) throws -> Decision<Signal>
    ) {
        command = LedgerCommand(
            reads: reads,
            checked: checked,
            now: now,
            metadata: metadata,
            idempotency: idempotency,
            given: given,
            deciding: { states in try decide(states).erased }
        )
    }
}

/// A command's answer once its batch committed.
@MemberwiseInit
package struct CommandOutcome: Sendable {
    /// The writer's answer; nil when the decision appended nothing.
    package var result: AppendResult?
    /// The states after the append as the plan's events made them (the states decided on when nothing was
    /// appended); nil when the append was a replay of an earlier request with the same idempotency key.
    package var states: AggregateStates?
    /// The states of what the command read, as the decision that was appended (or answered) saw them.
    package var decidedOn: AggregateStates
    /// The decision's signal (type-erased; ``Signalled`` commands' runners hand it back typed).
    package var signal: any Sendable = ()
    /// The decision was ``Decision/refuse(_:)`` (on states read fresh, or moved by this batch).
    package var refused: Bool = false
}

/// Where the writer takes the states commands decide on, and tells what its commits produced.
package protocol CommandStateSource: Sendable {
    /// The states of `keys`: the remembered ones as they are, except the streams in `fresh`, which are caught up
    /// with the log. A stream with no events has no state.
    func states(_ keys: AggregateKeys, fresh: Set<StreamID>) async throws -> AggregateStates
    /// States a commit produced, for the next decisions.
    func remember(_ states: AggregateStates)
}

extension AggregateStates {
    /// The version of each state of `keys` here, aligned with ``AggregateKeys/streams`` (nil: no state here).
    package func versions(of keys: AggregateKeys) -> [Int64?] {
        keys.products.map { products[$0]?.version } + keys.shippingMethods.map { shippingMethods[$0]?.version }
            + keys.orders.map { orders[$0]?.version } + keys.holds.map { holds[$0]?.version }
    }

    /// The states of `keys` only (a command sees what it reads).
    package func restricted(to keys: AggregateKeys) -> AggregateStates {
        var view = AggregateStates()
        for id in keys.products { view.products[id] = products[id] }
        for id in keys.shippingMethods { view.shippingMethods[id] = shippingMethods[id] }
        for id in keys.orders { view.orders[id] = orders[id] }
        for id in keys.holds { view.holds[id] = holds[id] }
        return view
    }

    /// Takes `other`'s states over these (the later states win).
    package mutating func merge(_ other: AggregateStates) {
        products.merge(other.products) { _, later in later }
        shippingMethods.merge(other.shippingMethods) { _, later in later }
        orders.merge(other.orders) { _, later in later }
        holds.merge(other.holds) { _, later in later }
    }
}
