import struct Foundation.Date
import typealias Foundation.TimeInterval
import struct Foundation.UUID

/// An event as the ledger holds it: a row of `ledger.events`.
///
/// `data` and `metadata` are PostgreSQL's canonical jsonb text, which is what the hash covers.
/// Times are kept as microseconds since the Unix epoch, the unit the hash covers, so that no
/// conversion through binary floating point can change a verified value.
public struct RecordedEvent: Sendable, Hashable {
    public var position: Int64
    public var streamID: StreamID
    public var streamVersion: Int64
    public var eventID: UUID
    public var type: String
    public var schemaVersion: Int32
    public var data: String
    public var metadata: String
    public var effectiveAtMicros: Int64
    public var recordedAtMicros: Int64
    public var prevHash: [UInt8]
    public var hash: [UInt8]

    public init(
        position: Int64,
        streamID: StreamID,
        streamVersion: Int64,
        eventID: UUID,
        type: String,
        schemaVersion: Int32,
        data: String,
        metadata: String,
        effectiveAtMicros: Int64,
        recordedAtMicros: Int64,
        prevHash: [UInt8],
        hash: [UInt8]
    ) {
        self.position = position
        self.streamID = streamID
        self.streamVersion = streamVersion
        self.eventID = eventID
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = data
        self.metadata = metadata
        self.effectiveAtMicros = effectiveAtMicros
        self.recordedAtMicros = recordedAtMicros
        self.prevHash = prevHash
        self.hash = hash
    }

    public var effectiveAt: Date { Date(epochMicroseconds: effectiveAtMicros) }
    public var recordedAt: Date { Date(epochMicroseconds: recordedAtMicros) }
}

extension Date {
    /// Whole microseconds since 1970-01-01T00:00:00Z, rounded to the nearest microsecond
    /// (the ledger's time resolution, as in PostgreSQL's timestamptz).
    public var epochMicroseconds: Int64 {
        Int64((timeIntervalSince1970 * 1_000_000).rounded())
    }

    public init(epochMicroseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(epochMicroseconds) / 1_000_000)
    }
}
