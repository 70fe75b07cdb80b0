import struct Foundation.Date

/// A filter on the order list.
public struct OrderQuery: Sendable, Hashable {
    public var status: String?
    /// Orders opened at or after this instant (RFC 3339).
    public var from: Date?
    /// Orders opened before this instant.
    public var to: Date?
    public var limit: Int
    /// Continue after this cursor (from the previous page's `next_cursor`).
    public var cursor: Int64

    public init(status: String? = nil, from: Date? = nil, to: Date? = nil, limit: Int, cursor: Int64) {
        self.status = status
        self.from = from
        self.to = to
        self.limit = limit
        self.cursor = cursor
    }
}
