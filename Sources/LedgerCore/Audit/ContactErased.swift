import struct Foundation.Date

/// A shipping contact (personal data, kept outside the log in `ledger.shipping_contacts`) was
/// erased on the data subject's request. Carries no personal data: only the opaque reference, the
/// orders that used it (so the order's history shows the erasure) and when. Stream
/// `privacy-<contact ref>`, appended once per contact (a retried erasure finds it there).
public struct ContactErased: LedgerEventPayload {
    public static let eventType = "ContactErased"
    public static let schemaVersion: Int32 = 1
    public static let eventKind = EventKind.contactErased

    public var contactRef: String
    /// The first order that used the contact (the order history's key), if any.
    public var orderID: String?
    /// Every order that used it.
    public var orderIDs: [String]
    @LedgerTimestamp public var erasedAt: Date
    /// Why, e.g. `data_subject_request`.
    public var reason: String

    public init(contactRef: String, orderIDs: [String], erasedAt: Date, reason: String) {
        self.contactRef = contactRef
        self.orderID = orderIDs.first
        self.orderIDs = orderIDs
        self.erasedAt = erasedAt
        self.reason = reason
    }

    /// The erasure's stream for a contact reference.
    public static func stream(for contactRef: String) -> StreamID? { StreamID("privacy-\(contactRef)") }

    enum CodingKeys: String, CodingKey {
        case contactRef = "contact_ref"
        case orderID = "order_id"
        case orderIDs = "order_ids"
        case erasedAt = "erased_at"
        case reason
    }
}
