import LedgerCore

extension DeciderSpec where State == ProductState?, Command == ProductCommand, Event == ProductEvent, Rejection == ProductRejection {
    /// The product decider of the stream of `product`, deciding at `context`.
    public static func product(_ product: ProductID, context: DecisionContext) -> Self {
        DeciderSpec(
            decide: { ProductDecider.decide($0, product: product, state: $1, context: context) },
            evolve: { ProductState.evolve($0, $1) },
            initialState: nil
        )
    }
}
