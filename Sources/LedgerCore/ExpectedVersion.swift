/// Optimistic concurrency for one stream: what the writer of an append believes the stream's
/// current version to be. Versions start at 1 for a stream's first event; a stream with no
/// events has version 0.
public enum ExpectedVersion: Hashable, Sendable, CustomStringConvertible {
    /// No check: append at whatever the current version is.
    case any
    /// The stream must not exist yet (current version 0).
    case noStream
    /// The stream's current version must be exactly this (≥ 1; use ``noStream`` for 0).
    case exact(Int64)

    /// Whether a stream whose current version is `current` satisfies this expectation.
    public func accepts(current: Int64) -> Bool {
        switch self {
        case .any: return true
        case .noStream: return current == 0
        case .exact(let version): return current == version
        }
    }

    public var description: String {
        switch self {
        case .any: return "any"
        case .noStream: return "no stream"
        case .exact(let version): return "\(version)"
        }
    }
}
