import LedgerCore

/// One aggregate's read-model row, live or as of a point in the ledger.
public struct StateAnswer: Sendable, Hashable {
    /// Where an as-of answer was read: the last position folded, and the instant (µs since the
    /// epoch) a hold's lapse was judged at.
    public struct Point: Sendable, Hashable {
        public var position: Int64
        public var micros: Int64
        public init(position: Int64, micros: Int64) {
            self.position = position
            self.micros = micros
        }
    }

    /// The row, in the same shape as the live read model's.
    public var json: String
    /// Nil for a live answer.
    public var asOf: Point?

    public init(json: String, asOf: Point?) {
        self.json = json
        self.asOf = asOf
    }
}
