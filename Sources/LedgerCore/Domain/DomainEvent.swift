import struct Foundation.Data
import struct Foundation.Date
import class Foundation.JSONDecoder
import class Foundation.JSONEncoder
import struct Foundation.UUID

/// An event payload with a stable name and schema version in the log.
///
/// `eventType` is the `type` column and must never change once events of it were written; a change of
/// payload shape gets a new `schemaVersion` and an upcaster in ``DomainEvent/decode(type:schemaVersion:data:)``.
/// Payloads spell their JSON keys out (snake_case) instead of relying on an encoder's key strategy, so the
/// wire format cannot drift with a Foundation release.
public protocol LedgerEventPayload: Codable, Hashable, Sendable {
    static var eventType: String { get }
    static var schemaVersion: Int32 { get }
}

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

    /// The `type` column, e.g. `OrderOpened`.
    public var type: String { Swift.type(of: payload).eventType }
    public var schemaVersion: Int32 { Swift.type(of: payload).schemaVersion }

    /// Every event type this module writes, with its current schema version.
    public static let knownTypes: [(type: String, schemaVersion: Int32)] = decoders.keys.sorted().map {
        ($0, decoders[$0]!.version)
    }

    // MARK: Encoding

    /// The payload as JSON with sorted keys: byte-identical for equal events.
    public func encodedData() throws(EventCodingError) -> Data {
        do { return try Self.encoder.encode(payload) } catch {
            throw EventCodingError(.encodingFailed, type: type, String(describing: error))
        }
    }

    /// The event ready for appending. The id and the business time come from the caller, never from here.
    public func newEvent(eventID: UUID, effectiveAt: Date) throws(EventCodingError) -> NewEvent {
        NewEvent(
            eventID: eventID, type: type, schemaVersion: schemaVersion,
            data: String(decoding: try encodedData(), as: UTF8.self), effectiveAt: effectiveAt)
    }

    // MARK: Decoding

    /// Decodes a stored event back to its typed form, e.g. to fold a stream or rebuild projections.
    /// Unknown types, unsupported schema versions and malformed payloads are typed errors.
    public static func decode(type: String, schemaVersion: Int32, data: Data) throws(EventCodingError) -> DomainEvent {
        guard let entry = decoders[type] else { throw EventCodingError(.unknownType, type: type, "unknown event type") }
        guard schemaVersion == entry.version else {
            throw EventCodingError(.unsupportedSchemaVersion, type: type, "schema version \(schemaVersion)")
        }
        do { return try entry.decode(data) } catch {
            throw EventCodingError(.invalidPayload, type: type, String(describing: error))
        }
    }

    /// Same as ``decode(type:schemaVersion:data:)`` for the text form the database hands back.
    public static func decode(type: String, schemaVersion: Int32, json: String) throws(EventCodingError) -> DomainEvent {
        try decode(type: type, schemaVersion: schemaVersion, data: Data(json.utf8))
    }

    /// Decodes a committed row.
    public static func decode(_ recorded: RecordedEvent) throws(EventCodingError) -> DomainEvent {
        try decode(type: recorded.type, schemaVersion: recorded.schemaVersion, json: recorded.data)
    }

    private struct Entry: Sendable {
        var version: Int32
        var decode: @Sendable (Data) throws -> DomainEvent
    }

    private static func entry<P: LedgerEventPayload>(_: P.Type, _ wrap: @escaping @Sendable (P) -> DomainEvent) -> (String, Entry) {
        (P.eventType, Entry(version: P.schemaVersion, decode: { data in wrap(try JSONDecoder().decode(P.self, from: data)) }))
    }

    private static let decoders: [String: Entry] = Dictionary(uniqueKeysWithValues: [
        entry(ProductListed.self) { .product(.listed($0)) },
        entry(ProductPriceChanged.self) { .product(.priceChanged($0)) },
        entry(StockReceived.self) { .product(.stockReceived($0)) },
        entry(StockReserved.self) { .product(.stockReserved($0)) },
        entry(ReservationReleased.self) { .product(.reservationReleased($0)) },
        entry(StockSold.self) { .product(.stockSold($0)) },
        entry(ShippingMethodListed.self) { .shippingMethod(.listed($0)) },
        entry(ShippingMethodPriceChanged.self) { .shippingMethod(.priceChanged($0)) },
        entry(OrderOpened.self) { .order(.opened($0)) },
        entry(OrderAuthorized.self) { .order(.authorized($0)) },
        entry(PaymentDeclined.self) { .order(.paymentDeclined($0)) },
        entry(PaymentOutcomeUnknown.self) { .order(.paymentOutcomeUnknown($0)) },
        entry(OrderCancelled.self) { .order(.cancelled($0)) },
        entry(OrderPaymentUpdated.self) { .order(.paymentUpdated($0)) },
        entry(OrderShipped.self) { .order(.shipped($0)) },
        entry(AuthorizationHoldPlaced.self) { .hold(.placed($0)) },
        entry(HoldIncremented.self) { .hold(.incremented($0)) },
        entry(HoldCaptured.self) { .hold(.captured($0)) },
        entry(HoldReversed.self) { .hold(.reversed($0)) },
        entry(HoldExpired.self) { .hold(.expired($0)) },
        entry(HoldRefunded.self) { .hold(.refunded($0)) },
    ])

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// Why an event could not be encoded or decoded. A struct with a code (the ServiceRunnerError
/// pattern) so the database layer can map it in one place.
public struct EventCodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Hashable, Sendable {
        /// No event type of that name is known to this build.
        case unknownType
        /// The type is known, but not at that schema version.
        case unsupportedSchemaVersion
        /// The JSON does not decode to the type's payload.
        case invalidPayload
        case encodingFailed
    }

    public let code: Code
    public let type: String
    public let message: String

    public init(_ code: Code, type: String, _ message: String) {
        self.code = code
        self.type = type
        self.message = message
    }

    public var description: String { "EventCodingError.\(code.rawValue) [\(type)]: \(message)" }
}

// MARK: - Appends

/// Events for one stream, with the version the decider saw, to be appended together.
public struct PlannedAppend: Hashable, Sendable {
    public var streamID: StreamID
    public var expectedVersion: ExpectedVersion
    public var events: [DomainEvent]

    public init(streamID: StreamID, expectedVersion: ExpectedVersion, events: [DomainEvent]) {
        self.streamID = streamID
        self.expectedVersion = expectedVersion
        self.events = events
    }

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
