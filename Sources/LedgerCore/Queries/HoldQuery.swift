import LedgerMacros

import struct Foundation.Date

/// A filter on the open-holds list.
@MemberwiseInit
public struct HoldQuery: Sendable, Hashable {
    /// `open` or `closed`; nil for both.
    public var state: String?
    /// Holds whose expiry is before this instant.
    public var expiringBefore: Date?
    public var limit: Int
    public var cursor: Int64
}
