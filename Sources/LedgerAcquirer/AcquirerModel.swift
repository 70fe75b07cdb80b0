import LedgerCore

import struct Foundation.Data
import struct Foundation.Date

/// The deterministic acquirer model behind the ``Acquirer`` interface: what the ledger talks to
/// instead of a real acquirer.
///
/// An actor around the pure ``AcquirerModelState``: it serialises commands and reads the time from
/// the injected clock once per command, and that is all it adds. Given the same seed,
/// configuration, commands and clock readings it produces byte-identical answers, reports and
/// snapshots. Persist ``snapshot()`` after each command (or periodically) and rebuild with
/// ``init(snapshot:clock:)`` to survive restarts.
public actor AcquirerModel: Acquirer {
    private var state: AcquirerModelState
    private let clock: @Sendable () -> Date

    /// - Parameters:
    ///   - seed: determines every identifier and every fault decision.
    ///   - configuration: cards, limits, hold lifetimes, pricing, calendar, faults.
    ///   - clock: the simulated (or real) clock; read once per command. Never `Date.init` in tests.
    public init(
        seed: UInt64,
        configuration: AcquirerModelConfiguration = AcquirerModelConfiguration(),
        clock: @escaping @Sendable () -> Date
    ) {
        self.state = AcquirerModelState(seed: seed, configuration: configuration)
        self.clock = clock
    }

    /// Resumes from a ``snapshot()``.
    public init(snapshot: Data, clock: @escaping @Sendable () -> Date) throws {
        self.state = try AcquirerModelState(snapshot: snapshot)
        self.clock = clock
    }

    /// The whole model state as canonical JSON.
    public func snapshot() throws -> Data { try state.snapshot() }

    /// A copy of the current state (for inspection and invariant checks).
    public var currentState: AcquirerModelState { state }

    /// Releases holds whose lifetime has passed by now (operations also do this lazily).
    public func expireHolds() { state.expireHolds(now: clock()) }

    /// The faults injected so far, in order.
    public var injectedFaults: [InjectedFault] { state.injectedFaults }

    public func authorize(_ request: AuthorizationRequest) throws(AcquirerError) -> AuthorizationResponse {
        try state.authorize(request, now: clock())
    }

    public func increment(_ request: IncrementRequest) throws(AcquirerError) -> ModificationResponse {
        try state.increment(request, now: clock())
    }

    public func capture(_ request: CaptureRequest) throws(AcquirerError) -> ModificationResponse {
        try state.capture(request, now: clock())
    }

    public func reverse(_ request: ReversalRequest) throws(AcquirerError) -> ModificationResponse {
        try state.reverse(request, now: clock())
    }

    public func refund(_ request: RefundRequest) throws(AcquirerError) -> ModificationResponse {
        try state.refund(request, now: clock())
    }

    public func query(merchantReference: String) throws(AcquirerError) -> PaymentQueryResult {
        state.query(merchantReference: merchantReference, now: clock())
    }

    public func query(merchantReferences: [String]) throws(AcquirerError) -> [PaymentQueryResult] {
        let now = clock()
        return merchantReferences.map { state.query(merchantReference: $0, now: now) }
    }

    /// Collects the batch's pages (the acquirer's side of the upload keeps them), then settles it.
    /// Other commands may run while a page is awaited; settling itself is one step.
    public func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt {
        var items: [SettlementItem] = []
        _ = try await header.forEachPage(pages) { (page, _) throws(AcquirerError) in items += page }
        return SettlementReceipt(try submitBatch(SettlementBatchRequest(header, items: items)))
    }

    /// Settles a whole batch at once (the model's own tests and tools).
    public func submitBatch(_ request: SettlementBatchRequest) throws(AcquirerError) -> SettlementReport {
        try state.submitBatch(request, now: clock())
    }

    public func reportLines(batchNumber: Int, from: Int, count: Int) throws(AcquirerError) -> [SettlementReportLine] {
        try state.reportLines(batchNumber: batchNumber, from: from, count: count)
    }

    public func payout(batchNumber: Int) throws(AcquirerError) -> PayoutNotice {
        try state.payout(batchNumber: batchNumber)
    }

    public func disputeNotifications(after: Int, limit: Int) throws(AcquirerError) -> [AcquirerDisputeNotification] {
        try state.disputeNotifications(after: after, limit: limit, now: clock())
    }
}

/// An acquirer that hands every call to a model except those it implements itself: the daemon's
/// durable model (settlement answers saved before they are returned) and the tests' fault
/// injectors (a crash around one call). Conforming types write only what they change.
public protocol AcquirerModelWrapper: Acquirer {
    var model: AcquirerModel { get }
}

extension AcquirerModelWrapper {
    public func authorize(_ r: AuthorizationRequest) async throws(AcquirerError) -> AuthorizationResponse { try await model.authorize(r) }
    public func increment(_ r: IncrementRequest) async throws(AcquirerError) -> ModificationResponse { try await model.increment(r) }
    public func capture(_ r: CaptureRequest) async throws(AcquirerError) -> ModificationResponse { try await model.capture(r) }
    public func reverse(_ r: ReversalRequest) async throws(AcquirerError) -> ModificationResponse { try await model.reverse(r) }
    public func refund(_ r: RefundRequest) async throws(AcquirerError) -> ModificationResponse { try await model.refund(r) }
    public func query(merchantReference: String) async throws(AcquirerError) -> PaymentQueryResult {
        try await model.query(merchantReference: merchantReference)
    }
    // query(merchantReferences:) is Acquirer's one at a time: a wrapper that changes query(merchantReference:) sees each.
    public func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt {
        try await model.submitBatch(header, pages: pages)
    }
    public func reportLines(batchNumber: Int, from: Int, count: Int) async throws(AcquirerError) -> [SettlementReportLine] {
        try await model.reportLines(batchNumber: batchNumber, from: from, count: count)
    }
    public func payout(batchNumber: Int) async throws(AcquirerError) -> PayoutNotice { try await model.payout(batchNumber: batchNumber) }
    public func disputeNotifications(after: Int, limit: Int) async throws(AcquirerError) -> [AcquirerDisputeNotification] {
        try await model.disputeNotifications(after: after, limit: limit)
    }
}
