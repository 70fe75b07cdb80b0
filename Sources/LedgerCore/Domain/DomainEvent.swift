import LedgerMacros

import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.UUID

/// Any event of the storefront domain, tagged by the aggregate it belongs to. What deciders emit,
/// evolves and projections fold, and what the database layer encodes to and decodes from rows.
public enum DomainEvent: Hashable, Sendable {
    case product(ProductEvent)
    case shippingMethod(ShippingMethodEvent)
    case order(OrderEvent)
    case hold(HoldEvent)

    /// The stream the event belongs to. Every payload names its aggregate, so this needs no context.
    public var streamID: StreamID {
        switch self {
        case .product(let e): return e.productID.streamID
        case .shippingMethod(let e): return e.shippingMethodID.streamID
        case .order(let e): return e.orderID.streamID
        case .hold(let e): return e.orderID.holdStreamID
        }
    }

    /// The payload, type-erased, for encoding.
    public var payload: any LedgerEventPayload {
        switch self {
        case .product(.listed(let e)): return e
        case .product(.priceChanged(let e)): return e
        case .product(.stockReceived(let e)): return e
        case .product(.stockReserved(let e)): return e
        case .product(.reservationReleased(let e)): return e
        case .product(.stockSold(let e)): return e
        case .shippingMethod(.listed(let e)): return e
        case .shippingMethod(.priceChanged(let e)): return e
        case .order(.opened(let e)): return e
        case .order(.authorized(let e)): return e
        case .order(.paymentDeclined(let e)): return e
        case .order(.paymentOutcomeUnknown(let e)): return e
        case .order(.cancelled(let e)): return e
        case .order(.paymentUpdated(let e)): return e
        case .order(.shipped(let e)): return e
        case .hold(.placed(let e)): return e
        case .hold(.incremented(let e)): return e
        case .hold(.captured(let e)): return e
        case .hold(.reversed(let e)): return e
        case .hold(.expired(let e)): return e
        case .hold(.refunded(let e)): return e
        }
    }

    /// The event's case in the ``EventCatalogue``.
    public var kind: EventKind { Swift.type(of: payload).eventKind }
    /// The `type` column, e.g. `OrderOpened`.
    public var type: String { Swift.type(of: payload).eventType }
    /// The schema version written.
    public var schemaVersion: Int32 { Swift.type(of: payload).schemaVersion }

    /// Every domain event type, sorted by name, with its current schema version: the catalogue's
    /// ``EventFamily/domain`` entries. Replays fold these and skip the rest of the log.
    public static let knownTypes: [(type: String, schemaVersion: Int32)] = EventCatalogue.entries
        .filter { $0.category.family == .domain }
        .map { (type: $0.type, schemaVersion: $0.schemaVersion) }
        .sorted { $0.type < $1.type }

    // MARK: Encoding

    /// The payload as JSON with sorted keys (``LedgerJSON``): byte-identical for equal events.
    public func encodedData() throws(EventCodingError) -> Data { try EventCatalogue.encode(payload) }

    /// The event ready for appending. The id and the business time come from the caller, never from here.
    public func newEvent(eventID: UUID, effectiveAt: Date) throws(EventCodingError) -> NewEvent {
        try NewEvent(eventID: eventID, payload: payload, effectiveAt: effectiveAt)
    }

    // MARK: Decoding

    /// Decodes a stored event back to its typed form, e.g. to fold a stream or rebuild projections.
    /// Types that are not domain events, unsupported schema versions and malformed payloads are typed errors.
    public static func decode(type: String, schemaVersion: Int32, data: Data) throws(EventCodingError) -> DomainEvent {
        guard let entry = EventCatalogue.entry(forType: type), entry.category.family == .domain,
            case .domain(let event) = try entry.decode(schemaVersion: schemaVersion, data: data)
        else {
            throw EventCodingError(.unknownType, type: type, "unknown event type")
        }
        return event
    }

    /// Same as ``decode(type:schemaVersion:data:)`` for the text form the database hands back.
    public static func decode(type: String, schemaVersion: Int32, json: String) throws(EventCodingError) -> DomainEvent {
        try decode(type: type, schemaVersion: schemaVersion, data: Data(json.utf8))
    }

    /// Decodes a committed row.
    public static func decode(_ recorded: RecordedEvent) throws(EventCodingError) -> DomainEvent {
        try decode(type: recorded.type, schemaVersion: recorded.schemaVersion, json: recorded.data)
    }
}

// MARK: - Appends

/// Events for one stream, with the version the decider saw, to be appended together.
@MemberwiseInit
public struct PlannedAppend: Hashable, Sendable {
    public var streamID: StreamID
    public var expectedVersion: ExpectedVersion
    public var events: [DomainEvent]

    /// The expectation for a stream whose state reflects `version` events (0: no stream yet).
    public static func expectation(forVersion version: Int64) -> ExpectedVersion {
        version == 0 ? .noStream : .exact(version)
    }
}

/// One step's outcome: appends to one or more streams that must commit atomically (one transaction),
/// each guarded by its expected version so that a concurrent writer makes the step re-decide.
public struct AppendPlan: Hashable, Sendable {
    public var appends: [PlannedAppend]

    public init(_ appends: [PlannedAppend]) { self.appends = appends.filter { !$0.events.isEmpty } }

    /// All events in append order.
    public var events: [DomainEvent] { appends.flatMap(\.events) }
    public var isEmpty: Bool { appends.isEmpty }
}

/// Collects plans decided one after another (each on the states the previous ones left) into one
/// append: every stream once, its first expectation covering the whole run of its events.
public struct AppendPlanBuilder: Sendable {
    private var appends: [PlannedAppend] = []
    private var index: [StreamID: Int] = [:]

    public init() {}

    public mutating func add(_ plan: AppendPlan) {
        for append in plan.appends {
            if let i = index[append.streamID] {
                appends[i].events += append.events
            } else {
                index[append.streamID] = appends.count
                appends.append(append)
            }
        }
    }

    public var plan: AppendPlan { AppendPlan(appends) }
}
