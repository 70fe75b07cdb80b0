import struct Foundation.Data

/// Every event type the ledger writes, in one table: its `type` name, schema versions, payload type, the
/// aggregate or stream family that folds it, and how it decodes. ``DomainEvent``, ``SettlementEvent``,
/// ``LedgerEvent`` and `NewEvent(payload:)` all encode and decode through it; nothing else keeps a list of
/// event types.
///
/// ## The wire form of an event
///
/// - **JSON**: the payload's `Codable` form through ``LedgerJSON`` (compact, sorted keys, slashes not
///   escaped), so equal payloads are byte-identical: the bytes are hashed into the chain
///   (``CanonicalEventLayout``) and become the idempotency request hash. Keys are snake_case, spelled out
///   in each payload's `CodingKeys`.
/// - **Times**: RFC 3339 in UTC with exactly six fraction digits and `Z`, `2026-06-17T10:00:00.250000Z`
///   (``LedgerTimestamp`` over ``RFC3339``, the one implementation); payloads refuse any other form.
/// - **Money**: `{"amount": "59.00", "currency": "USD"}`, the amount a decimal string with exactly the
///   currency's fraction digits (``Money/decimalString``, through ``DecimalMoney``), never a JSON number;
///   rates are decimal strings too (``DecimalRate``, `"0.08"`).
/// - **Hex** (digests, hashes, keys): lower case (``Hex``).
///
/// ## Schema versions
///
/// Each payload names the version it writes (``LedgerEventPayload/schemaVersion``), stored in the
/// `schema_version` column. A change of payload shape gets a new version; the entry then lists the old
/// versions its `Decodable` still reads (``Entry/readableSchemaVersions``, e.g. `SettlementBatchClosed`
/// reads 1 and writes 2). Decoding any other version is ``EventCodingError/Code/unsupportedSchemaVersion``.
/// A type name is never reused or renamed.
///
/// ## Adding an event type
///
/// Add a payload conforming to ``LedgerEventPayload``, a case to ``EventKind`` (the payload's
/// `eventKind`), its entry in the switch below (the compiler insists), a case in the enum that carries it
/// (``DomainEvent``, ``SettlementEvent`` or ``LedgerEvent``), and a sample in the catalogue's tests (which
/// fail until there is one).
public enum EventCatalogue {
    /// One event type.
    public struct Entry: Sendable {
        /// The type's case in ``EventKind``.
        public let kind: EventKind
        /// The `type` column, e.g. `OrderOpened`.
        public let type: String
        /// The version written now.
        public let schemaVersion: Int32
        /// Every version the payload's `Decodable` reads, oldest first; the last is ``schemaVersion``.
        public let readableSchemaVersions: [Int32]
        /// The aggregate or stream family that folds it.
        public let category: EventCategory
        /// The prefix of its streams' ids, before the first `-` (e.g. `order` for `order-42`), or the whole
        /// id of a single stream (`checkpoints`).
        public let streamCategory: String
        /// The Swift type of its payload.
        public let payloadType: any LedgerEventPayload.Type
        fileprivate let decodeEvent: @Sendable (Data) throws -> LedgerEvent

        /// Decodes a stored payload of this type. An unreadable schema version and malformed JSON are typed errors.
        public func decode(schemaVersion: Int32, data: Data) throws(EventCodingError) -> LedgerEvent {
            guard readableSchemaVersions.contains(schemaVersion) else {
                throw EventCodingError(.unsupportedSchemaVersion, type: type, "schema version \(schemaVersion)")
            }
            do { return try decodeEvent(data) } catch {
                throw EventCodingError(.invalidPayload, type: type, String(describing: error))
            }
        }
    }

    /// Every entry, in ``EventKind`` order.
    public static let entries: [Entry] = EventKind.allCases.map(makeEntry)

