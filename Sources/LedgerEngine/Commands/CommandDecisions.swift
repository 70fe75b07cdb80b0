import LedgerCore

/// What a caller of the writer gets back: an append's result, or a command's outcome.
package enum WriterAnswer: Sendable {
    case appended(AppendResult)
    case decided(CommandOutcome)

    /// What the writer appended or replayed for it; nil when a decision appended nothing.
    package var result: AppendResult? {
        switch self {
        case .appended(let result): result
        case .decided(let outcome): outcome.result
        }
    }
}

/// One batch's commands decided in queue order, each on the states the batch has built so far — no I/O here.
///
/// ``LedgerWriter`` loads what a command reads that the batch does not know yet (``unknown(_:)`` →
/// ``loaded(_:for:fresh:)``), then ``decide(_:source:)``. An accepted decision becomes an append request for the
/// ``BatchPlanner`` (exact expectations: the versions of the states decided on) and its states are what the next
/// command sees. A refusal decided on a remembered state that nothing in this batch has moved is not trusted
/// yet: ``decide(_:source:)`` names those streams, the writer catches them up with the log and calls
/// ``decideAgain(_:source:)``. Plain requests (``add(_:)``) go to the planner as they are; a command behind one
/// that moved its stream is refused by the planner (`.versionConflict`) and decided again by its runner.
package struct CommandDecisions {
    private enum Item {
        /// The plain request at this index of ``requests``.
        case request(Int)
        /// A command's request at this index of ``requests``, the states after it, the streams it appends to, and its
        /// decision's signal.
        case command(
            Int,
            before: AggregateStates,
            after: AggregateStates,
            appended: Set<StreamID>,
            source: any CommandStateSource,
            signal: any Sendable
        )
        /// A command that decided to append nothing (``Decision/nothing(_:)``, an empty plan, or a
        /// ``Decision/refuse(_:)`` that stands), answered with the states it decided on and its signal.
        case nothing(AggregateStates, signal: any Sendable, refused: Bool)
        /// A command that threw (or whose request cannot be appended).
        case refused(any Error)
    }

    /// Where the events' ids come from (the writer's ``IDSource``).
    private let ids: any IDSource

    package init(ids: any IDSource = RandomIDs()) { self.ids = ids }

    private var items: [Item] = []
    package private(set) var requests: [AppendRequest] = []
    package private(set) var hasCommands = false
    /// The states of every stream the batch knows, as its decisions so far left them.
    private var states = AggregateStates()
    /// Streams whose state is in ``states`` (a stream with no events has none, and is known all the same).
    private var known: Set<StreamID> = []
    /// Streams read fresh from the log in this batch, and streams this batch's decisions moved.
    private var fresh: Set<StreamID> = []
    private var moved: Set<StreamID> = []

    package mutating func add(_ request: AppendRequest) {
        items.append(.request(requests.count))
        requests.append(request)
    }

    /// The keys among `keys` whose state the batch does not know yet.
    package func unknown(_ keys: AggregateKeys) -> AggregateKeys {
        keys.filtered(Set(keys.streams).subtracting(known))
    }

    /// States loaded for `keys` (those read fresh from the log in `fresh`); they replace what the batch knew.
    package mutating func loaded(_ loaded: (AggregateStates, AggregateKeys, fresh: Set<StreamID>)) {
        self.loaded(loaded.0, for: loaded.1, fresh: loaded.fresh)
    }

    /// States loaded for `keys` (those read fresh from the log in `freshStreams`); they replace what the batch knew.
    package mutating func loaded(_ loaded: AggregateStates, for keys: AggregateKeys, fresh freshStreams: Set<StreamID>) {
        for id in keys.products { states.products[id] = loaded.products[id] }
        for id in keys.shippingMethods { states.shippingMethods[id] = loaded.shippingMethods[id] }
        for id in keys.orders { states.orders[id] = loaded.orders[id] }
        for id in keys.holds { states.holds[id] = loaded.holds[id] }
        known.formUnion(keys.streams)
        fresh.formUnion(freshStreams)
    }

    /// Decides `command` on the batch's states. Returns the keys to catch up with the log when it refused (threw, or
    /// decided ``Decision/refuse(_:)``) on remembered states nothing in this batch moved (then call
    /// ``decideAgain(_:source:)``); nil when decided.
    package mutating func decide(_ command: LedgerCommand, source: any CommandStateSource) -> AggregateKeys? {
        hasCommands = true
        let untrusted = command.reads.streams.filter { !fresh.contains($0) && !moved.contains($0) }
        let refreshable = untrusted.isEmpty ? nil : command.reads.filtered(Set(untrusted))
        return decide(command, on: states.restricted(to: command.reads), source: source, refreshable: refreshable)
    }

    /// Decides `command` again after its streams were caught up; a refusal now stands.
    package mutating func decideAgain(_ command: LedgerCommand, source: any CommandStateSource) {
        _ = decide(command, on: states.restricted(to: command.reads), source: source, refreshable: nil)
    }

    /// Records `command`'s decision on `view`, unless it refused and `refreshable` names streams to read fresh first
    /// (returned, nothing recorded).
    private mutating func decide(
        _ command: LedgerCommand,
        on view: AggregateStates,
        source: any CommandStateSource,
        refreshable: AggregateKeys?
    ) -> AggregateKeys? {
        let decision: Decision<any Sendable>
        do {
            decision = try command.decide(view)
        } catch {
            if let refreshable { return refreshable }
            items.append(.refused(error))
            return nil
        }
        switch decision {
        case .append(let plan, let signal): record(plan, signal: signal, of: command, on: view, source: source)
        case .nothing(let signal): items.append(.nothing(view, signal: signal, refused: false))
        case .refuse(let signal):
            if let refreshable { return refreshable }
            items.append(.nothing(view, signal: signal, refused: true))
        }
        return nil
    }

    private mutating func record(
        _ decided: CommandPlan,
        signal: any Sendable,
        of command: LedgerCommand,
        on view: AggregateStates,
        source: any CommandStateSource
    ) {
        // Nothing to append: no aggregate's events, and no stream beside them (a dispute's events may go alone).
        guard !decided.plan.isEmpty || !decided.alsoAppending.isEmpty else {
            items.append(.nothing(view, signal: signal, refused: false))
            return
        }
        do {
            var (request, after) = try view.appendRequest(
                for: decided.plan.appends,
                now: command.now,
                metadata: command.metadata,
                idempotency: command.idempotency,
                ids: ids
            )
            request.streams += decided.alsoAppending
            request.contacts += decided.contacts
            let appended = Set(decided.plan.appends.map(\.streamID))
            let checked = command.checked.filtered(Set(command.checked.streams).subtracting(appended))
            request.unchanged = zip(checked.streams, view.versions(of: checked)).map { StreamVersion(streamID: $0, version: $1 ?? 0) }
            try request.validate()
            items.append(.command(requests.count, before: view, after: after, appended: appended, source: source, signal: signal))
            requests.append(request)
            states.merge(after)
            known.formUnion(appended)
            moved.formUnion(appended)
        } catch {
            items.append(.refused(error))
        }
    }

    /// Every caller's answer, in queue order, from the planner's results for ``requests``, and the states of the
    /// commands whose appends committed, for their sources to remember (in queue order: later states win).
    package func answers(
        _ results: [Result<AppendResult, AppendError>]
    ) -> (answers: [Result<WriterAnswer, any Error>], remember: [(any CommandStateSource, AggregateStates)]) {
        var remember: [(any CommandStateSource, AggregateStates)] = []
        let answers = items.map { item -> Result<WriterAnswer, any Error> in
            switch item {
            case .request(let index):
                return results[index].map(WriterAnswer.appended).mapError { $0 }
            case .command(let index, let before, let after, let appended, let source, let signal):
                switch results[index] {
                case .failure(let error): return .failure(error)
                case .success(let result) where result.replayed:
                    return .success(.decided(CommandOutcome(result: result, states: nil, decidedOn: before, signal: signal)))
                case .success(let result):
                    // Only the appended streams: a state read but not appended may carry the effects of a refused
                    // request earlier in the batch.
                    remember.append((source, after.only(appended)))
                    return .success(.decided(CommandOutcome(result: result, states: after, decidedOn: before, signal: signal)))
                }
            case .nothing(let states, let signal, let refused):
                return .success(.decided(CommandOutcome(result: nil, states: states, decidedOn: states, signal: signal, refused: refused)))
            case .refused(let error):
                return .failure(error)
            }
        }
        return (answers, remember)
    }
}

extension AggregateStates {
    /// The states of `streams` only.
    package func only(_ streams: Set<StreamID>) -> AggregateStates {
        var kept = AggregateStates()
        for (id, state) in products where streams.contains(id.streamID) { kept.products[id] = state }
        for (id, state) in shippingMethods where streams.contains(id.streamID) { kept.shippingMethods[id] = state }
        for (id, state) in orders where streams.contains(id.streamID) { kept.orders[id] = state }
        for (id, state) in holds where streams.contains(id.holdStreamID) { kept.holds[id] = state }
        return kept
    }
}
