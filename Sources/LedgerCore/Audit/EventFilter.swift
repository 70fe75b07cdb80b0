import LedgerMacros

/// Which events of the global feed an auditor asks for. Every condition is optional; the ones
/// given must all hold. Pure value: the HTTP layer parses it, the event store turns it into SQL.
@MemberwiseInit
public struct EventFilter: Sendable, Hashable {
    /// Event types (any of them); empty for every type.
    public var types: [String] = []
    /// Streams whose id starts with this text (e.g. `order-`, `hold-`, `product-clock`).
    public var streamPrefix: String?
    /// Streams whose id starts with any of these (a subscription's prefixes); empty for every stream.
    public var streamPrefixes: [String] = []
    /// Recorded (ledger time) at or after this instant, in microseconds since the epoch.
    public var fromMicros: Int64?
    /// Recorded before this instant (exclusive), in microseconds since the epoch.
    public var toMicros: Int64?
    /// Events of one request (`metadata.correlation_id`).
    public var correlationID: String?

    /// Whether `event` passes: the same rules the event store applies in SQL, for tests and
    /// for filtering pages that are already in memory.
    public func matches(_ event: RecordedEvent, correlationID eventCorrelation: String?) -> Bool {
        if !types.isEmpty && !types.contains(event.type) { return false }
        if let streamPrefix, !event.streamID.rawValue.hasPrefix(streamPrefix) { return false }
        if !streamPrefixes.isEmpty && !streamPrefixes.contains(where: { event.streamID.rawValue.hasPrefix($0) }) { return false }
        if let fromMicros, event.recordedAtMicros < fromMicros { return false }
        if let toMicros, event.recordedAtMicros >= toMicros { return false }
        if let correlationID, eventCorrelation != correlationID { return false }
        return true
    }
}

/// A point in the ledger's history to read state at: a position, or an instant (ledger time).
public enum AsOf: Sendable, Hashable, CustomStringConvertible {
    /// After the event at this position (0: before the first event).
    case position(Int64)
    /// After every event recorded at or before this instant (microseconds since the epoch).
    case time(micros: Int64)

    /// `123` is a position; anything else must be an RFC 3339 time such as `2026-11-21T09:30:00.250000Z`.
    public init?(_ text: String) {
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let position = Int64(text) else { return nil }
            self = .position(position)
        } else if let micros = RFC3339.micros(text) {
            self = .time(micros: micros)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .position(let p): return "position \(p)"
        case .time(let micros): return RFC3339.format(micros)
        }
    }
}
