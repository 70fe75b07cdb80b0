import LedgerMacros

import struct Foundation.Data
import struct Foundation.Date
import struct Foundation.UUID

/// An event about to be appended: its identity, type, schema version and JSON payload.
///
/// Position, stream version, recorded time and hashes are assigned by the ledger when it commits.
/// Ledger code builds it from a typed payload (``init(eventID:type:schemaVersion:payload:effectiveAt:)``,
/// ``DomainEvent/newEvent(eventID:effectiveAt:)``, …), which goes through the ``EventCatalogue``; the
/// raw ``init(eventID:type:schemaVersion:data:effectiveAt:)`` is for fixtures and benchmarks whose events
/// are not the ledger's.
@MemberwiseInit
public struct NewEvent: Sendable, Hashable {
    public var eventID: UUID = UUID.newTimeOrdered()
    public var type: String
    public var schemaVersion: Int32 = 1
    /// The payload as JSON text (an object). Stored as jsonb.
    public var data: String
    /// Business time of the fact; the ledger's commit time is recorded separately.
    public var effectiveAt: Date

    /// Encodes a payload registered in the ``EventCatalogue``, in the one ``LedgerJSON`` form (sorted keys,
    /// so equal payloads give equal request hashes), with the type and schema version of its entry.
    ///
    /// `type` and `schemaVersion`, when given, must be the entry's (they let call sites spell out what they
    /// write). A payload the catalogue does not register, or a different type or version, is a programming
    /// error reported as ``EventCodingError/Code/unknownType``: nothing unregistered reaches the log this way.
    public init<Payload: LedgerEventPayload>(
        eventID: UUID = UUID.newTimeOrdered(),
        type: String? = nil,
        schemaVersion: Int32? = nil,
        payload: Payload,
        effectiveAt: Date
    ) throws(EventCodingError) {
        let entry = try EventCatalogue.registration(of: Payload.self)
        guard (type ?? entry.type) == entry.type, (schemaVersion ?? entry.schemaVersion) == entry.schemaVersion else {
            throw EventCodingError(
                .unknownType,
                type: type ?? entry.type,
                "\(Payload.self) is registered as \(entry.type) version \(entry.schemaVersion), "
                    + "not \(type ?? entry.type) version \(schemaVersion ?? entry.schemaVersion)"
            )
        }
        let json = try EventCatalogue.encode(payload)
        self.init(
            eventID: eventID,
            type: entry.type,
            schemaVersion: entry.schemaVersion,
            data: String(decoding: json, as: UTF8.self),
            effectiveAt: effectiveAt
        )
    }
}
