import LedgerMacros

/// The outcome of verifying the hash chain over a range of positions.
public struct ChainReport: Sendable, Hashable, Codable, CustomStringConvertible {
    public var ok: Bool
    /// Events checked before the first failure (all of them when `ok`).
    public var checked: Int64
    /// The first position that does not verify.
    public var firstBadPosition: Int64?
    public var reason: String?
    /// When a bounded verification (`GET /audit/verify`) stopped at its window with more of the requested range
    /// left: where to continue (`?from=`). Nil otherwise.
    public var nextFrom: Int64?

    public init(ok: Bool, checked: Int64, firstBadPosition: Int64? = nil, reason: String? = nil, nextFrom: Int64? = nil) {
        self.ok = ok
        self.checked = checked
        self.firstBadPosition = firstBadPosition
        self.reason = reason
        self.nextFrom = nextFrom
    }

    public static func bad(_ position: Int64, checked: Int64, _ reason: String) -> ChainReport {
        ChainReport(ok: false, checked: checked, firstBadPosition: position, reason: reason)
    }

    public var description: String {
        ok
            ? "chain verified: \(checked) events"
            : "chain broken at position \(firstBadPosition ?? 0): \(reason ?? "unknown") (\(checked) events verified before it)"
    }

    enum CodingKeys: String, CodingKey {
        case ok, checked, reason
        case firstBadPosition = "first_bad_position"
        case nextFrom = "next_from"
    }
}
