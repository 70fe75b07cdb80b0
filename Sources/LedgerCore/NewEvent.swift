import struct Foundation.Data
import struct Foundation.Date
import class Foundation.JSONEncoder
import struct Foundation.UUID

/// An event about to be appended: its identity, type, schema version and JSON payload.
///
/// Position, stream version, recorded time and hashes are assigned by the ledger when it commits.
public struct NewEvent: Sendable, Hashable {
    public var eventID: UUID
    public var type: String
    public var schemaVersion: Int32
    /// The payload as JSON text (an object). Stored as jsonb.
    public var data: String
    /// Business time of the fact; the ledger's commit time is recorded separately.
    public var effectiveAt: Date

    public init(eventID: UUID = UUID(), type: String, schemaVersion: Int32 = 1, data: String, effectiveAt: Date) {
        self.eventID = eventID
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = data
        self.effectiveAt = effectiveAt
    }

    /// Encodes a typed payload with sorted keys, so equal payloads give equal request hashes.
    public init<Payload: Encodable>(
        eventID: UUID = UUID(), type: String, schemaVersion: Int32 = 1, payload: Payload, effectiveAt: Date
    ) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = try encoder.encode(payload)
        self.init(
            eventID: eventID, type: type, schemaVersion: schemaVersion,
            data: String(decoding: json, as: UTF8.self), effectiveAt: effectiveAt)
    }
}
