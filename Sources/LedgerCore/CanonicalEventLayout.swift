import struct Foundation.UUID

/// The canonical byte layout of an event that the hash chain covers (layout version 1).
///
/// `hash = SHA-256(prev_hash ‖ canonicalBytes(event))`. The same layout is implemented in SQL by
/// `ledger.event_hash` (sql/0017_chain_stored_text.sql), so an auditor can recompute the chain with
/// psql alone; the two implementations are checked against each other in the tests.
///
/// All integers are big-endian; `z(x)` is x's UTF-8 bytes followed by one 0x00 byte, which is
/// unambiguous because PostgreSQL text never contains NUL (JSON text escapes it as `\u0000`):
///
///     0x01 ‖ int8(position) ‖ z(stream_id) ‖ int8(stream_version) ‖ uuid(event_id)
///     ‖ z(type) ‖ int4(schema_version) ‖ z(data_text) ‖ z(metadata_text)
///     ‖ int8(effective_at µs since epoch) ‖ int8(recorded_at µs since epoch)
public enum CanonicalEventLayout {
    public static let version: UInt8 = 1
    /// The `prev_hash` of position 1.
    public static let genesisHash = [UInt8](repeating: 0, count: 32)

    public static func canonicalBytes(of event: RecordedEvent) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(
            96 + event.streamID.rawValue.utf8.count + event.type.utf8.count
                + event.data.utf8.count + event.metadata.utf8.count
        )
        write(
            position: event.position,
            streamID: event.streamID.rawValue,
            streamVersion: event.streamVersion,
            eventID: event.eventID,
            type: event.type,
            schemaVersion: event.schemaVersion,
            data: event.data,
            metadata: event.metadata,
            effectiveAtMicros: event.effectiveAtMicros,
            recordedAtMicros: event.recordedAtMicros
        ) { out.append(contentsOf: $0) }
        return out
    }

    /// The layout of an event given as strings (the writer's, before it is stored; a recorded event's),
    /// handed to `sink` piece by piece through ``write(position:streamID:streamVersion:eventID:type:schemaVersion:data:metadata:effectiveAtMicros:recordedAtMicros:to:)``.
    public static func write(
        position: Int64,
        streamID: String,
        streamVersion: Int64,
        eventID: UUID,
        type: String,
        schemaVersion: Int32,
        data: String,
        metadata: String,
        effectiveAtMicros: Int64,
        recordedAtMicros: Int64,
        to sink: (UnsafeRawBufferPointer) -> Void
    ) {
        var (stream, type, data, metadata) = (streamID, type, data, metadata)
        withUnsafeBytes(of: eventID.uuid) { id in
            stream.withUTF8 { stream in
                type.withUTF8 { type in
                    data.withUTF8 { data in
                        metadata.withUTF8 { metadata in
                            write(
                                position: position,
                                streamID: UnsafeRawBufferPointer(stream),
                                streamVersion: streamVersion,
                                eventID: id,
                                type: UnsafeRawBufferPointer(type),
                                schemaVersion: schemaVersion,
                                data: UnsafeRawBufferPointer(data),
                                metadata: UnsafeRawBufferPointer(metadata),
                                effectiveAtMicros: effectiveAtMicros,
                                recordedAtMicros: recordedAtMicros,
                                to: sink
                            )
                        }
                    }
                }
            }
        }
    }

    /// The layout, handed to `sink` piece by piece (text fields without their terminator, which this
    /// adds): the one definition of the layout, shared by ``canonicalBytes(of:)`` and by the chain
    /// verifier, which feeds the wire bytes of a row straight into SHA-256 without building events.
    /// `eventID` is the UUID's 16 bytes; text fields are UTF-8.
    @inlinable
    public static func write(
        position: Int64,
        streamID: UnsafeRawBufferPointer,
        streamVersion: Int64,
        eventID: UnsafeRawBufferPointer,
        type: UnsafeRawBufferPointer,
        schemaVersion: Int32,
        data: UnsafeRawBufferPointer,
        metadata: UnsafeRawBufferPointer,
        effectiveAtMicros: Int64,
        recordedAtMicros: Int64,
        to sink: (UnsafeRawBufferPointer) -> Void
    ) {
        withUnsafeBytes(of: version) { sink($0) }
        withUnsafeBytes(of: position.bigEndian) { sink($0) }
        sink(streamID)
        withUnsafeBytes(of: UInt8(0)) { sink($0) }
        withUnsafeBytes(of: streamVersion.bigEndian) { sink($0) }
        sink(eventID)
        sink(type)
        withUnsafeBytes(of: UInt8(0)) { sink($0) }
        withUnsafeBytes(of: schemaVersion.bigEndian) { sink($0) }
        sink(data)
        withUnsafeBytes(of: UInt8(0)) { sink($0) }
        sink(metadata)
        withUnsafeBytes(of: UInt8(0)) { sink($0) }
        withUnsafeBytes(of: effectiveAtMicros.bigEndian) { sink($0) }
        withUnsafeBytes(of: recordedAtMicros.bigEndian) { sink($0) }
    }

    /// The bytes the SHA-256 of a chain link is taken over: previous hash, then the layout.
    public static func hashInput(prevHash: [UInt8], event: RecordedEvent) -> [UInt8] {
        prevHash + canonicalBytes(of: event)
    }
}
