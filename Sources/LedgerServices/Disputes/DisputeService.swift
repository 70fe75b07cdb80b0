import Foundation
import LedgerCore
import LedgerEngine
import Logging

/// What the acquirer reports about a dispute (its notification): the stage the network reached.
/// The ledger records it through ``DisputeDecider`` like an operator's answer.
public struct DisputeNotification: Sendable, Hashable {
    public typealias Stage = DisputeStage

    public var disputeID: String
    public var stage: Stage
    /// The order (our merchant reference) and the acquirer's reference of the disputed payment:
    /// needed when the notification opens the dispute (inquiry, chargeback).
    public var orderID: String?
    public var pspReference: String?
    public var reason: DisputeReason?
    public var amount: Money?
    /// The stage's number among the dispute's acquirer notifications (1: the one that opened it), when
    /// the acquirer numbers them: a notification whose stage is already recorded is a no-op.
    public var stageNumber: Int?

    public init(
        disputeID: String,
        stage: Stage,
        orderID: String? = nil,
        pspReference: String? = nil,
        reason: DisputeReason? = nil,
        amount: Money? = nil,
        stageNumber: Int? = nil
    ) {
        self.disputeID = disputeID
        self.stage = stage
        self.orderID = orderID
        self.pspReference = pspReference
        self.reason = reason
        self.amount = amount
        self.stageNumber = stageNumber
    }

    /// The acquirer's feed entry as a notification to record.
    public init(_ notification: AcquirerDisputeNotification) {
        self.init(
            disputeID: notification.disputeID,
            stage: notification.stage,
            orderID: notification.merchantReference,
            pspReference: notification.pspReference,
            reason: notification.reason,
            amount: notification.amount,
            stageNumber: notification.stageNumber
        )
    }
}

/// One event of a dispute's history, as `GET /disputes/{id}` shows it.
public struct DisputeHistoryEntry: Sendable, Hashable {
    public var position: Int64
    public var type: String
    public var recordedAt: Date
    public var actor: String?
    /// The event's stored JSON text (what its hash covers).
    public var data: String

    public init(position: Int64, type: String, recordedAt: Date, actor: String?, data: String) {
        self.position = position
        self.type = type
        self.recordedAt = recordedAt
        self.actor = actor
        self.data = data
    }
}

/// A dispute with its history and the order's status now.
public struct DisputeView: Sendable, Hashable {
    public var state: DisputeState
    public var history: [DisputeHistoryEntry]
    public var orderStatus: OrderStatus?

    public init(state: DisputeState, history: [DisputeHistoryEntry], orderStatus: OrderStatus?) {
        self.state = state
        self.history = history
        self.orderStatus = orderStatus
    }
}

/// The dispute lifecycle as use cases: each dispute on its own stream (`dispute-<id>`), every step decided by
/// ``DisputeWorkflow`` (its transition table; ``DisputeDecider`` on the dispute's folded state and the injected
/// clock); this service only reads what a step asks for and commits what it decides. An append
/// carries the dispute's events and, when the order's status changes, the order's
/// `OrderPaymentUpdated` (operation `dispute`) — one append through the ``AggregateStore``, whose
/// version checks on both streams make a concurrent hold operation or dispute answer decide again.
///
/// Money: a dispute's debits and credits are on its stream (``DisputeState/chargedBack``,
/// ``DisputeState/reversed``); the hold's money is untouched, so captured − refunded − charged back
/// + reversed is what the merchant keeps of an order (``DisputeWorkflow/netKept(hold:disputes:)``).
/// Stock is never moved by a dispute.
public struct DisputeService: Sendable {
    /// `index`: the dispute index (on PostgreSQL, `DisputeReader`; in memory, the log's).
    package init(aggregates: AggregateStore, index: any DisputeIndex, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.aggregates = aggregates
        self.store = aggregates.store
        self.reader = index
        self.clock = clock
        self.logger = logger
    }

    let aggregates: AggregateStore
    let store: any StreamReads
    let reader: any DisputeIndex
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Answers on one dispute take turns in this process.
    let turns = KeyedLock()

    // MARK: Commands

