import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.UUID

/// Any event the ledger writes, typed: the union of the ``EventCatalogue``'s payloads, grouped the way
/// their folds read them. What decoding an arbitrary row gives (the audit feed, a full replay).
public enum LedgerEvent: Hashable, Sendable {
    /// Product, shipping method, order and hold events.
    case domain(DomainEvent)
    /// Settlement batch and reconciliation events.
    case settlement(SettlementEvent)
    /// A dispute's events (`dispute-<id>`).
    case dispute(DisputeEvent)
    /// An Apple Pay token's single-use marker.
    case applePayTokenAccepted(ApplePayTokenAccepted)
    /// The audit trace of a refused genuine Apple Pay token.
    case applePayTokenRejected(ApplePayTokenRejected)
    /// A signed checkpoint of the chain.
    case checkpointSigned(CheckpointSigned)
    /// A shipping contact was erased.
    case contactErased(ContactErased)
    /// A bank statement was imported (its stream's first event).
    case bankStatementReceived(BankStatementReceived)
    /// One entry of an imported bank statement.
    case bankEntryBooked(BankEntryBooked)
    /// Bank deposits matched to announced payouts.
    case bankPayoutMatched(BankPayoutMatched)
    /// A bank break (a payout not received, an amount that differs, an unexpected or twice-seen deposit).
    case bankBreakFound(BankBreakFound)
    /// A bank break resolved, by a later file or a clerk's note.
    case bankBreakResolved(BankBreakResolved)

    /// The payload, type-erased, for encoding.
    public var payload: any LedgerEventPayload {
        switch self {
        case .domain(let e): return e.payload
        case .settlement(let e): return e.payload
        case .dispute(let e): return e.payload
        case .applePayTokenAccepted(let e): return e
        case .applePayTokenRejected(let e): return e
        case .checkpointSigned(let e): return e
        case .contactErased(let e): return e
        case .bankStatementReceived(let e): return e
        case .bankEntryBooked(let e): return e
        case .bankPayoutMatched(let e): return e
        case .bankBreakFound(let e): return e
        case .bankBreakResolved(let e): return e
        }
    }

    /// The event's case in the catalogue.
    public var kind: EventKind { Swift.type(of: payload).eventKind }
    /// The `type` column, e.g. `OrderOpened`.
    public var type: String { Swift.type(of: payload).eventType }
    /// The schema version written.
    public var schemaVersion: Int32 { Swift.type(of: payload).schemaVersion }

    /// The payload as JSON in the one ``LedgerJSON`` form: byte-identical for equal events.
    public func encodedData() throws(EventCodingError) -> Data { try EventCatalogue.encode(payload) }

    /// The event ready for appending. The id and the business time come from the caller, never from here.
    public func newEvent(eventID: UUID, effectiveAt: Date) throws(EventCodingError) -> NewEvent {
        try NewEvent(eventID: eventID, payload: payload, effectiveAt: effectiveAt)
    }

    /// Decodes a stored event of any registered type.
    public static func decode(type: String, schemaVersion: Int32, data: Data) throws(EventCodingError) -> LedgerEvent {
        try EventCatalogue.decode(type: type, schemaVersion: schemaVersion, data: data)
    }

    /// Decodes a committed row.
    public static func decode(_ recorded: RecordedEvent) throws(EventCodingError) -> LedgerEvent {
        try EventCatalogue.decode(type: recorded.type, schemaVersion: recorded.schemaVersion, data: Data(recorded.data.utf8))
    }
}
