import LedgerMacros

/// Who and what caused an event. Stored as the event's `metadata` (jsonb, snake_case keys) and
/// covered by the hash chain. Never carries cardholder data.
@MemberwiseInit
public struct EventMetadata: Hashable, Sendable, Codable {
    /// Ties together every event caused by one external request (e.g. one `POST /payment`).
    public var correlationID: String?
    /// The event or command that directly caused this one.
    public var causationID: String?
    /// Who acted: `storefront`, `operator:<key id>`, `system:sweeper`, …
    public var actor: String?
    /// The command's name, e.g. `PlaceOrder`.
    public var command: String?
    /// The client's idempotency key, when the command carried one.
    public var idempotencyKey: String?

    enum CodingKeys: String, CodingKey {
        case correlationID = "correlation_id"
        case causationID = "causation_id"
        case actor
        case command
        case idempotencyKey = "idempotency_key"
    }
}