    // Duplicates keep the first entry; the catalogue's tests check that there are none.
    private static let byKind = Dictionary(entries.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
    private static let byType = Dictionary(entries.map { ($0.type, $0) }, uniquingKeysWith: { first, _ in first })

    /// The entry of a kind.
    public static func entry(_ kind: EventKind) -> Entry {
        // `entries` holds one entry for each of `EventKind.allCases`.
        byKind[kind]!
    }

    /// The entry of a `type` name; nil for a name this build does not know.
    public static func entry(forType type: String) -> Entry? { byType[type] }

    /// The entry registered for a payload type. A payload whose ``LedgerEventPayload/eventKind`` names
    /// another type's entry is a programming error, reported as ``EventCodingError/Code/unknownType``.
    public static func registration<Payload: LedgerEventPayload>(of _: Payload.Type) throws(EventCodingError) -> Entry {
        let entry = entry(Payload.eventKind)
        guard ObjectIdentifier(entry.payloadType) == ObjectIdentifier(Payload.self) else {
            throw EventCodingError(
                .unknownType,
                type: Payload.eventType,
                "\(Payload.self) is not registered: its kind \(Payload.eventKind) is the entry of \(entry.payloadType)"
            )
        }
        return entry
    }

    /// A registered payload's JSON, in the one ``LedgerJSON`` form.
    public static func encode<Payload: LedgerEventPayload>(_ payload: Payload) throws(EventCodingError) -> Data {
        _ = try registration(of: Payload.self)
        do { return try LedgerJSON.encode(payload) } catch {
            throw EventCodingError(.encodingFailed, type: Payload.eventType, String(describing: error))
        }
    }

    /// Decodes a stored event of any registered type.
    public static func decode(type: String, schemaVersion: Int32, data: Data) throws(EventCodingError) -> LedgerEvent {
        guard let entry = byType[type] else { throw EventCodingError(.unknownType, type: type, "unknown event type") }
        return try entry.decode(schemaVersion: schemaVersion, data: data)
    }

    private static func entry<Payload: LedgerEventPayload>(
        _ kind: EventKind,
        _: Payload.Type,
        _ category: EventCategory,
        stream: String? = nil,
        alsoReads older: [Int32] = [],
        _ wrap: @escaping @Sendable (Payload) -> LedgerEvent
    ) -> Entry {
        Entry(
            kind: kind,
            type: Payload.eventType,
            schemaVersion: Payload.schemaVersion,
            readableSchemaVersions: older + [Payload.schemaVersion],
            category: category,
            streamCategory: stream ?? category.streamCategory,
            payloadType: Payload.self,
            decodeEvent: { data in wrap(try LedgerJSON.decode(Payload.self, from: data)) }
        )
    }

    /// The table. An exhaustive switch: a kind without an entry does not compile.
    private static func makeEntry(_ kind: EventKind) -> Entry {
        switch kind {
        // Products: `product-<id>`, folded into `ProductState`.
        case .productListed: entry(kind, ProductListed.self, .product) { .domain(.product(.listed($0))) }
        case .productPriceChanged: entry(kind, ProductPriceChanged.self, .product) { .domain(.product(.priceChanged($0))) }
        case .stockReceived: entry(kind, StockReceived.self, .product) { .domain(.product(.stockReceived($0))) }
        case .stockReserved: entry(kind, StockReserved.self, .product) { .domain(.product(.stockReserved($0))) }
        case .reservationReleased:
            entry(kind, ReservationReleased.self, .product) { .domain(.product(.reservationReleased($0))) }
        case .stockSold: entry(kind, StockSold.self, .product) { .domain(.product(.stockSold($0))) }
        // Shipping methods: `shipping_method-<id>`.
        case .shippingMethodListed:
            entry(kind, ShippingMethodListed.self, .shippingMethod) { .domain(.shippingMethod(.listed($0))) }
        case .shippingMethodPriceChanged:
            entry(kind, ShippingMethodPriceChanged.self, .shippingMethod) { .domain(.shippingMethod(.priceChanged($0))) }
        // Orders: `order-<id>`.
        case .orderOpened: entry(kind, OrderOpened.self, .order) { .domain(.order(.opened($0))) }
        case .orderAuthorized: entry(kind, OrderAuthorized.self, .order) { .domain(.order(.authorized($0))) }
        case .paymentDeclined: entry(kind, PaymentDeclined.self, .order) { .domain(.order(.paymentDeclined($0))) }
        case .paymentOutcomeUnknown:
            entry(kind, PaymentOutcomeUnknown.self, .order) { .domain(.order(.paymentOutcomeUnknown($0))) }
        case .orderCancelled: entry(kind, OrderCancelled.self, .order) { .domain(.order(.cancelled($0))) }
        case .orderPaymentUpdated: entry(kind, OrderPaymentUpdated.self, .order) { .domain(.order(.paymentUpdated($0))) }
        case .orderShipped: entry(kind, OrderShipped.self, .order) { .domain(.order(.shipped($0))) }
        // Authorization holds: `hold-<order id>`.
        case .authorizationHoldPlaced: entry(kind, AuthorizationHoldPlaced.self, .hold) { .domain(.hold(.placed($0))) }
        case .holdIncremented: entry(kind, HoldIncremented.self, .hold) { .domain(.hold(.incremented($0))) }
        case .holdCaptured: entry(kind, HoldCaptured.self, .hold) { .domain(.hold(.captured($0))) }
        case .holdReversed: entry(kind, HoldReversed.self, .hold) { .domain(.hold(.reversed($0))) }
        case .holdExpired: entry(kind, HoldExpired.self, .hold) { .domain(.hold(.expired($0))) }
        case .holdRefunded: entry(kind, HoldRefunded.self, .hold) { .domain(.hold(.refunded($0))) }
        // Settlement batches: `settlement-<batch id>`.
        case .settlementBatchOpened: entry(kind, SettlementBatchOpened.self, .settlementBatch) { .settlement(.opened($0)) }
        case .settlementBatchClosed:
            entry(kind, SettlementBatchClosed.self, .settlementBatch, alsoReads: [1]) { .settlement(.closed($0)) }
        case .settlementBatchSubmitted:
            entry(kind, SettlementBatchSubmitted.self, .settlementBatch) { .settlement(.submitted($0)) }
        case .settlementBatchCleared: entry(kind, SettlementBatchCleared.self, .settlementBatch) { .settlement(.cleared($0)) }
        case .settlementPayoutScheduled:
            entry(kind, SettlementPayoutScheduled.self, .settlementBatch) { .settlement(.payoutScheduled($0)) }
        case .settlementPayoutPaid: entry(kind, SettlementPayoutPaid.self, .settlementBatch) { .settlement(.paid($0)) }
        // Reconciliation: `reconciliation-<batch id>`.
        case .reconciliationRecorded:
            entry(kind, ReconciliationRecorded.self, .reconciliation, alsoReads: [1]) { .settlement(.reconciled($0)) }
        case .reconciliationBreakFound:
            entry(kind, ReconciliationBreakFound.self, .reconciliation) { .settlement(.breakFound($0)) }
        case .reconciliationBreakResolved:
            entry(kind, ReconciliationBreakResolved.self, .reconciliation) { .settlement(.breakResolved($0)) }
        // Disputes: `dispute-<id>`, folded into `DisputeState`.
        case .disputeInquiryRaised: entry(kind, DisputeInquiryRaised.self, .dispute) { .dispute(.inquiryRaised($0)) }
        case .chargebackReceived: entry(kind, ChargebackReceived.self, .dispute) { .dispute(.chargeback($0)) }
        case .disputeDefenseSubmitted: entry(kind, DisputeDefenseSubmitted.self, .dispute) { .dispute(.defenseSubmitted($0)) }
        case .disputeSecondPresentment: entry(kind, DisputeSecondPresentment.self, .dispute) { .dispute(.secondPresentment($0)) }
        case .chargebackReversed: entry(kind, ChargebackReversed.self, .dispute) { .dispute(.reversed($0)) }
        case .disputePreArbitrationOpened:
            entry(kind, DisputePreArbitrationOpened.self, .dispute) { .dispute(.preArbitration($0)) }
        case .secondChargebackReceived: entry(kind, SecondChargebackReceived.self, .dispute) { .dispute(.secondChargeback($0)) }
        case .disputeClosed: entry(kind, DisputeClosed.self, .dispute) { .dispute(.closed($0)) }
        // Apple Pay markers: `applepay-<digest>`, `applepay_rejected-<digest>`.
        case .applePayTokenAccepted:
            entry(kind, ApplePayTokenAccepted.self, .applePayMarker) { .applePayTokenAccepted($0) }
        case .applePayTokenRejected:
            entry(kind, ApplePayTokenRejected.self, .applePayMarker, stream: "applepay_rejected") { .applePayTokenRejected($0) }
        // Checkpoints: the one stream `checkpoints`.
        case .checkpointSigned: entry(kind, CheckpointSigned.self, .checkpoint) { .checkpointSigned($0) }
        // Privacy: `privacy-<contact ref>`.
        case .contactErased: entry(kind, ContactErased.self, .privacy) { .contactErased($0) }
        // Bank statements: `bank_statement-<key>`, one stream per statement (account, id, sequence).
        case .bankStatementReceived: entry(kind, BankStatementReceived.self, .bankStatement) { .bankStatementReceived($0) }
        case .bankEntryBooked: entry(kind, BankEntryBooked.self, .bankStatement) { .bankEntryBooked($0) }
        // Payouts matched to the bank's deposits: the one stream `bank_matching-payouts`.
        case .bankPayoutMatched: entry(kind, BankPayoutMatched.self, .bankMatching) { .bankPayoutMatched($0) }
        case .bankBreakFound: entry(kind, BankBreakFound.self, .bankMatching) { .bankBreakFound($0) }
        case .bankBreakResolved: entry(kind, BankBreakResolved.self, .bankMatching) { .bankBreakResolved($0) }
        }
    }
}

/// One case per event type of the ``EventCatalogue`` (named after the type: `OrderOpened` is
/// ``orderOpened``). `CaseIterable`, so the catalogue and its tests can enumerate every type.
public enum EventKind: CaseIterable, Hashable, Sendable {
    case productListed, productPriceChanged, stockReceived, stockReserved, reservationReleased, stockSold
    case shippingMethodListed, shippingMethodPriceChanged
    case orderOpened, orderAuthorized, paymentDeclined, paymentOutcomeUnknown, orderCancelled, orderPaymentUpdated, orderShipped
    case authorizationHoldPlaced, holdIncremented, holdCaptured, holdReversed, holdExpired, holdRefunded
    case settlementBatchOpened, settlementBatchClosed, settlementBatchSubmitted, settlementBatchCleared
    case settlementPayoutScheduled, settlementPayoutPaid
    case reconciliationRecorded, reconciliationBreakFound, reconciliationBreakResolved
    case disputeInquiryRaised, chargebackReceived, disputeDefenseSubmitted, disputeSecondPresentment, chargebackReversed
    case disputePreArbitrationOpened, secondChargebackReceived, disputeClosed
    case applePayTokenAccepted, applePayTokenRejected
    case checkpointSigned
    case contactErased
    case bankStatementReceived, bankEntryBooked
    case bankPayoutMatched, bankBreakFound, bankBreakResolved

