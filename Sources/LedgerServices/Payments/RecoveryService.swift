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
        await PeriodicJob("recovery sweep", metric: nil, wait: .afterEachPass(interval), jobs: JobMetrics(), logger: logger).run {
            try await self.sweep()
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
