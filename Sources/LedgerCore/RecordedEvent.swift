import LedgerMacros

import struct Foundation.Date
import typealias Foundation.TimeInterval
import struct Foundation.UUID

/// An event as the ledger holds it: a row of `ledger.events`.
///
/// `data` and `metadata` are the JSON texts stored with the event (`data_text`, `metadata_text`,
/// sql/0017), byte for byte what the hash covers; the jsonb columns are their parse.
/// Times are kept as microseconds since the Unix epoch, the unit the hash covers, so that no
/// conversion through binary floating point can change a verified value.
@MemberwiseInit
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
