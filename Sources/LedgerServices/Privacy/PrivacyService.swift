import Foundation
import LedgerCore
import LedgerEngine
import LedgerMacros
import Logging

/// Erasure of shipping contacts (personal data) on a data subject's request, without touching the
/// hash-chained log.
///
/// The contact's name, e-mail and address never enter the log: they live in
/// `ledger.shipping_contacts`, and the order's events carry only an opaque `contact_ref`. An
/// erasure (1) appends `ContactErased` on the stream `privacy-<contact ref>` — the reference,
/// the orders that used it and the time, nothing personal — and then (2) deletes the row. In that
/// order: a crash between the two leaves the event, and a retry finds the row, sees the event
/// (its stream exists) and finishes the delete; the reverse order could lose the record. The chain
/// is untouched, so it still verifies, and every money event stays as it was.
///
/// Deleting the row removes it from what any query can read. The bytes may linger in dead tuples
/// until VACUUM, in WAL and in backups for their retention period; crypto-shredding (a
/// per-customer key destroyed on erasure) would bound that, and is the way to go if backups must
/// forget too.
public struct PrivacyService: Sendable {
    /// On PostgreSQL: `ContactsStore` and the event store (LedgerApp builds it so, `PrivacyService(client:…)`).
    package init(
        contacts: any ContactBook,
        writer: LedgerWriter,
        store: any StreamReads,
        clock: @escaping @Sendable () -> Date,
        logger: Logger
    ) {
        self.contacts = contacts
        self.writer = writer
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    let contacts: any ContactBook
    let writer: LedgerWriter
    let store: any StreamReads
    let clock: @Sendable () -> Date
    let logger: Logger

    /// One erased contact.
    @MemberwiseInit
    public struct Erasure: Sendable, Hashable {
        public let contactRef: String
        /// The orders opened with the contact, oldest first.
        public let orderIDs: [String]
        /// The position of its `ContactErased` event.
        public let position: Int64
    }

    /// Erases every contact that `customer` names: an e-mail address (case-insensitive) or a
    /// contact reference. Returns what was erased (empty when nothing matches).
    public func eraseContacts(customer: String, actor: String, reason: String = "data_subject_request") async throws -> [Erasure] {
        var erased: [Erasure] = []
        for ref in try await contacts.refs(naming: customer) { erased.append(try await erase(contactRef: ref, actor: actor, reason: reason)) }
        return erased
    }

    func erase(contactRef ref: String, actor: String, reason: String) async throws -> Erasure {
        guard let stream = ContactErased.stream(for: ref) else { throw ServiceError.internalFailure }
        let orders = try await contacts.orderIDs(usingContact: ref)
        let now = clock()
        let event = ContactErased(contactRef: ref, orderIDs: orders, erasedAt: now, reason: reason)
        // An earlier erasure recorded it and stopped before the delete (its stream exists): nothing appended, finish it.
        let record = StreamCommand<Int64?>(
            stream: stream,
            now: now,
            metadata: EventMetadata(correlationID: writer.ids.nextString(), actor: actor, command: "EraseContact")
        ) { recorded in
            if let earlier = recorded.first { return .nothing(earlier.position) }
            return .append([event], nil)
        }
        let recorded = try await AggregateStore(writer: writer, store: store, cacheLimit: 1).run(record)
        let position = recorded.signal ?? recorded.result?.firstPosition ?? 0
        try await contacts.erase(ref: ref)
        logger.info("shipping contact erased", metadata: ["contact_ref": "\(ref)", "position": "\(position)"])
        return Erasure(contactRef: ref, orderIDs: orders, position: position)
    }

    /// Erases, on the data subject's request, every contact the customer identifier matches; returns
    /// what was erased (empty when nothing matches).
    public func erase(customer: String, actor: String) async throws -> [Erasure] {
        try await eraseContacts(customer: customer, actor: actor)
    }

    /// The orders whose shipping contact has the e-mail address `email` (case-insensitive), oldest first, at most
    /// `limit`; none once the contact is erased. Personal data: an operator's search only.
    public func orderIDs(withEmail email: String, limit: Int) async throws -> [String] {
        try await contacts.refs(withEmail: email, limit: limit).compactMap { OrderID(contactReference: $0)?.rawValue }
    }

    /// The order's shipping contact, or nil for an unknown order.
    public func contact(orderID raw: String) async throws -> ContactAnswer? {
        guard let id = OrderID(raw), let opened = try await store.readStream(id.streamID).first,
            case .order(.opened(let order)) = try DomainEvent.decode(opened)
        else { return nil }
        let ref = order.contactRef
        if let json = try await contacts.contactJSON(ref: ref) { return .present(contactRef: ref, json: json) }
        if let stream = ContactErased.stream(for: ref), let erasure = try await store.readStream(stream).first {
            return .erased(contactRef: ref, erasedAt: RFC3339.format(erasure.effectiveAtMicros), position: erasure.position)
        }
        return .missing(contactRef: ref)
    }
}
