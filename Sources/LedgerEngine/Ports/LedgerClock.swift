import Foundation
import Synchronization

/// The ledger's time of record (a batch's `recorded_at`; the services' `now`): a port, so that a simulator decides
/// what time it is and two runs of one seed stamp the same times. The daemon's clock is ``SystemClock``.
public protocol LedgerClock: Sendable {
    func now() -> Date
}

/// This machine's wall clock.
public struct SystemClock: LedgerClock {
    public init() {}

    public func now() -> Date { Date() }
}

/// A clock that moves only when told: simulations and tests.
package final class ManualClock: LedgerClock {
    private let current: Mutex<Date>

    package init(_ start: Date) { current = Mutex(start) }

    package func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `interval` seconds (never back: the ledger's time of record only grows).
    package func advance(by interval: TimeInterval) {
        precondition(interval >= 0, "a ManualClock does not go back")
        current.withLock { $0 = $0.addingTimeInterval(interval) }
    }
}
