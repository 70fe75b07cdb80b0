import Logging
import Synchronization

/// A repeated warning logged at most once per interval, with how many were left out since the last line.
///
/// A flood (connections refused at the limit, 503s through a database outage) would otherwise write one line per
/// occurrence: 40,744 lines in a 30 s outage. The first occurrence is logged at once; the ones after it within the
/// interval are counted, and the next line logged carries that count as `suppressed`. The decision is the pure
/// ``Window``; ``LogThrottle`` holds one behind a lock for the server's many event loops.
public final class LogThrottle: Sendable {
    /// The pure rule: given the time of an occurrence, log it (with the number left out before it) or count it.
    public struct Window: Sendable, Equatable {
        public let interval: Duration
        private var lastLogged: ContinuousClock.Instant?
        private var suppressed = 0

        public init(interval: Duration) { self.interval = interval }

        /// The number of occurrences left out since the last logged one when this one is to be logged; nil to leave it out.
        public mutating func occurred(at now: ContinuousClock.Instant) -> Int? {
            if let lastLogged, now - lastLogged < interval {
                suppressed += 1
                return nil
            }
            defer { (lastLogged, suppressed) = (now, 0) }
            return suppressed
        }
    }

    private let window: Mutex<Window>

    public init(interval: Duration = .seconds(10)) { self.window = Mutex(Window(interval: interval)) }

    /// Logs `message` at `level` unless one was logged within the interval; the line carries `suppressed` when any were.
    public func log(_ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata: Logger.Metadata = [:], to logger: Logger) {
        guard let suppressed = window.withLock({ $0.occurred(at: .now) }) else { return }
        var metadata = metadata
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.log(level: level, message(), metadata: metadata)
    }
}
