import LedgerCore
import Synchronization
import Testing

/// An acquirer that passes every call to `base` after awaiting `before(call)`, and hands back its answer after
/// awaiting `after(call)`: the test's way to hold a daemon at a chosen point, before the acquirer applies a call
/// or once it has applied it and before the daemon hears (a ``Barrier`` there makes two daemons overlap for
/// certain, without sleeps).
public struct InterposedAcquirer: Acquirer {
    /// The acquirer's operations, as `before` sees them.
    public enum Call: Hashable, Sendable {
        case authorize, increment, capture, reverse, refund, query, queries, submitBatch, reportLines, payout, disputeNotifications
    }

    let base: any Acquirer
    let before: @Sendable (Call) async -> Void
    let after: @Sendable (Call) async -> Void

    public init(
        _ base: any Acquirer,
        before: @escaping @Sendable (Call) async -> Void = { _ in },
        after: @escaping @Sendable (Call) async -> Void = { _ in }
    ) {
        self.base = base
        self.before = before
        self.after = after
    }

    /// `call` between the two hooks.
    private func interposed<T>(_ call: Call, _ body: () async throws(AcquirerError) -> T) async throws(AcquirerError) -> T {
        await before(call)
        let answer = try await body()
        await after(call)
        return answer
    }

    public func authorize(_ request: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse {
        try await interposed(.authorize) { () async throws(AcquirerError) in try await base.authorize(request) }
    }

    public func increment(_ request: IncrementRequest) async throws(AcquirerError) -> ModificationResponse {
        try await interposed(.increment) { () async throws(AcquirerError) in try await base.increment(request) }
    }

    public func capture(_ request: CaptureRequest) async throws(AcquirerError) -> ModificationResponse {
        try await interposed(.capture) { () async throws(AcquirerError) in try await base.capture(request) }
    }

    public func reverse(_ request: ReversalRequest) async throws(AcquirerError) -> ModificationResponse {
        try await interposed(.reverse) { () async throws(AcquirerError) in try await base.reverse(request) }
    }

    public func refund(_ request: RefundRequest) async throws(AcquirerError) -> ModificationResponse {
        try await interposed(.refund) { () async throws(AcquirerError) in try await base.refund(request) }
    }

    public func query(merchantReference: String) async throws(AcquirerError) -> PaymentQueryResult {
        try await interposed(.query) { () async throws(AcquirerError) in try await base.query(merchantReference: merchantReference) }
    }

    public func query(merchantReferences: [String]) async throws(AcquirerError) -> [PaymentQueryResult] {
        try await interposed(.queries) { () async throws(AcquirerError) in try await base.query(merchantReferences: merchantReferences) }
    }

    public func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt {
        try await interposed(.submitBatch) { () async throws(AcquirerError) in try await base.submitBatch(header, pages: pages) }
    }

    public func reportLines(batchNumber: Int, from: Int, count: Int) async throws(AcquirerError) -> [SettlementReportLine] {
        try await interposed(.reportLines) { () async throws(AcquirerError) in
            try await base.reportLines(batchNumber: batchNumber, from: from, count: count)
        }
    }

    public func payout(batchNumber: Int) async throws(AcquirerError) -> PayoutNotice {
        try await interposed(.payout) { () async throws(AcquirerError) in try await base.payout(batchNumber: batchNumber) }
    }

    public func disputeNotifications(after: Int, limit: Int) async throws(AcquirerError) -> [AcquirerDisputeNotification] {
        try await interposed(.disputeNotifications) { () async throws(AcquirerError) in
            try await base.disputeNotifications(after: after, limit: limit)
        }
    }
}

/// A one-shot meeting point for `parties` tasks: each ``arrive(within:)`` waits until all have arrived, then
/// all go on together. Arrivals after that pass at once.
///
/// A party that never comes would leave the others waiting forever with nothing to wake them — no timer, no socket:
/// a test hung that way held its slot of the run to the end. So a wait is bounded: past `limit` the waiter records
/// an issue saying how many arrived, and goes on.
public final class Barrier: Sendable {
    private struct State {
        var arrived = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let parties: Int
    private let state = Mutex(State())

    public init(parties: Int) { self.parties = parties }

    /// How many tasks arrived so far.
    public var arrivals: Int { state.withLock { $0.arrived } }

    public func arrive(within limit: Duration = .seconds(120)) async {
        let number = Int.random(in: 0..<Int.max)
        let gaveUp = Atomic<Bool>(false)
        let timer = Task { [self] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            let waiter = state.withLock { $0.waiting.removeValue(forKey: number) }
            guard let waiter else { return }
            gaveUp.store(true, ordering: .sequentiallyConsistent)
            waiter.resume()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let release = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.arrived += 1
                if state.arrived < parties {
                    state.waiting[number] = continuation
                    return []
                }
                defer { state.waiting = [:] }
                return Array(state.waiting.values) + [continuation]
            }
            for waiter in release { waiter.resume() }
        }
        timer.cancel()
        if gaveUp.load(ordering: .sequentiallyConsistent) {
            Issue.record("a barrier of \(parties) waited \(limit) and \(arrivals) arrived: a party never came")
        }
    }
}

/// A switch a test turns on once and a hook turns off the first time it passes: "do this once, from now".
public final class OneShot: Sendable {
    private let armed = Atomic<Bool>(false)
    public init() {}
    /// From now on, the next ``fire()`` returns true (once).
    public func arm() { armed.store(true, ordering: .sequentiallyConsistent) }
    /// True exactly once after each ``arm()``.
    public func fire() -> Bool { armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged }
}
