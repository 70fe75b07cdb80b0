/// The adapter's circuit breaker as a pure state machine: closed until `failureThreshold` calls in a
/// row fail, then open (every call refused at once, without touching the network) for `openFor`,
/// then half-open: one trial call decides — success closes it, failure opens it again.
///
/// Times are passed in (`ContinuousClock.Instant`), so the machine is deterministic under test.
public struct CircuitBreaker: Sendable, Hashable {
    public enum State: Int, Sendable, Hashable {
        case closed = 0
        case halfOpen = 1
        case open = 2
    }

    public let failureThreshold: Int
    public let openFor: Duration
    public private(set) var state: State = .closed
    private var consecutiveFailures = 0
    private var openedAt: ContinuousClock.Instant?
    private var trialInFlight = false

    public init(failureThreshold: Int = 5, openFor: Duration = .seconds(5)) {
        precondition(failureThreshold >= 1)
        self.failureThreshold = failureThreshold
        self.openFor = openFor
    }

    /// Whether a call may go out at `now`; moves open → half-open once `openFor` has passed.
    public mutating func permit(at now: ContinuousClock.Instant) -> Bool {
        switch state {
        case .closed: return true
        case .open:
            guard let openedAt, now - openedAt >= openFor else { return false }
            state = .halfOpen
            trialInFlight = true
            return true
        case .halfOpen:
            if trialInFlight { return false }
            trialInFlight = true
            return true
        }
    }

    /// The call reached the acquirer and got an answer (a refusal is an answer too).
    public mutating func recordSuccess() {
        state = .closed
        consecutiveFailures = 0
        openedAt = nil
        trialInFlight = false
    }

    /// The call could not be confirmed (transport failure, timeout, 5xx after its retries).
    public mutating func recordFailure(at now: ContinuousClock.Instant) {
        trialInFlight = false
        consecutiveFailures += 1
        if state == .halfOpen || consecutiveFailures >= failureThreshold {
            state = .open
            openedAt = now
        }
    }
}
