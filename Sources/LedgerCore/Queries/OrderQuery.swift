import LedgerMacros

import struct Foundation.Date

/// A filter on the order list.
@MemberwiseInit
public struct OrderQuery: Sendable, Hashable {
    public var status: String?
    /// Orders opened at or after this instant (RFC 3339).
    public var from: Date?
    /// Orders opened before this instant.
    public var to: Date?
    public var limit: Int
    /// Continue after this cursor (from the previous page's `next_cursor`).
    public var cursor: Int64
}
