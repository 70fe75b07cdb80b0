import Testing

/// Given / when / then for a decider, after Emmett's `DeciderSpecification`:
///
/// ```swift
/// spec.given([listed, received]).when(.reserve(order: a, quantity: 3)).then([reserved])
/// spec.given([]).when(.receiveStock(quantity: 1)).thenRejects(.unknownProduct(clock))
/// ```
///
/// The given events are folded with `evolve` from `initialState`, the command is decided against the
/// result, and the outcome is compared with the expectation in one `#expect`. A decision that comes out
/// the other way (events where a rejection was expected, or the reverse) is recorded as an issue.
public struct DeciderSpec<State: Sendable, Command: Sendable, Event: Equatable & Sendable, Rejection: Error & Equatable>: Sendable {
    let decide: @Sendable (Command, State) -> Result<[Event], Rejection>
    let evolve: @Sendable (State, Event) -> State
    let initialState: State

    /// - Parameters:
    ///   - decide: the decider: a command and the current state to events or a rejection.
    ///   - evolve: the fold step: a state and one event to the next state.
    ///   - initialState: the state of a stream with no events.
    public init(
        decide: @escaping @Sendable (Command, State) -> Result<[Event], Rejection>,
        evolve: @escaping @Sendable (State, Event) -> State,
        initialState: State
    ) {
        self.decide = decide
        self.evolve = evolve
        self.initialState = initialState
    }

    /// The stream's history before the command.
    public func given(_ events: [Event]) -> Given {
        Given(spec: self, state: events.reduce(initialState, evolve))
    }

    /// A state folded from the given events, waiting for its command.
    public struct Given: Sendable {
        let spec: DeciderSpec
        /// The state the given events fold to.
        public let state: State

        /// Decides `command` against the given state.
        public func when(_ command: Command) -> When {
            When(outcome: spec.decide(command, state))
        }
    }

    /// A decision, waiting to be checked.
    public struct When: Sendable {
        /// What the decider answered.
        public let outcome: Result<[Event], Rejection>

        /// Expects exactly `expected` (in order); `[]` expects an accepted command that changes nothing.
        public func then(_ expected: [Event], sourceLocation: SourceLocation = #_sourceLocation) {
            switch outcome {
            case .success(let events):
                #expect(events == expected, sourceLocation: sourceLocation)
            case .failure(let rejection):
                Issue.record("expected the events \(expected), the command was rejected: \(rejection)", sourceLocation: sourceLocation)
            }
        }

        /// Expects the command to be rejected with exactly `expected`.
        public func thenRejects(_ expected: Rejection, sourceLocation: SourceLocation = #_sourceLocation) {
            switch outcome {
            case .success(let events):
                Issue.record("expected the rejection \(expected), the command was accepted: \(events)", sourceLocation: sourceLocation)
            case .failure(let rejection):
                #expect(rejection == expected, sourceLocation: sourceLocation)
            }
        }
    }
}
