import Foundation
import LedgerCore
import LedgerEngine

/// How a dispute command ended.
package enum DisputeOutcome: Hashable, Sendable {
    /// The dispute already records what the command reports: nothing appended.
    case asRecorded
    /// Appended; the order's status after it.
    case recorded(orderStatus: OrderStatus)
}

/// A dispute command as the one runner decides it (issue 56: the dispute's own load → decide → commit → retry loop is
/// gone): decided in the writer's batch on the order and its hold as the batch has left them, with the dispute's
/// events and the order's other disputes read before (``AggregateStore/run(preparing:)`` reads them again when the
/// append meets a moved stream). Its events go on the dispute's stream beside the order's update, in one append
/// expecting the versions decided on.
enum DisputeCommands {
    /// ``DisputeWorkflow/decide(_:recorded:order:hold:otherDisputes:now:)`` as a command: its events and the order's
    /// update appended, with the order's status after them; a refusal as a value (``Decision/refuse(_:)``: decided
    /// again on the order read fresh before it stands).
    static func decide(
        _ command: DisputeCommand,
        on orderID: OrderID,
        recorded: [DisputeEvent],
        otherDisputes: [DisputeState],
        stream: StreamID,
        now: Date,
        metadata: EventMetadata,
        ids: any IDSource
    ) -> Signalled<Result<DisputeOutcome, DisputeRefusal>> {
        Signalled(reads: AggregateKeys(orders: [orderID], holds: [orderID]), now: now, metadata: metadata) { states in
            let order = states.orders[orderID]
            let hold = states.holds[orderID]
            switch DisputeWorkflow.decide(command, recorded: recorded, order: order, hold: hold, otherDisputes: otherDisputes, now: now) {
            case .refused(let refusal):
                return .refuse(.failure(refusal))
            case .record(let events, let update):
                guard let order, hold != nil else { throw ServiceError.internalFailure }  // decided only on both
                var appends: [PlannedAppend] = []
                if let update {
                    appends.append(
                        PlannedAppend(streamID: order.id.streamID, expectedVersion: .exact(order.version), events: [.order(.paymentUpdated(update))])
                    )
                }
                let disputeAppend = StreamAppend(
                    streamID: stream,
                    expectedVersion: PlannedAppend.expectation(forVersion: Int64(recorded.count)),
                    events: try events.map { try $0.ledgerEvent.newEvent(eventID: ids.next(), effectiveAt: now) }
                )
                let plan = CommandPlan(plan: AppendPlan(appends), alsoAppending: [disputeAppend])
                return .append(plan, .success(.recorded(orderStatus: update?.status ?? order.status)))
            case .alreadyRecorded, .loadOrder:
                throw ServiceError.internalFailure  // DisputeWorkflow.decide records or refuses
            }
        }
    }
}
