import Foundation
import Logging

/// Where a crash test may have the daemon kill itself (`LEDGERD_FAULT_CRASH_AT`): a real SIGKILL,
/// no cleanup, no graceful shutdown, at a chosen step of a multi-step job.
public enum FaultPoint: String, Sendable, CaseIterable {
    case settlementOpened = "settlement.opened"
    case settlementClosed = "settlement.closed"
    case settlementAccepted = "settlement.accepted"
    case settlementStoringReport = "settlement.storing_report"
    case settlementSubmitted = "settlement.submitted"
    case settlementCleared = "settlement.cleared"
    case settlementPayoutScheduled = "settlement.payout_scheduled"
    /// A reconciliation was worked out and is about to be recorded (nothing of it recorded yet).
    case settlementReconciling = "settlement.reconciling"
    /// A payout's deposit was just recorded (`SettlementPayoutPaid`).
    case settlementPaid = "settlement.paid"
    /// The acquirer applied a hold operation and answered; nothing of it is recorded in the ledger yet.
    case holdCaptureApplied = "hold.capture.applied"
    case holdIncrementApplied = "hold.increment.applied"
    case holdVoidApplied = "hold.void.applied"
    case holdRefundApplied = "hold.refund.applied"
    /// A webhook delivery was answered 200; the endpoint's cursor and history are not committed yet (so the event is
    /// delivered again: at least once).
    case webhookDelivered = "webhook.delivered"
    /// A batch of the transparency log's tiles was just committed and the build goes on (a kill mid-build).
    case merkleTilesStored = "merkle.tiles_stored"

    /// Kills the process now if `configured` is this point.
    func crashIfConfigured(_ configured: FaultPoint?, logger: Logger) {
        guard configured == self else { return }
        logger.critical("fault point reached: killing the process (LEDGERD_FAULT_CRASH_AT)", metadata: ["point": "\(rawValue)"])
        kill(getpid(), SIGKILL)
    }
}
