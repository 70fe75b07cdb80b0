/// A shipping contact as the back office reads it.
public enum ContactAnswer: Sendable, Hashable {
    /// The contact's fields (JSON object).
    case present(contactRef: String, json: String)
    /// Erased on request: when, and the erasure's event position.
    case erased(contactRef: String, erasedAt: String, position: Int64)
    /// Neither stored nor erased (should not happen for an opened order).
    case missing(contactRef: String)
}
