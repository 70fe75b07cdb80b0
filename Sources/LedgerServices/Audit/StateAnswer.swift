import LedgerCore
import LedgerMacros

/// One aggregate's read-model row, live or as of a point in the ledger.
@MemberwiseInit
public struct StateAnswer: Sendable, Hashable {
    /// Where an as-of answer was read: the last position folded, and the instant (µs since the
    /// epoch) a hold's lapse was judged at.
    @MemberwiseInit
    public struct Point: Sendable, Hashable {
        public var position: Int64
        public var micros: Int64
    }

    /// The row, in the same shape as the live read model's.
    public var json: String
    /// Nil for a live answer.
    public var asOf: Point?
}
