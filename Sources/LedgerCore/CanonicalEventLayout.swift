/// The canonical byte layout of an event that the hash chain covers (layout version 1).
///
/// `hash = SHA-256(prev_hash ‖ canonicalBytes(event))`. The same layout is implemented in SQL by
/// `ledger.event_hash` (sql/0001_create_event_log.sql), so an auditor can recompute the chain with
/// psql alone; the two implementations are checked against each other in the tests.
///
/// All integers are big-endian; `z(x)` is x's UTF-8 bytes followed by one 0x00 byte, which is
/// unambiguous because PostgreSQL text never contains NUL (jsonb text escapes it as `\u0000`):
///
///     0x01 ‖ int8(position) ‖ z(stream_id) ‖ int8(stream_version) ‖ uuid(event_id)
///     ‖ z(type) ‖ int4(schema_version) ‖ z(data jsonb text) ‖ z(metadata jsonb text)
///     ‖ int8(effective_at µs since epoch) ‖ int8(recorded_at µs since epoch)
public enum CanonicalEventLayout {
    public static let version: UInt8 = 1
    /// The `prev_hash` of position 1.
    public static let genesisHash = [UInt8](repeating: 0, count: 32)

    public static func canonicalBytes(of event: RecordedEvent) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + event.streamID.rawValue.utf8.count + event.type.utf8.count
            + event.data.utf8.count + event.metadata.utf8.count)
        out.append(version)
        appendInt64(event.position, to: &out)
        appendTerminated(event.streamID.rawValue, to: &out)
        appendInt64(event.streamVersion, to: &out)
        let u = event.eventID.uuid
        out.append(contentsOf: [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15])
        appendTerminated(event.type, to: &out)
        appendInt32(event.schemaVersion, to: &out)
        appendTerminated(event.data, to: &out)
        appendTerminated(event.metadata, to: &out)
        appendInt64(event.effectiveAtMicros, to: &out)
        appendInt64(event.recordedAtMicros, to: &out)
        return out
    }

    /// The bytes the SHA-256 of a chain link is taken over: previous hash, then the layout.
    public static func hashInput(prevHash: [UInt8], event: RecordedEvent) -> [UInt8] {
        prevHash + canonicalBytes(of: event)
    }

    private static func appendInt64(_ value: Int64, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    private static func appendInt32(_ value: Int32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    private static func appendTerminated(_ text: String, to out: inout [UInt8]) {
        out.append(contentsOf: text.utf8)
        out.append(0)
    }
}
