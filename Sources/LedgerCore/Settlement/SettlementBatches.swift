/// Every settlement batch in the ledger as one settlement run knows them: read once when the run
/// starts (by business date, then in the order they were opened) and kept current with the states
/// the run's own steps reach, so that a run reads the batch streams once instead of once per use.
public struct SettlementBatches: Hashable, Sendable {
    /// By business date, then in the order the batches were opened.
    public private(set) var states: [SettlementBatchState]

    /// `states` in the order above (as they were read).
    public init(_ states: [SettlementBatchState]) { self.states = states }

    /// Replaces the batch's state with `state`, or adds a batch the run opened: after every batch of
    /// its business date or earlier, where a fresh read would place the last one opened.
    public mutating func record(_ state: SettlementBatchState) {
        if let index = states.firstIndex(where: { $0.opened.batchID == state.opened.batchID }) {
            states[index] = state
        } else {
            let index = states.firstIndex { $0.opened.businessDate > state.opened.businessDate } ?? states.endIndex
            states.insert(state, at: index)
        }
    }

    /// The batches of a merchant account in a currency, by business date.
    public func of(merchantAccount: String, currency: Currency) -> [SettlementBatchState] {
        states.filter { $0.opened.merchantAccount == merchantAccount && $0.opened.currency == currency }
    }
}
