import LedgerMacros

/// The outcome of verifying the hash chain over a range of positions.
@MemberwiseInit
public struct ChainReport: Sendable, Hashable, Codable, CustomStringConvertible {
    public var ok: Bool
    /// Events checked before the first failure (all of them when `ok`).
    public var checked: Int64
    /// The first position that does not verify.
    public var firstBadPosition: Int64?
    public var reason: String?

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
    }
}