    /// The kind's catalogue entry.
    public var entry: EventCatalogue.Entry { EventCatalogue.entry(self) }
}

/// The aggregate or stream family that folds an event type.
public enum EventCategory: String, CaseIterable, Hashable, Sendable {
    /// A product's stock and price (`ProductState`).
    case product
    /// A shipping method's price (`ShippingMethodState`).
    case shippingMethod = "shipping_method"
    /// An order (`OrderState`).
    case order
    /// An order's authorization hold (`HoldState`).
    case hold
    /// A settlement batch (`SettlementBatchState`).
    case settlementBatch = "settlement_batch"
    /// A batch's reconciliation results and break resolutions.
    case reconciliation
    /// A dispute (`DisputeState`): inquiry, chargeback, defense, …, its close.
    case dispute
    /// Single-use markers and audit traces of Apple Pay tokens; no aggregate folds them.
    case applePayMarker = "apple_pay_marker"
    /// Signed checkpoints of the chain.
    case checkpoint
    /// Erasures of personal data kept outside the log.
    case privacy
    /// Bank statements and their entries (issue 53), one stream per statement.
    case bankStatement = "bank_statement"
    /// Payouts matched to the bank's deposits, their breaks and resolutions (issue 53).
    case bankMatching = "bank_matching"

    /// The Swift enum that carries the category's events.
    public var family: EventFamily {
        switch self {
        case .product, .shippingMethod, .order, .hold: .domain
        case .settlementBatch, .reconciliation: .settlement
        case .dispute: .dispute
        case .applePayMarker, .checkpoint, .privacy, .bankStatement, .bankMatching: .standalone
        }
    }

    /// The usual prefix of the category's stream ids (an entry may name another, see
    /// ``EventCatalogue/Entry/streamCategory``).
    public var streamCategory: String {
        switch self {
        case .product: ProductID.streamCategory
        case .shippingMethod: ShippingMethodID.streamCategory
        case .order: OrderID.streamCategory
        case .hold: "hold"
        case .settlementBatch: "settlement"
        case .reconciliation: "reconciliation"
        case .dispute: "dispute"
        case .applePayMarker: "applepay"
        case .checkpoint: CheckpointSigned.stream.rawValue
        case .privacy: "privacy"
        case .bankStatement: "bank_statement"
        case .bankMatching: "bank_matching"
        }
    }
}

/// Which Swift enum carries an event: what decoding a row of that type yields.
public enum EventFamily: String, CaseIterable, Hashable, Sendable {
    /// ``DomainEvent``: what the deciders emit and the projections and replays fold.
    case domain
    /// ``SettlementEvent``: settlement batches and their reconciliation.
    case settlement
    /// ``DisputeEvent``: a dispute's lifecycle.
    case dispute
    /// Its own case of ``LedgerEvent``; replays of the domain skip it.
    case standalone
}