    /// Records what the acquirer reports (a new dispute, or the network's next stage).
    @discardableResult
    public func receive(_ notification: DisputeNotification, actor: String = "acquirer") async throws -> DisputeView {
        let command: DisputeCommand
        switch notification.stage {
        case .inquiry, .chargeback:
            guard let raw = notification.orderID, let orderID = OrderID(raw) else {
                throw ServiceError.invalid("invalid_order", "a new dispute names its order", field: "order_id")
            }
            guard let reason = notification.reason else { throw ServiceError.invalid("missing_field", "a new dispute has a reason", field: "reason") }
            guard let amount = notification.amount else {
                throw ServiceError.invalid("missing_field", "a new dispute has an amount", field: "amount")
            }
            let psp = notification.pspReference ?? ""
            command =
                notification.stage == .inquiry
                ? .raiseInquiry(disputeID: notification.disputeID, orderID: orderID, pspReference: psp, reason: reason, amount: amount)
                : .chargeback(disputeID: notification.disputeID, orderID: orderID, pspReference: psp, reason: reason, amount: amount)
        case .secondPresentment: command = .secondPresentment
        case .chargebackReversed: command = .reverse
        case .preArbitration: command = .preArbitration
        case .secondChargeback: command = .secondChargeback
        case .won: command = .decide(.won, by: actor)
        case .lost: command = .decide(.lost, by: actor)
        }
        var recorded: (@Sendable ([DisputeEvent]) -> Bool)?
        if let number = notification.stageNumber {
            recorded = { events in DisputeEvent.acquirerStages(events) >= number }
        }
        return try await perform(command, disputeID: notification.disputeID, actor: actor, commandName: "RecordDispute", recorded: recorded)
    }

    /// An operator's defense: references to evidence kept elsewhere (never the documents).
    @discardableResult
    public func defend(id: String, evidenceRefs: [String], actor: String) async throws -> DisputeView {
        try await perform(.defend(evidenceRefs: evidenceRefs, by: actor), disputeID: id, actor: actor, commandName: "DefendDispute")
    }

    /// An operator accepts liability: the amount stays with the cardholder.
    @discardableResult
    public func accept(id: String, actor: String) async throws -> DisputeView {
        try await perform(.accept(by: actor), disputeID: id, actor: actor, commandName: "AcceptDispute")
    }

    /// - Parameter recorded: whether the dispute's events already record what the command reports (a
    ///   repeated notification): then nothing is appended and the dispute is answered as it is. Asked
    ///   on every attempt, so a notification two daemons record at once is appended once.
    private func perform(
        _ command: DisputeCommand,
        disputeID: String,
        actor: String,
        commandName: String,
        recorded alreadyRecorded: (@Sendable ([DisputeEvent]) -> Bool)? = nil
    ) async throws -> DisputeView {
        guard DisputeDecider.isReference(disputeID), disputeID.utf8.count <= 100, let stream = StreamID("dispute-" + disputeID) else {
            throw ServiceError.notFound("no dispute \(disputeID)")
        }
        return try await turns.withLock(disputeID) {
            let decided: Result<DisputeOutcome, DisputeRefusal>
            do {
                decided = try await aggregates.run(preparing: {
                    try await prepare(command, disputeID: disputeID, stream: stream, actor: actor, commandName: commandName) {
                        alreadyRecorded?($0) ?? false
                    }
                }).signal
            } catch is AggregateStore.Contended {
                throw ServiceError.unavailable("the dispute \(disputeID) is too busy right now; retry")
            }
            let orderStatus: OrderStatus?
            switch decided {
            case .failure(let refusal): throw Self.serviceError(refusal, disputeID: disputeID)
            case .success(.asRecorded): orderStatus = nil
            case .success(.recorded(let status)): orderStatus = status
            }
            guard let view = try await dispute(id: disputeID, orderStatus: orderStatus) else { throw ServiceError.internalFailure }
            return view
        }
    }

