import Foundation
import LedgerCore
import Testing

@Suite struct CanonicalEventLayoutTests {
    let event = RecordedEvent(
        position: 258,
        streamID: StreamID("order-é")!,
        streamVersion: 3,
        eventID: UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!,
        type: "OrderPlaced",
        schemaVersion: 2,
        data: #"{"a": 1}"#,
        metadata: "{}",
        effectiveAtMicros: 1_700_000_000_000_001,
        recordedAtMicros: -1,
        prevHash: [],
        hash: []
    )

    @Test func layoutMatchesTheDocumentedBytes() {
        // Written out by hand from the layout in sql/0001_create_event_log.sql.
        let expectedHex =
            "01" + "0000000000000102"  // version, position 258
            + "6f726465722dc3a9" + "00"  // z("order-é"): 8 UTF-8 bytes, NUL
            + "0000000000000003"  // stream version
            + "00112233445566778899aabbccddeeff"  // event id
            + "4f72646572506c61636564" + "00"  // z("OrderPlaced")
            + "00000002"  // schema version
            + "7b2261223a20317d" + "00"  // z(#"{"a": 1}"#)
            + "7b7d" + "00"  // z("{}")
            + "00060a24181e4001"  // 1_700_000_000_000_001 µs
            + "ffffffffffffffff"  // -1 µs
        let hex = CanonicalEventLayout.canonicalBytes(of: event).map { String(format: "%02x", $0) }.joined()
        #expect(hex == expectedHex)
    }

    @Test func hashInputStartsWithThePreviousHash() {
        let prev = [UInt8](repeating: 0xAB, count: 32)
        let input = CanonicalEventLayout.hashInput(prevHash: prev, event: event)
        #expect(Array(input.prefix(32)) == prev)
        #expect(Array(input.dropFirst(32)) == CanonicalEventLayout.canonicalBytes(of: event))
        #expect(CanonicalEventLayout.genesisHash == [UInt8](repeating: 0, count: 32))
    }
}

@Suite struct StreamAndVersionTests {
    @Test func streamIDsAreValidated() {
        #expect(StreamID("") == nil)
        #expect(StreamID(String(repeating: "x", count: 201)) == nil)
        #expect(StreamID(String(repeating: "é", count: 100))?.rawValue.utf8.count == 200)
        #expect(StreamID(String(repeating: "é", count: 101)) == nil)
        #expect(StreamID(category: "order", id: "42").rawValue == "order-42")
    }

    @Test func expectedVersionSemantics() {
        #expect(ExpectedVersion.any.accepts(current: 0) && ExpectedVersion.any.accepts(current: 9))
        #expect(ExpectedVersion.noStream.accepts(current: 0) && !ExpectedVersion.noStream.accepts(current: 1))
        #expect(ExpectedVersion.exact(3).accepts(current: 3) && !ExpectedVersion.exact(3).accepts(current: 4))
    }

    @Test func microsecondsRoundTrip() {
        let micros: Int64 = 1_800_000_000_123_456
        #expect(Date(epochMicroseconds: micros).epochMicroseconds == micros)
    }
}
