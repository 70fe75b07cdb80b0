import LedgerServices

/// `POST /privacy/erasures`: the shipping contacts erased, each with the orders that used it and the
/// position of its `ContactErased` event.
public struct ErasureReply: Codable, Sendable, Hashable {
    /// One erased contact.
    public struct Erasure: Codable, Sendable, Hashable {
        public let contact_ref: String
        public let order_ids: [String]
        public let position: Int64

        public init(_ erasure: PrivacyService.Erasure) {
            contact_ref = erasure.contactRef
            order_ids = erasure.orderIDs
            position = erasure.position
        }
    }

    public let erased: [Erasure]

    public init(_ erased: [PrivacyService.Erasure]) {
        self.erased = erased.map(Erasure.init)
    }
}