    /// The command on the dispute, from its stream and its order's other disputes as they are now (read again for
    /// each decision: ``AggregateStore/run(preparing:)``); answered without one when the stream alone decides.
    private func prepare(
        _ command: DisputeCommand,
        disputeID: String,
        stream: StreamID,
        actor: String,
        commandName: String,
        repeats: ([DisputeEvent]) -> Bool
    ) async throws -> Prepared<Result<DisputeOutcome, DisputeRefusal>> {
        let recorded = try await store.readStream(stream).map { try DisputeEvent.decode($0) }
        let orderID: OrderID
        switch DisputeWorkflow.start(command, recorded: recorded, repeats: repeats(recorded)) {
        case .loadOrder(let id): orderID = id
        case .alreadyRecorded: return .answered(.success(.asRecorded))
        case .refused(let refusal): return .answered(.failure(refusal))
        case .record: throw ServiceError.internalFailure  // DisputeWorkflow.start records nothing
        }
        let others = try await reader.disputes().values.filter { $0.orderID == orderID && $0.disputeID != disputeID }
        let ids = aggregates.writer.ids
        return .command(
            DisputeCommands.decide(
                command,
                on: orderID,
                recorded: recorded,
                otherDisputes: Array(others),
                stream: stream,
                now: clock(),
                metadata: EventMetadata(correlationID: ids.nextString(), actor: actor, command: commandName),
                ids: ids
            )
        )
    }

    // MARK: Reads

    /// The disputes with `status` (nil: any) whose deadline is before `dueBefore` (nil: any), by
    /// deadline then id (disputes awaiting nothing last).
    public func list(status: DisputeStatus? = nil, dueBefore: Date? = nil) async throws -> [DisputeState] {
        try await reader.disputes().values
            .filter { d in status.map { d.status == $0 } ?? true }
            .filter { d in dueBefore.map { limit in d.dueAt.map { $0 < limit } ?? false } ?? true }
            .sorted { a, b in
                switch (a.dueAt, b.dueAt) {
                case (let x?, let y?) where x != y: return x < y
                case (.some, nil): return true
                case (nil, .some): return false
                default: return a.disputeID < b.disputeID
                }
            }
    }

    /// One dispute with its history (nil: none with that id).
    public func dispute(id: String) async throws -> DisputeView? {
        try await dispute(id: id, orderStatus: nil)
    }

    private func dispute(id: String, orderStatus: OrderStatus?) async throws -> DisputeView? {
        guard DisputeDecider.isReference(id), let stream = StreamID("dispute-" + id) else { return nil }
        let recorded = try await store.readStream(stream)
        guard let state = DisputeState.fold(try recorded.map { try DisputeEvent.decode($0) }) else { return nil }
        let decoder = JSONDecoder()
        let history = recorded.map { event in
            DisputeHistoryEntry(
                position: event.position,
                type: event.type,
                recordedAt: event.recordedAt,
                actor: (try? decoder.decode(EventMetadata.self, from: Data(event.metadata.utf8)))?.actor,
                data: event.data
            )
        }
        var status = orderStatus
        if status == nil { status = try await aggregates.order(state.orderID, fresh: true)?.status }
        return DisputeView(state: state, history: history, orderStatus: status)
    }

    // MARK: Rules

    static func serviceError(_ refusal: DisputeRefusal, disputeID: String) -> ServiceError {
        switch refusal {
        case .unknownDispute: return ServiceError.notFound("no dispute \(disputeID)")
        case .unknownOrder(let order): return ServiceError.invalid("unknown_order", "no order \(order)", field: "order_id")
        case .notCaptured(let order): return ServiceError.conflict("not_captured", "order \(order) has no payment to dispute")
        case .rejected(let rejection): return serviceError(rejection, disputeID: disputeID)
        }
    }

    static func serviceError(_ rejection: DisputeRejection, disputeID: String) -> ServiceError {
        let message = rejection.description
        switch rejection {
        case .unknownDispute: return ServiceError.notFound("no dispute \(disputeID)")
        case .alreadyExists: return ServiceError.conflict("dispute_exists", message)
        case .illegalTransition: return ServiceError.conflict("illegal_transition", message)
        case .deadlinePassed: return ServiceError.conflict("deadline_passed", message)
        case .unknownReason: return ServiceError.invalid("unknown_reason", message, field: "reason")
        case .nonPositiveAmount: return ServiceError.invalid("invalid_amount", message, field: "amount")
        case .exceedsDisputable: return ServiceError.invalid("exceeds_disputable", message, field: "amount")
        case .missingEvidence, .invalidEvidenceReference: return ServiceError.invalid("invalid_evidence", message, field: "evidence_refs")
        }
    }
}
