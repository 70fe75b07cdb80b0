import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import LedgerPostgres

/// What ``DisputeWorkflow``'s steps need done for one command on one dispute: reads and one commit. ``DisputeRun``
/// performs them on the ledger; a test performs them in memory (`LedgerServicesTests`), so the loop below is tested
/// without a database.
package protocol DisputeActions: Sendable {
    /// The dispute's events so far (none: no dispute yet).
    func recorded() async throws -> [DisputeEvent]
    /// The order, its hold and its other disputes; `fresh`: read past this process's cache (after a conflict).
    func facts(of order: OrderID, fresh: Bool) async throws -> DisputeFacts
    func now() -> Date
    /// Appends `events` after the dispute's `recorded` events and, when given, the order's update, in one commit
    /// expecting the versions read. Returns the order's status after it; nil when a stream moved (version conflict).
    func commit(
        _ events: [DisputeEvent],
        after recorded: Int,
        orderUpdate: OrderPaymentUpdated?,
        order: OrderState,
        hold: HoldState,
        now: Date
    )
        async throws -> OrderStatus?
}

/// What ``DisputeActions/facts(of:fresh:)`` read.
@MemberwiseInit
package struct DisputeFacts: Sendable {
    package var order: OrderState?
    package var hold: HoldState?
    package var otherDisputes: [DisputeState]
}

/// How a dispute command ended.
package enum DisputeOutcome: Hashable, Sendable {
    /// The dispute already records what the command reports: nothing appended.
    case asRecorded
    /// Appended; the order's status after it.
    case recorded(orderStatus: OrderStatus)
}

extension DisputeActions {
    /// The command through ``DisputeWorkflow``: read, decide, commit; decided again on fresh reads when a stream moved
    /// under it, at most ``AggregateStore/maximumAttempts`` times (then ``AggregateStore/Contended``). Refusals are
    /// thrown as ``DisputeRefusal``. `repeats`: whether the dispute's events already record what the command reports
    /// (asked on every attempt, so a notification two daemons record at once is appended once).
    package func perform(_ command: DisputeCommand, repeats: ([DisputeEvent]) -> Bool) async throws -> DisputeOutcome {
        for attempt in 0..<AggregateStore.maximumAttempts {
            let events = try await recorded()
            let orderID: OrderID
            switch DisputeWorkflow.start(command, recorded: events, repeats: repeats(events)) {
            case .loadOrder(let id): orderID = id
            case .alreadyRecorded: return .asRecorded
            case .refused(let refusal): throw refusal
            case .record: throw ServiceError.internalFailure  // DisputeWorkflow.start records nothing
            }
            let facts = try await facts(of: orderID, fresh: attempt > 0)
            let now = now()
            switch DisputeWorkflow.decide(
                command,
                recorded: events,
                order: facts.order,
                hold: facts.hold,
                otherDisputes: facts.otherDisputes,
                now: now
            ) {
            case .refused(let refusal): throw refusal
            case .record(let decided, let update):
                guard let order = facts.order, let hold = facts.hold else { throw ServiceError.internalFailure }  // decided only on both
                if let status = try await commit(decided, after: events.count, orderUpdate: update, order: order, hold: hold, now: now) {
                    return .recorded(orderStatus: status)
                }
            // The order or the dispute moved: decide again on fresh reads.
            case .alreadyRecorded, .loadOrder: throw ServiceError.internalFailure  // DisputeWorkflow.decide records or refuses
            }
        }
        throw AggregateStore.Contended()
    }
}
