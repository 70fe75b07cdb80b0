import Foundation
import LedgerCore
import LedgerMacros
import Logging
import ServiceLifecycle

/// Resolves orders left "pending payment" (a crash between opening the order and recording the
/// acquirer's answer) or "payment unknown": at start and then every `interval`, each such order old
/// enough to judge is resolved by asking the acquirer about its reference (``PaymentService/resolve``).
/// Likewise hold operations (capture, increment, void, refund) the acquirer may have applied without
/// the ledger recording them (``HoldService/recoverUnrecorded(minimumAge:limit:)``).
/// Several daemons may run it at once: their appends are version-checked, so an order is resolved once.
@MemberwiseInit
public struct RecoveryService: Service {
    let payments: PaymentService
    let interval: Duration
    let policy: RecoveryPolicy
    let logger: Logger

    public func run() async throws {
        // Graceful shutdown cancels the loop, so a sleeping sweeper never holds up SIGTERM.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await sweep()
                } catch  where !Task.isCancelled {
                    logger.warning("recovery sweep failed; retrying later", metadata: ["error": "\(String(reflecting: error))"])
                }
                try await Task.sleep(for: interval)
            }
        }
    }

    /// One pass over the waiting orders, then over the hold operations the acquirer may have applied
    /// without the ledger recording them; returns how many were resolved.
    @discardableResult
    public func sweep() async throws -> Int {
        var resolved = try await payments.holds.recoverUnrecorded(minimumAge: policy.minimumPendingAge)
        for order in try await payments.waitingOrders() {
            if try await payments.resolve(order, policy: policy, correlation: "recovery-\(order.rawValue)") { resolved += 1 }
        }
        return resolved
    }
}
