import struct Foundation.Date

/// A filter on the open-holds list.
public struct HoldQuery: Sendable, Hashable {
    /// `open` or `closed`; nil for both.
    public var state: String?
    /// Holds whose expiry is before this instant.
    public var expiringBefore: Date?
    public var limit: Int
    public var cursor: Int64

    public init(state: String? = nil, expiringBefore: Date? = nil, limit: Int, cursor: Int64) {
        self.state = state
        self.expiringBefore = expiringBefore
        self.limit = limit
        self.cursor = cursor
    }
}
