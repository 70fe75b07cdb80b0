import LedgerCore

import struct Foundation.Date
import class Foundation.NSLock

/// A clock that only moves when told to, for tests and simulations of the acquirer model.
///
/// A class (shared by the model and the test driving it) guarded by a lock, hence
/// `@unchecked Sendable`: every access to `current` goes through the lock.
public final class SimulatedClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    public init(_ start: Date) { self.current = start }

    public var now: Date { lock.withLock { current } }

    public func advance(by seconds: Int64) { lock.withLock { current = current.addingTimeInterval(Double(seconds)) } }

    public func set(_ date: Date) { lock.withLock { current = date } }

    /// The closure ``AcquirerModel`` takes.
    public var reading: @Sendable () -> Date { { [self] in self.now } }
}
